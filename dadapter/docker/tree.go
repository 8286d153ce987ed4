package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
)

// CheckTaskTree is checkTaskTree (#81), the last step before launch. It
// proves, in a helper container locked down like the inspection's (the
// script's mode tree, over the same steps), that the storage's metadata is
// its baseline and that its work tree is a clean copy of head: the change
// manifest InspectTaskChanges would answer is empty, so nothing is
// changed, untracked, ignored, nested, special or named .git, and every
// submodule directory is there and empty. Then it fits each operation to
// head's tree, which the script lists, and answers head's gitlinks, which
// Start mounts empty and read-only.
//
// What cannot fit is refused (ErrTaskTreeRefused, naming what) before
// any container runs: a head that is not the storage's base, whose tree
// the storage cannot be a copy of, and an operation F should never have
// sent (an unknown op, a path that is not clean and relative, or that
// names .git). A check that could not run (the engine failed, the
// listing of head's tree is over maxManifestBytes, ctx ended) is any
// other error: it fails the attempt instead of sending the task to a
// person. Nothing is written to task storage.
func (d *D) CheckTaskTree(ctx context.Context, fs dadapter.TaskFilesystems, head string, ops []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	go func() {
		t, err := d.checkTree(ctx, fs, head, ops, maxManifestBytes)
		if err != nil {
			done(dadapter.TaskTree{}, fmt.Errorf("docker: check the task tree: %w", err))
			return
		}
		done(t, nil)
	}()
}

// checkTree is CheckTaskTree with limit the bound in bytes of what the
// script writes.
func (d *D) checkTree(ctx context.Context, fs dadapter.TaskFilesystems, head string, ops []dadapter.FileOperation, limit int) (dadapter.TaskTree, error) {
	s, err := d.readable(ctx, fs)
	if err != nil {
		return dadapter.TaskTree{}, err
	}
	id := s.owner.AllocationID
	if head != s.base {
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w: head %.80q is not the storage's base %s, so its work tree cannot be a copy of it",
			id, dadapter.ErrTaskTreeRefused, head, s.base)
	}
	for i, op := range ops {
		if err := checkOperation(op); err != nil {
			return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w: operation %d: %w", id, dadapter.ErrTaskTreeRefused, i+1, err)
		}
	}
	out, err := d.runHelper(ctx, s, helperRun{
		kind:        KindTree,
		env:         s.scriptEnv(limit + 1),
		args:        []string{"tree"},
		stdoutLimit: limit + 1,
	})
	if err != nil {
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w", id, err)
	}
	switch out.exitCode {
	case exitMetadataChanged:
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w: %w (baseline %s)", id, dadapter.ErrTaskTreeRefused, ErrMetadataChanged, s.baseline)
	case exitTreeDirty:
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w: the work tree is not a clean copy of the head: %s",
			id, dadapter.ErrTaskTreeRefused, unclean(out, limit))
	}
	if err := scriptFailure(s, out); err != nil {
		return dadapter.TaskTree{}, err
	}
	if out.overflow || len(out.stdout) > limit {
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: the listing of the head's tree is over %d bytes", id, limit)
	}
	tree, err := parseTree(out.stdout)
	if err != nil {
		return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w", id, err)
	}
	for i, op := range ops {
		if err := tree.fit(op); err != nil {
			return dadapter.TaskTree{}, fmt.Errorf("task storage %s: %w: operation %d, a %s: %w", id, dadapter.ErrTaskTreeRefused, i+1, op.Op, err)
		}
	}
	return dadapter.TaskTree{Head: head, Gitlinks: tree.gitlinks()}, nil
}

// maxNamed is how many of an unclean work tree's paths a refusal names:
// enough to see what went wrong, short enough for a finding's line.
const maxNamed = 5

// unclean words what makes the work tree not the head's, from the
// manifest the script wrote: its first few paths, each with what it is. A
// manifest over the bound, or one that does not parse, is still a work
// tree the script found unclean; it is then said without its paths.
func unclean(out helperOutput, limit int) string {
	if out.overflow || len(out.stdout) > limit {
		return fmt.Sprintf("its change manifest is over %d bytes", limit)
	}
	m, err := parseManifest(out.stdout)
	if err != nil {
		return err.Error()
	}
	var named []string
	add := func(what string, paths ...string) {
		for _, p := range paths {
			named = append(named, fmt.Sprintf("%q (%s)", p, what))
		}
	}
	for _, c := range m.Changes {
		what := string(c.Kind)
		if c.Kind == dadapter.ChangeAdded {
			what = "untracked" // the index is the head's: git took a new file as intent-to-add
		}
		add(what, c.Path)
	}
	add("ignored", m.Ignored...)
	add("an untracked nested repository", m.Nested...)
	add("content in a submodule directory", m.GitlinkContent...)
	add("an entry named .git", m.DotGit...)
	add("a fifo or socket", m.Special...)
	add("a path git will not add", m.Refused...)
	if len(named) == 0 {
		return "the script named no path"
	}
	shown := named[:min(len(named), maxNamed)]
	words := strings.Join(shown, ", ")
	switch n := len(named) - len(shown); {
	case m.Cut:
		words += fmt.Sprintf(" and over %d more", n)
	case n > 0:
		words += fmt.Sprintf(" and %d more", n)
	}
	return words
}

// The operations a plan item may declare (plan.FileOp's).
const (
	opCreate = "create"
	opModify = "modify"
	opDelete = "delete"
	opRename = "rename"
)

