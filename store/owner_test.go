package store_test

// The runner owner token ("Runner owner token" under "Second prerequisite
// before F1 merges"): 32 lowercase hex characters in app_settings, stored
// with the database file's device and inode; a copy gets its own token; a
// corrupt stored value is refused before it is used (R034, R077).

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// ownerOpen opens the database at path; the caller closes it.
func ownerOpen(t *testing.T, path string, seed uint64) *store.Store {
	t.Helper()
	s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(seed)})
	if err != nil {
		t.Fatalf("store.Open(%s): %v", path, err)
	}
	return s
}

// ownerFileID is the file's device and inode, as the lock reports them.
func ownerFileID(t *testing.T, path string) (uint64, uint64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return uint64(st.Dev), uint64(st.Ino)
}

func ownerToken(t *testing.T, s *store.Store, dev, ino uint64, newToken func() string) (string, error) {
	t.Helper()
	var tok string
	err := s.Update(func(tx *store.Tx) error {
		var err error
		tok, err = tx.RunnerOwnerToken(dev, ino, newToken)
		return err
	})
	return tok, err
}

func mustOwnerToken(t *testing.T, s *store.Store, dev, ino uint64, newToken func() string) string {
	t.Helper()
	tok, err := ownerToken(t, s, dev, ino, newToken)
	if err != nil {
		t.Fatalf("RunnerOwnerToken: %v", err)
	}
	if !ids.ValidToken(tok) {
		t.Fatalf("token %q is not 32 lowercase hex", tok)
	}
	return tok
}

// noNewToken fails the test if a token is created.
func noNewToken(t *testing.T) func() string {
	return func() string {
		t.Errorf("a new runner owner token was created")
		return ids.Random{}.Token()
	}
}

func TestRunnerOwnerTokenFresh(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.snap(key)
	dev, ino := ownerFileID(t, e.path)

	tok := mustOwnerToken(t, e.s, dev, ino, nil)
	if got := e.rawString(`SELECT value FROM app_settings WHERE key = 'runner_owner_token'`); got != tok {
		t.Fatalf("stored token %q, returned %q", got, tok)
	}
	if got := e.rawInt(`SELECT CAST(value AS INTEGER) FROM app_settings WHERE key = 'runner_owner_device'`); uint64(got) != dev {
		t.Fatalf("stored device %d, want %d", got, dev)
	}
	if got := e.rawInt(`SELECT CAST(value AS INTEGER) FROM app_settings WHERE key = 'runner_owner_inode'`); uint64(got) != ino {
		t.Fatalf("stored inode %d, want %d", got, ino)
	}
	if again := mustOwnerToken(t, e.s, dev, ino, noNewToken(t)); again != tok {
		t.Fatalf("second read %q, first %q", again, tok)
	}
	// A read transaction reads it too.
	err := e.s.View(func(tx *store.Tx) error {
		got, err := tx.RunnerOwnerToken(dev, ino, noNewToken(t))
		if err == nil && got != tok {
			t.Errorf("View read %q, want %q", got, tok)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := e.snap(key); !ownerSameSnap(before, after) {
		t.Fatalf("the token write changed a task: %+v → %+v", before, after)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM app_settings`); n != 3 {
		t.Fatalf("%d app_settings rows, want 3", n)
	}
}

func ownerSameSnap(a, b snapshot) bool {
	return a.Task == b.Task && len(a.Attempts) == len(b.Attempts) && len(a.History) == len(b.History) &&
		a.Actions == b.Actions && a.Events == b.Events
}

func TestRunnerOwnerTokenStableOnReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codeboost.db")
	s := ownerOpen(t, path, 1)
	dev, ino := ownerFileID(t, path)
	tok := mustOwnerToken(t, s, dev, ino, nil)
	s.Close()

	s = ownerOpen(t, path, 2) // another seed: a new token would differ
	defer s.Close()
	if again := mustOwnerToken(t, s, dev, ino, noNewToken(t)); again != tok {
		t.Fatalf("after reopen %q, before %q", again, tok)
	}
}

// R034: a copied database file (another inode) gets a new token; the
// original keeps its own.
func TestRunnerOwnerTokenCopiedDatabase(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "codeboost.db")
	s := ownerOpen(t, orig, 1)
	dev, ino := ownerFileID(t, orig)
	tokOrig := mustOwnerToken(t, s, dev, ino, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cp := filepath.Join(t.TempDir(), "copy.db")
	ownerCopyFile(t, orig, cp)
	cdev, cino := ownerFileID(t, cp)
	if cdev == dev && cino == ino {
		t.Fatal("the copy has the original's identity")
	}
	c := ownerOpen(t, cp, 1) // same seed: the ID source is not what makes it differ
	tokCopy := mustOwnerToken(t, c, cdev, cino, func() string { return strings.Repeat("c", 32) })
	if tokCopy == tokOrig {
		t.Fatalf("the copy shares the original's token %q", tokOrig)
	}
	if again := mustOwnerToken(t, c, cdev, cino, noNewToken(t)); again != tokCopy {
		t.Fatalf("the copy's token changed: %q then %q", tokCopy, again)
	}
	c.Close()

	s = ownerOpen(t, orig, 3)
	defer s.Close()
	if got := mustOwnerToken(t, s, dev, ino, noNewToken(t)); got != tokOrig {
		t.Fatalf("the original's token is %q, was %q", got, tokOrig)
	}
}

func ownerCopyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// R077: a stored token that is not ^[0-9a-f]{32}$ is refused before it is
// used anywhere, also when the identity differs (it is not quietly replaced).
func TestRunnerOwnerTokenCorruptRefused(t *testing.T) {
	bad := map[string]string{
		"path":         "../x",
		"uppercase":    strings.Repeat("AB", 16),
		"31 chars":     strings.Repeat("a", 31),
		"33 chars":     strings.Repeat("a", 33),
		"empty":        "",
		"non-hex":      strings.Repeat("g", 32),
		"trailing nl":  strings.Repeat("a", 32) + "\n",
		"uuid":         "0123abcd-0123-4abc-8def-0123456789ab",
		"long garbage": strings.Repeat("/..", 100),
	}
	for name, value := range bad {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			dev, ino := ownerFileID(t, e.path)
			mustOwnerToken(t, e.s, dev, ino, nil)
			e.rawExec(`UPDATE app_settings SET value = ? WHERE key = 'runner_owner_token'`, value)
			for _, id := range [][2]uint64{{dev, ino}, {dev, ino + 1}} {
				tok, err := ownerToken(t, e.s, id[0], id[1], noNewToken(t))
				if !errors.Is(err, store.ErrBadOwnerToken) {
					t.Fatalf("RunnerOwnerToken = %q, %v; want ErrBadOwnerToken", tok, err)
				}
				if tok != "" {
					t.Fatalf("a corrupt token was returned: %q", tok)
				}
			}
			if got := e.rawString(`SELECT value FROM app_settings WHERE key = 'runner_owner_token'`); got != value {
				t.Fatalf("the stored value changed to %q", got)
			}
		})
	}
}

func TestRunnerOwnerTokenInvalidNewTokenRefused(t *testing.T) {
	e := newEnv(t)
	dev, ino := ownerFileID(t, e.path)
	if _, err := ownerToken(t, e.s, dev, ino, func() string { return "../x" }); err == nil {
		t.Fatal("an invalid new token was accepted")
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM app_settings`); n != 0 {
		t.Fatalf("%d app_settings rows after a refused token", n)
	}
}
