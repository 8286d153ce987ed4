package lock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAcquireRefusesWhatNamesNoDatabaseFile: before anything is opened or
// created, Acquire refuses a database path that names no file, a
// directory it cannot resolve, and (with no home given) a process whose
// home directory is unknown, each saying which.
func TestAcquireRefusesWhatNamesNoDatabaseFile(t *testing.T) {
	w := newWorld(t)
	for path, want := range map[string]string{
		"/": "runner lock: / does not name a file",
		filepath.Join(w.dir, "missing", "codeboost.db"): "runner lock: resolve the database directory: ",
	} {
		if l, err := Acquire(path, Options{Home: w.home}); err == nil || !strings.HasPrefix(err.Error(), want) {
			if err == nil {
				l.Release()
			}
			t.Errorf("Acquire(%q): %v, want %q", path, err, want)
		}
	}
	t.Setenv("HOME", "")
	if l, err := Acquire(w.db("codeboost.db"), Options{}); err == nil || !strings.HasPrefix(err.Error(), "runner lock: find the home directory: ") {
		if err == nil {
			l.Release()
		}
		t.Errorf("Acquire with no home: %v", err)
	}
}

// TestAcquireSaysWhenARelativePathCannotBeResolved: a relative database
// path, or a relative home, is resolved against the working directory;
// when that directory is gone, Acquire refuses, naming the path it could
// not resolve, and takes no lock.
func TestAcquireSaysWhenARelativePathCannotBeResolved(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	gone := t.TempDir()
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, home, want string
	}{
		{"codeboost.db", w.home, "runner lock: codeboost.db: "},
		{db, "home", "runner lock: home directory home: "},
	} {
		if l, err := Acquire(c.path, Options{Home: c.home}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			if err == nil {
				l.Release()
			}
			t.Errorf("Acquire(%q) with home %q: %v, want %q", c.path, c.home, err, c.want)
		}
	}
}
