package lock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockDirectoryNotCreatedSaysSo: when <home>/.codeboost cannot be
// made (here home is a regular file), Acquire refuses with the create's own
// error, which names the directory and the reason, not with a later step's
// failure on a directory that was never made ("resolve …: no such file").
// Sweep survivor (seed 7): runner/lock/lock.go:lockDir:drop-guard:8be49a95.
func TestLockDirectoryNotCreatedSaysSo(t *testing.T) {
	w := newWorld(t)
	home := filepath.Join(w.home, "file")
	if err := os.WriteFile(home, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	l, err := Acquire(db, Options{Home: home})
	if err == nil {
		l.Release()
		t.Fatal("Acquire succeeded with a home that is a file")
	}
	want := "runner lock: create " + filepath.Join(home, ".codeboost") + ": "
	if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Acquire = %v, want the create's error (%q…, not a directory)", err, want)
	}
}

// TestLockDirectoryDanglingLinkSaysSo: <home>/.codeboost/locks is a
// symlink to nothing. Making the directory finds the name taken (EEXIST,
// which is taken for an existing directory), so it is the resolve step
// that must refuse, with its own error naming the link, before any owner
// or mode check runs on a path it never resolved.
func TestLockDirectoryDanglingLinkSaysSo(t *testing.T) {
	w := newWorld(t)
	dot := filepath.Join(w.home, ".codeboost")
	if err := os.Mkdir(dot, 0o700); err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(dot, "locks")
	if err := os.Symlink(filepath.Join(w.home, "gone"), locks); err != nil {
		t.Fatal(err)
	}
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	l, err := Acquire(db, Options{Home: w.home})
	if err == nil {
		l.Release()
		t.Fatal("Acquire succeeded through a dangling lock directory link")
	}
	want := "runner lock: resolve " + locks + ": "
	if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Acquire = %v, want the resolve step's error (%q…, no such file)", err, want)
	}
}

// TestAcquireWithoutADatabasePath: an empty path is refused before
// anything is resolved or created: it would otherwise name the working
// directory.
func TestAcquireWithoutADatabasePath(t *testing.T) {
	w := newWorld(t)
	l, err := Acquire("", Options{Home: w.home})
	if err == nil {
		l.Release()
		t.Fatal("Acquire accepted an empty database path")
	}
	if err.Error() != "runner lock: no database path" {
		t.Fatalf("Acquire(\"\") = %v, want \"runner lock: no database path\"", err)
	}
	if entries, _ := os.ReadDir(w.home); len(entries) != 0 {
		t.Fatalf("a refused Acquire made %v in the home directory", entries)
	}
}

// TestCheckDirSaysWhyItCannotLook: the owner and mode check runs on a path
// resolved a moment earlier; a directory that went missing in between (or
// cannot be looked at) is refused with the look's own error, which names
// the path and the reason, never as an unsafe directory ("is not a
// directory"), which would send the user looking for a file or a symlink
// that is not there.
// Sweep survivor (seed 8675309): runner/lock/lock.go:checkDir:ignore-error:a7d4d16e.
func TestCheckDirSaysWhyItCannotLook(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "removed-after-resolve")
	err := checkDir(gone)
	if err == nil || !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrUnsafeDirectory) || !strings.Contains(err.Error(), gone) {
		t.Fatalf("checkDir(%s) = %v, want the look's own error naming it (no such file), not an unsafe directory", gone, err)
	}
}

// TestLockDirectoryWithAQuestionMarkIsRefused: the lock database is opened
// by a path DSN, which ends at '?', so a lock directory whose path holds
// one would lock a different file than the one named. Acquire refuses it,
// saying why, rather than locking the wrong file. Sweep survivor (seed
// 271828): runner/lock/lock.go:lockDir:drop-guard:a634565e.
func TestLockDirectoryWithAQuestionMarkIsRefused(t *testing.T) {
	w := newWorld(t)
	home := filepath.Join(w.home, "who?")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	l, err := Acquire(db, Options{Home: home})
	if err == nil {
		l.Release()
		t.Fatal("Acquire succeeded with a lock directory whose path holds '?'")
	}
	if !strings.Contains(err.Error(), "contains '?'") {
		t.Fatalf("Acquire = %v; want the refusal of a lock directory that contains '?'", err)
	}
}
