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
