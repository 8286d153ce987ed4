package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/codeboost/codeboost/dadapter"
)

// Staged is what task storage is seeded with, as Stage wrote it.
type Staged struct {
	// GitDir is a git directory holding commit's history in one new pack,
	// HEAD detached at commit, an index of commit's tree (without stat
	// data: git compares the files' contents once) and empty refs.
	GitDir string
	// Archive is commit's tree as one tar file, as git archive writes it
	// with the repository's attributes (see archiveAttributes).
	Archive string
}

// Stage writes the seed of task storage for commit, which must be in the
// runner-owned repository (Materialize it first), into dir, an empty
// directory the caller made and removes: dir/meta and dir/work.tar.
//
// It replaces a staging clone (Clone), and keeps its guarantees: the
// metadata owes the runner-owned repository nothing, since pack-objects
// writes a new pack (no alternates file, no hard link into ours), and it
// holds commit's history only, as a fetch of commit would (no object that
// only another attempt's ref reaches). It is three git calls, and the work
// tree is never written out on the host: a clone was an init, a fetch (an
// upload-pack, a pack-objects and an index-pack behind it) and a checkout,
// then a walk of the checked-out tree, about half of an allocation's git
// time (BenchmarkAttempt in dadapter/docker).
func (r *Repo) Stage(ctx context.Context, dir, commit string, onGroup func(dadapter.ProcessGroup)) (Staged, error) {
	if err := checkCommit("commit", commit); err != nil {
		return Staged{}, err
	}
	if !filepath.IsAbs(dir) {
		return Staged{}, fmt.Errorf("gitrepo: staging directory %q is not an absolute path", bounded(dir))
	}
	s := Staged{GitDir: filepath.Join(dir, "meta"), Archive: filepath.Join(dir, "work.tar")}
	if err := ctx.Err(); err != nil {
		return Staged{}, fmt.Errorf("gitrepo: stage %s: %w", commit, err)
	}
	if err := newGitDir(s.GitDir, commit); err != nil {
		return Staged{}, fmt.Errorf("gitrepo: stage %s: %w", commit, err)
	}
	bare := bareAt(r.path)
	if _, err := r.gitFed(ctx, bare, onGroup, commit+"\n",
		"pack-objects", "--quiet", "--revs", "--delta-base-offset", filepath.Join(s.GitDir, "objects", "pack", "pack")); err != nil {
		return Staged{}, fmt.Errorf("gitrepo: stage %s: pack its history: %w", commit, err)
	}
	if _, err := r.git(ctx, bareAt(s.GitDir), onGroup, "read-tree", commit); err != nil {
		return Staged{}, fmt.Errorf("gitrepo: stage %s: write its index: %w", commit, err)
	}
	if _, err := r.git(ctx, bare, onGroup, "archive", "--format=tar", "--output="+s.Archive, commit); err != nil {
		return Staged{}, fmt.Errorf("gitrepo: stage %s: archive its tree: %w", commit, err)
	}
	return s, nil
}

// archiveAttributes is the runner-owned repository's info/attributes,
// which git reads before any .gitattributes of a tree: git archive applies
// export-ignore (leave the path out) and export-subst (expand $Format:…$
// in it), which a checkout does not, so a commit's own attributes could
// otherwise give the agent another tree than the commit's. The attributes
// both apply, text and eol conversion, are the same for a checkout.
const archiveAttributes = "* -export-ignore -export-subst\n"

// writeAttributes writes info/attributes: into a new owner-only file
// (writeTemp) renamed over the old, so that a concurrent Open or archive
// never reads half of it.
func (r *Repo) writeAttributes() error {
	p := r.attributesPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := r.writeTemp("attributes-", []byte(archiveAttributes))
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// hasAttributes reports whether info/attributes is archiveAttributes.
func (r *Repo) hasAttributes() bool {
	b, err := os.ReadFile(r.attributesPath())
	return err == nil && string(b) == archiveAttributes
}

func (r *Repo) attributesPath() string { return filepath.Join(r.path, "info", "attributes") }

// newGitDir makes the smallest git directory git accepts (HEAD, objects,
// refs, a config) with HEAD detached at commit. bare = false: the agent's
// git finds it as /task/.git, with /task its work tree.
func newGitDir(gitDir, commit string) error {
	for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(gitDir, filepath.FromSlash(d)), 0o700); err != nil {
			return err
		}
	}
	files := map[string]string{
		"HEAD":   commit + "\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(gitDir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// gitFed runs one call with input on its standard input. The input is
// written whole into a pipe before the call starts, so no goroutine feeds
// it: it must fit the pipe's buffer (64 KiB on Linux; callers pass a line
// or two).
func (r *Repo) gitFed(ctx context.Context, at place, onGroup func(dadapter.ProcessGroup), input string, args ...string) ([]byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	_, err = pw.WriteString(input)
	if err = errors.Join(err, pw.Close()); err != nil {
		return nil, fmt.Errorf("git %s: its input: %w", args[0], err)
	}
	res := r.startIn(ctx, at, pr, onGroup, args...)
	return res.Stdout, failure(ctx, args[0], res)
}
