package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Nothing of the runner's environment reaches git: neither a GIT_DIR naming
// another repository nor a HOME whose configuration git cannot parse.
func TestGitIgnoresTheRunnersEnvironment(t *testing.T) {
	u := newUserRepo(t)
	other := newUserRepo(t)
	hostGit(t, other.dir, "checkout", "-q", "--detach", other.c1)
	home := t.TempDir()
	write(t, filepath.Join(home, ".gitconfig"), "[core\nnot a config file\n")
	t.Setenv("GIT_DIR", filepath.Join(other.dir, ".git"))
	t.Setenv("HOME", home)

	r := openRepo(t, u)
	head, err := r.ResolveHead(context.Background())
	if err != nil || head != u.c3 {
		t.Fatalf("ResolveHead = %s, %v; want %s", head, err, u.c3)
	}
	if err := r.Materialize(context.Background(), u.c3, nil); err != nil {
		t.Fatal(err)
	}
}

// No hook runs, not even one planted in the runner-owned repository.
func TestGitRunsNoHooks(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(r.Path(), "hooks", "reference-transaction")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho ran >> "+marker+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	w := newWork(t, u)
	x := w.commitOn(u.c3, "x.txt")
	if err := r.TakeBundle(ctx, attemptA, u.c3, x, w.bundle(u.c3, map[string]string{"refs/heads/x": x}), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.DropRef(ctx, attemptA, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("a hook ran: %v", err)
	}
}
