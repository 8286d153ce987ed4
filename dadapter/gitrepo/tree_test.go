package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeCommit commits, on u's c3, nested directories, a symbolic link, an
// executable, a name git would quote and a gitlink whose .gitmodules asks
// diffs to ignore it, and returns the commit, the clone it was made in,
// and its leaves as ls-tree lists them.
func treeCommit(t *testing.T, u userRepo) (w work, commit string, leaves []string) {
	t.Helper()
	w = newWork(t, u)
	hostGit(t, w.dir, "checkout", "-q", "--detach", u.c3)
	if err := os.MkdirAll(filepath.Join(w.dir, "src", "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "src", "deep", "er", "leaf.go"), "package er\n")
	write(t, filepath.Join(w.dir, "src", "main.go"), "package main\n")
	write(t, filepath.Join(w.dir, "run.sh"), "#!/bin/sh\n")
	write(t, filepath.Join(w.dir, "src", "odd\tname é.txt"), "odd\n")
	if err := os.Chmod(filepath.Join(w.dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(w.dir, "link")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, ".gitmodules"), "[submodule \"vendor/sub\"]\n\tpath = vendor/sub\n\turl = ./sub\n\tignore = all\n")
	hostGit(t, w.dir, "add", "--", ".")
	hostGit(t, w.dir, "update-index", "--add", "--cacheinfo", "160000,"+u.c1+",vendor/sub")
	hostGit(t, w.dir, "commit", "-q", "-m", "tree")
	commit = hostGit(t, w.dir, "rev-parse", "HEAD")
	leaves = strings.Split(strings.TrimSuffix(hostGit(t, w.dir, "ls-tree", "-r", "-z", "--full-tree", "--name-only", commit), "\x00"), "\x00")
	slices.Sort(leaves)
	return w, commit, leaves
}

// takeIn takes commit, a single commit on u.c3 made in w, into r under
// attemptA, as CommitTaskChanges does: the runner-owned repository holds
// no other copy of it.
func takeIn(t *testing.T, u userRepo, w work, r *Repo, commit string) {
	t.Helper()
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.TakeBundle(ctx, attemptA, u.c3, commit, w.bundle(u.c3, map[string]string{"refs/heads/tree": commit}), nil); err != nil {
		t.Fatal(err)
	}
}

func TestListTree(t *testing.T) {
	u := newUserRepo(t)
	w, commit, want := treeCommit(t, u)
	for _, leaf := range []string{".gitmodules", "a.txt", "b.txt", "link", "run.sh", "src/deep/er/leaf.go", "src/main.go", "src/odd\tname é.txt", "vendor/sub"} {
		if !slices.Contains(want, leaf) {
			t.Fatalf("the fixture lacks %s: %q", leaf, want)
		}
	}
	r := openRepo(t, u)
	ctx := context.Background()
	takeIn(t, u, w, r, commit)
	var g groups
	got, cut, err := r.ListTree(ctx, commit, 100, g.on)
	if err != nil || cut || !slices.Equal(got, want) {
		t.Fatalf("ListTree = %q, cut %v, %v; want %q", got, cut, err, want)
	}
	if g.count() == 0 {
		t.Fatal("no process group reported")
	}
	// Exactly max leaves is whole; one more than max is cut, never a part.
	if got, cut, err := r.ListTree(ctx, commit, len(want), nil); err != nil || cut || !slices.Equal(got, want) {
		t.Fatalf("ListTree(max %d) = %q, cut %v, %v; want the whole list", len(want), got, cut, err)
	}
	for _, max := range []int{len(want) - 1, 1, 0} {
		if got, cut, err := r.ListTree(ctx, commit, max, nil); err != nil || !cut || got != nil {
			t.Fatalf("ListTree(max %d) = %q, cut %v, %v; want nil, cut", max, got, cut, err)
		}
	}
	// An older commit's tree is its own.
	if got, cut, err := r.ListTree(ctx, u.c1, 100, nil); err != nil || cut || !slices.Equal(got, []string{"a.txt"}) {
		t.Fatalf("ListTree(c1) = %q, cut %v, %v; want [a.txt]", got, cut, err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestListTreeRefuses(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"HEAD", "--output=/tmp/x", strings.ToUpper(u.c3), u.c3[:39]} {
		var g groups
		_, _, err := r.ListTree(ctx, bad, 100, g.on)
		if !errors.Is(err, ErrBadCommit) || !strings.Contains(err.Error(), "40 lowercase hex") || g.count() != 0 {
			t.Errorf("ListTree(%q): err = %v after %d git calls; want ErrBadCommit before any", bad, err, g.count())
		}
	}
	// A commit the repository does not hold, and a tree that is no commit.
	for _, id := range []string{u.lost, u.c3Tree} {
		if got, cut, err := r.ListTree(ctx, id, 100, nil); err == nil {
			t.Errorf("ListTree(%s) = %q, cut %v; want an error", id, got, cut)
		} else {
			t.Log(err)
		}
	}
	if _, _, err := r.ListTree(ctx, u.c3, -1, nil); err == nil {
		t.Error("ListTree accepted a negative max")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := r.ListTree(cancelled, u.c3, 100, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: err = %v, want context.Canceled", err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestSplitLeaves(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want []string
		cut  bool
		bad  bool
	}{
		{"", 0, []string{}, false, false},
		{"b\x00a\x00", 2, []string{"a", "b"}, false, false},
		{"b\x00a\x00", 1, nil, true, false},
		{"a\x00b", 2, nil, false, true},
		{"a\x00\x00", 2, nil, false, true},
	} {
		got, cut, err := splitLeaves([]byte(tc.in), tc.max)
		if (err != nil) != tc.bad || cut != tc.cut || !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("splitLeaves(%q, %d) = %q, %v, %v; want %q, %v, error %v", tc.in, tc.max, got, cut, err, tc.want, tc.cut, tc.bad)
		}
	}
}
