package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// A clone is a detached checkout of the commit, with its history, and owes
// the runner-owned repository nothing: no alternates, no remote.
func TestCloneChecksOutTheCommit(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c2, nil); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	var g groups
	dir, err := r.Clone(ctx, parent, u.c2, g.on)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != parent || !strings.HasPrefix(filepath.Base(dir), "clone-") {
		t.Fatalf("clone at %s, want parent/clone-*", dir)
	}
	if g.count() != 3 {
		t.Errorf("%d process groups reported, want 3 (init, fetch, checkout)", g.count())
	}
	if head := hostGit(t, dir, "rev-parse", "HEAD"); head != u.c2 {
		t.Fatalf("HEAD = %s, want %s", head, u.c2)
	}
	if _, err := hostGitErr(dir, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Fatal("HEAD is on a branch, want detached")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "two\n" {
		t.Fatalf("a.txt = %q, %v; want the file as of c2", b, err)
	}
	if st := hostGit(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("the clone is not clean:\n%s", st)
	}
	// The history is there: a diff against the parent works.
	if d := hostGit(t, dir, "diff", u.c1); !strings.Contains(d, "-one") {
		t.Fatalf("git diff %s in the clone:\n%s", u.c1, d)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "objects", "info", "alternates")); !os.IsNotExist(err) {
		t.Fatalf("the clone has an alternates file: %v", err)
	}
	if remotes := hostGit(t, dir, "remote"); remotes != "" {
		t.Fatalf("the clone has remotes %q", remotes)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "FETCH_HEAD")); !os.IsNotExist(err) {
		t.Fatal("the clone has a FETCH_HEAD")
	}
}

// A clone stopped at any of its steps, or one that fails, leaves nothing
// under parent.
func TestCloneRemovesPartialDirectory(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	if err := r.Materialize(context.Background(), u.c3, nil); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		parent := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		stopAt := func(dadapter.ProcessGroup) {
			if n++; n == step {
				cancel()
			}
		}
		dir, err := r.Clone(ctx, parent, u.c3, stopAt)
		cancel()
		if !errors.Is(err, context.Canceled) || dir != "" {
			t.Fatalf("stopped at step %d: Clone = %q, %v; want context.Canceled", step, dir, err)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Fatalf("stopped at step %d: %d entries left under parent: %v %v", step, len(entries), entries[0].Name(), err)
		}
	}

	// A commit the runner-owned repository does not hold (never
	// materialized) fails the fetch.
	parent := t.TempDir()
	if dir, err := r.Clone(context.Background(), parent, u.lost, nil); err == nil {
		t.Fatalf("Clone of a missing commit made %s", dir)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("a failed clone left %d entries under parent", len(entries))
	}
	if _, err := r.Clone(context.Background(), parent, "HEAD", nil); !errors.Is(err, ErrBadCommit) {
		t.Fatalf("Clone(HEAD): err = %v, want ErrBadCommit", err)
	}
	if _, err := r.Clone(context.Background(), "relative", u.c3, nil); err == nil {
		t.Fatal("Clone under a relative parent succeeded")
	}
}
