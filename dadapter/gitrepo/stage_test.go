package gitrepo

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// A staged commit is what a clone of it was: a git directory with the
// commit's history, HEAD detached at it and an index of its tree, beside
// its tree as a tar; the git directory owes the runner-owned repository
// nothing and holds no object that only a later commit has. Extracted under
// the git directory, git sees a clean tree.
func TestStageWritesTheCommitsMetadataAndTree(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	for _, c := range []string{u.c2, u.c3} {
		if err := r.Materialize(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	// c3, a child of c2, is in the runner-owned repository too, under a ref
	// as an attempt's commit would be.
	hostGit(t, r.Path(), "update-ref", attemptRef("00000000-0000-4000-8000-000000000001"), u.c3)
	dir := t.TempDir()
	var g groups
	s, err := r.Stage(ctx, dir, u.c2, g.on)
	if err != nil {
		t.Fatal(err)
	}
	if s.GitDir != filepath.Join(dir, "meta") || s.Archive != filepath.Join(dir, "work.tar") {
		t.Fatalf("Stage = %+v, want dir/meta and dir/work.tar", s)
	}
	if g.count() != 3 {
		t.Errorf("%d process groups reported, want 3 (pack-objects, read-tree, archive)", g.count())
	}
	if head := hostGit(t, s.GitDir, "rev-parse", "HEAD"); head != u.c2 {
		t.Errorf("HEAD = %s, want %s", head, u.c2)
	}
	if _, err := hostGitErr(s.GitDir, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Error("HEAD is on a branch, want detached")
	}
	if !hasObject(s.GitDir, u.c1) {
		t.Error("the parent c1 is missing: the history was not staged")
	}
	if hasObject(s.GitDir, u.c3) || hasObject(s.GitDir, u.c3Tree) {
		t.Error("c3, which only the runner-owned repository's later commit reaches, was staged")
	}
	if out, err := hostGitErr(s.GitDir, "fsck", "--full", "--no-dangling"); err != nil {
		t.Errorf("git fsck in the staged metadata: %v\n%s", err, out)
	}
	if refs := hostGit(t, s.GitDir, "for-each-ref"); refs != "" {
		t.Errorf("the staged metadata has refs:\n%s", refs)
	}
	err = filepath.WalkDir(s.GitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			t.Errorf("%s: mode %v, want a regular file", p, fi.Mode())
		} else if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
			t.Errorf("%s has %d links, want 1 (no hard link into the runner-owned repository)", p, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.GitDir, "objects", "info", "alternates")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the staged metadata has an alternates file: %v", err)
	}

	work := extract(t, s.Archive)
	if b, err := os.ReadFile(filepath.Join(work, "a.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("a.txt = %q, %v; want the file as of c2", b, err)
	}
	if st := hostGit(t, work, "--git-dir="+s.GitDir, "--work-tree="+work, "status", "--porcelain"); st != "" {
		t.Errorf("git status of the extracted tree over the staged metadata:\n%s", st)
	}
	if d := hostGit(t, work, "--git-dir="+s.GitDir, "--work-tree="+work, "diff", u.c1); !strings.Contains(d, "-one") {
		t.Errorf("git diff %s over the staged metadata:\n%s", u.c1, d)
	}
}

// A commit's own attributes do not change what is staged: git archive
// would leave out an export-ignore path and expand $Format:…$ in an
// export-subst one, which a checkout never does.
func TestStageIgnoresTheCommitsExportAttributes(t *testing.T) {
	u := newUserRepo(t)
	write(t, filepath.Join(u.dir, ".gitattributes"), "secret.txt export-ignore\nsubst.txt export-subst\n")
	write(t, filepath.Join(u.dir, "secret.txt"), "kept\n")
	write(t, filepath.Join(u.dir, "subst.txt"), "$Format:%H$\n")
	hostGit(t, u.dir, "add", "--", ".gitattributes", "secret.txt", "subst.txt")
	hostGit(t, u.dir, "commit", "-q", "-m", "attributes")
	head := hostGit(t, u.dir, "rev-parse", "HEAD")
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, head, nil); err != nil {
		t.Fatal(err)
	}
	s, err := r.Stage(ctx, t.TempDir(), head, nil)
	if err != nil {
		t.Fatal(err)
	}
	work := extract(t, s.Archive)
	for name, want := range map[string]string{"secret.txt": "kept\n", "subst.txt": "$Format:%H$\n"} {
		if b, err := os.ReadFile(filepath.Join(work, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q, as committed", name, b, err, want)
		}
	}
	if st := hostGit(t, work, "--git-dir="+s.GitDir, "--work-tree="+work, "status", "--porcelain"); st != "" {
		t.Errorf("git status of the extracted tree:\n%s", st)
	}
}

// Stage refuses what it cannot stage, with an error: a commit that is not
// in the runner-owned repository, a name that is not a commit ID, a
// relative directory, an ended context.
func TestStageRefusals(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Stage(ctx, t.TempDir(), u.lost, nil); err == nil || !strings.Contains(err.Error(), "pack its history") {
		t.Errorf("Stage of a commit never materialized: %v, want the pack to fail", err)
	}
	if _, err := r.Stage(ctx, t.TempDir(), "HEAD", nil); !errors.Is(err, ErrBadCommit) {
		t.Errorf("Stage(HEAD): %v, want ErrBadCommit", err)
	}
	if _, err := r.Stage(ctx, "relative", u.c3, nil); err == nil {
		t.Error("Stage into a relative directory succeeded")
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	dir := t.TempDir()
	if _, err := r.Stage(ended, dir, u.c3, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Stage with an ended context: %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Stage with an ended context wrote %d entries", len(entries))
	}
	// Stopped at each call, it says so.
	for step := 1; step <= 3; step++ {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		stopAt := func(dadapter.ProcessGroup) {
			if n++; n == step {
				cancel()
			}
		}
		_, err := r.Stage(ctx, t.TempDir(), u.c3, stopAt)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stopped at call %d: %v, want context.Canceled", step, err)
		}
	}
}

// A runner-owned repository whose info/attributes someone changed gets
// the archive attributes back on the next Open.
func TestOpenRestoresTheArchiveAttributes(t *testing.T) {
	u := newUserRepo(t)
	root := t.TempDir()
	r, err := Open(context.Background(), root, owner, u.dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(r.Path(), "info", "attributes")
	write(t, p, "* export-ignore\n")
	if _, err := Open(context.Background(), root, owner, u.dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != archiveAttributes {
		t.Fatalf("info/attributes = %q, %v; want %q", b, err, archiveAttributes)
	}
}

// A runner-owned repository that a crash left half-made (init stopped
// before the attributes were written) is made whole by the next Open; a
// whole one is not initialized again.
func TestOpenFinishesAHalfMadeRepository(t *testing.T) {
	u := newUserRepo(t)
	root := t.TempDir()
	r, err := Open(context.Background(), root, owner, u.dir)
	if err != nil {
		t.Fatal(err)
	}
	refs := filepath.Join(r.Path(), "refs")
	if err := os.RemoveAll(refs); err != nil {
		t.Fatal(err)
	}
	// Whole (its attributes are there): init does not run, so nothing
	// puts refs back.
	if _, err := Open(context.Background(), root, owner, u.dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(refs); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refs after Open of a whole repository: %v, want init not run again", err)
	}
	if err := os.Remove(r.attributesPath()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), root, owner, u.dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(refs); err != nil || !fi.IsDir() {
		t.Errorf("refs after Open of a half-made repository: %v, want it made again", err)
	}
	if !r.hasAttributes() {
		t.Error("the attributes were not written")
	}
}

// extract unpacks a tar into a new directory, refusing any name that
// would leave it.
func extract(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsLocal(h.Name) {
			t.Fatalf("archive entry %q leaves the directory", h.Name)
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode)&0o755)
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