// checkOperation refuses an operation whose shape no head can fit: the
// plan format refuses these already (plan.checkPath), and D does not trust
// that its input went through it.
func checkOperation(op dadapter.FileOperation) error {
	switch op.Op {
	case opCreate, opModify, opDelete, opRename:
	default:
		return fmt.Errorf("%.40q of %q is not an operation: create, modify, delete or rename", op.Op, op.Path)
	}
	if err := checkTreePath(op.Path); err != nil {
		return fmt.Errorf("a %s of %w", op.Op, err)
	}
	switch {
	case op.Op == opRename:
		if err := checkTreePath(op.To); err != nil {
			return fmt.Errorf("a rename of %q to %w", op.Path, err)
		}
	case op.To != "":
		return fmt.Errorf("a %s of %q has a new path %q: only a rename has one", op.Op, op.Path, op.To)
	}
	return nil
}

// checkTreePath refuses a path that does not name one entry of a work tree
// in git's own spelling: empty, absolute, not clean (a "//", a "." or ".."
// part, a trailing "/"), outside the repository, or inside the metadata
// (a part named .git, in any case). Its error starts with the path.
func checkTreePath(p string) error {
	switch {
	case p == "":
		return errors.New(`"" (an empty path)`)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q: a path with a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: an absolute path; paths are relative to the repository root", p)
	case p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q: not a path inside the repository", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q: not a clean path (%q)", p, path.Clean(p))
	}
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return fmt.Errorf("%q: a path inside Git's metadata (.git)", p)
		}
	}
	return nil
}

// entryKind is what a path is in the head's tree.
type entryKind string

// The kinds of entry, by git's modes; a directory is implied by the
// entries below it (git lists no tree with -r).
const (
	entryFile    entryKind = "a file"
	entryLink    entryKind = "a symbolic link"
	entryGitlink entryKind = "a submodule"
	entryDir     entryKind = "a directory"
)

// entryKinds are the modes git ls-tree -r writes, canonical as git stores
// them, with the object type each goes with.
var entryKinds = map[string]struct {
	kind entryKind
	typ  string
}{
	"100644": {entryFile, "blob"}, "100755": {entryFile, "blob"},
	"120000": {entryLink, "blob"}, "160000": {entryGitlink, "commit"},
}

// headTree is the head's tree, each path's kind by its path.
type headTree map[string]entryKind

// parseTree reads the script's listing of the head's tree (git ls-tree
// -r -z: "MODE TYPE OBJECT\tPATH\0"), every directory it implies included.
// A record it does not know is refused, not skipped: a path left out
// could be one an operation must not touch.
func parseTree(out []byte) (headTree, error) {
	t := headTree{}
	if len(out) == 0 {
		return t, nil
	}
	if out[len(out)-1] != 0 {
		return nil, fmt.Errorf("the listing of the head's tree is cut: %.60q", out[max(0, len(out)-60):])
	}
	for _, rec := range bytes.Split(out[:len(out)-1], []byte{0}) {
		meta, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || p == "" {
			return nil, fmt.Errorf("the listing of the head's tree has a record %.80q the adapter does not read", rec)
		}
		k, known := entryKinds[f[0]]
		if !known || k.typ != f[1] {
			return nil, fmt.Errorf("the head's tree has %q, of mode %.10q and type %.10q, which the adapter does not know", p, f[0], f[1])
		}
		t[p] = k.kind
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if t[dir] != "" {
				break
			}
			t[dir] = entryDir
		}
	}
	return t, nil
}

// fit refuses an operation that does not fit the tree: a create of a path
// that is there (a file, a link, a submodule or a directory), a modify or
// delete of a path that is not a regular file, a rename from one or onto a
// path that is there; and an operation on a path below anything but a
// directory (inside a submodule, through a link, below a file). Each
// operation is fitted to the head alone, not to the others.
func (t headTree) fit(op dadapter.FileOperation) error {
	switch op.Op {
	case opCreate:
		return t.absent(op.Path)
	case opModify, opDelete:
		return t.file(op.Path)
	case opRename:
		if err := t.file(op.Path); err != nil {
			return err
		}
		return t.absent(op.To)
	}
	return fmt.Errorf("%.40q is not an operation", op.Op)
}

// file refuses p unless it is a regular file of the tree.
func (t headTree) file(p string) error {
	if err := t.reachable(p); err != nil {
		return err
	}
	switch k := t[p]; k {
	case entryFile:
		return nil
	case "":
		return fmt.Errorf("%q is not in the head", p)
	default:
		return fmt.Errorf("%q is %s in the head, not a file", p, k)
	}
}

// absent refuses p unless the tree has nothing there.
func (t headTree) absent(p string) error {
	if err := t.reachable(p); err != nil {
		return err
	}
	if k := t[p]; k != "" {
		return fmt.Errorf("%q already exists in the head (%s)", p, k)
	}
	return nil
}

// reachable refuses p when a part of its parent is anything but a
// directory of the tree: a write there would land inside a submodule,
// follow a link out of the work tree, or need a file to be a directory.
func (t headTree) reachable(p string) error {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if k := t[dir]; k != "" && k != entryDir {
			return fmt.Errorf("%q is inside %q, which is %s in the head", p, dir, k)
		}
	}
	return nil
}

// gitlinks are the tree's submodule paths, sorted.
func (t headTree) gitlinks() []string {
	var out []string
	for p, k := range t {
		if k == entryGitlink {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
