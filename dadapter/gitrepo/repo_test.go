package gitrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Open is idempotent: the same path, and what the repository held survives.
func TestOpenIsIdempotent(t *testing.T) {
	u := newUserRepo(t)
	root := t.TempDir()
	ctx := context.Background()
	r1, err := Open(ctx, root, owner, u.dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(u.dir))
	want := filepath.Join(root, owner, "repositories", hex.EncodeToString(sum[:16])+".git")
	if r1.Path() != want {
		t.Fatalf("Path = %s, want %s", r1.Path(), want)
	}
	if err := r1.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	// An uncleaned spelling of the same path finds the same repository.
	r2, err := Open(ctx, root, owner, u.dir+"/./")
	if err != nil {
		t.Fatal(err)
	}
	if r2.Path() != want {
		t.Fatalf("second Path = %s, want %s", r2.Path(), want)
	}
	if !hasObject(want, u.c3) {
		t.Fatal("the second Open lost a materialized commit")
	}
	// The root was given, not made; Open makes the rest owner-only.
	for _, dir := range []string{filepath.Join(root, owner), filepath.Dir(want), want, filepath.Join(want, "objects")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o700 {
			t.Errorf("%s has mode %#o, want 0700", dir, perm)
		}
	}
}

// A directory on the way that others may write is refused, whether Open
// made it earlier or found it.
func TestOpenRefusesSharedDirectories(t *testing.T) {
	u := newUserRepo(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		dir  func(root, repo string) string
		mode os.FileMode
	}{
		{"root 0777", func(root, _ string) string { return root }, 0o777},
		{"owner 0770", func(root, _ string) string { return filepath.Join(root, owner) }, 0o770},
		{"repositories 0777", func(_, repo string) string { return filepath.Dir(repo) }, 0o777},
		{"repository 0777", func(_, repo string) string { return repo }, 0o777},
		{"repository 0702", func(_, repo string) string { return repo }, 0o702},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			r, err := Open(ctx, root, owner, u.dir)
			if err != nil {
				t.Fatal(err)
			}
			dir := tc.dir(root, r.Path())
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			if _, err := Open(ctx, root, owner, u.dir); !errors.Is(err, ErrNotOwnerOnly) {
				t.Fatalf("Open with %s: err = %v, want ErrNotOwnerOnly", dir, err)
			}
		})
	}
	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("only root can give a directory away")
		}
		root := t.TempDir()
		r, err := Open(ctx, root, owner, u.dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(r.Path(), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, root, owner, u.dir); !errors.Is(err, ErrNotOwnerOnly) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("err = %v, want ErrNotOwnerOnly naming the owner", err)
		}
	})
	t.Run("found before the first Open", func(t *testing.T) {
		root := t.TempDir()
		shared := filepath.Join(root, owner)
		if err := os.Mkdir(shared, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shared, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, root, owner, u.dir); !errors.Is(err, ErrNotOwnerOnly) {
			t.Fatalf("err = %v, want ErrNotOwnerOnly", err)
		}
		if _, err := os.Stat(filepath.Join(shared, "repositories")); !os.IsNotExist(err) {
			t.Fatalf("Open created under a refused directory: %v", err)
		}
	})
}

func TestOpenRefusesBadInput(t *testing.T) {
	u := newUserRepo(t)
	root := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct{ root, owner, user string }{
		{"relative", owner, u.dir},
		{root, "ABCDEF0123456789abcdef0123456789", u.dir},
		{root, "../x", u.dir},
		{root, owner, "user"},
	} {
		if _, err := Open(ctx, tc.root, tc.owner, tc.user); err == nil {
			t.Errorf("Open(%q, %q, %q) succeeded", tc.root, tc.owner, tc.user)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("refused Opens left %d entries in the root", len(entries))
	}
}
