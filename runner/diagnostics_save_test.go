package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/codeboost/codeboost/ids"
)

// fixedToken is an ID source whose tokens are all one known value, so a
// test can stand something where saveDiagnostic's temporary file goes.
type fixedToken struct {
	ids.Source
	token string
}

func (f fixedToken) Token() string { return f.token }

// TestSaveDiagnosticFailsWithoutLeavingOrTakingAFile walks saveDiagnostic's
// steps with each one failing in turn. The contract's "Partial output":
// "exportPartial saves D's bounded diff … as <diagnostics>/<attemptId>.diff,
// owner-only, written through an exclusive temporary file. The terminal
// write stores it as diagnostic_ref. A failed export adds "Partial output
// could not be exported: " (quoted) to the diagnostic instead." So a step
// that fails is an error naming what failed, never a name (a row must
// never reference a file that was not saved), and an exclusive temporary
// file never writes over, nor removes, a file saveDiagnostic did not
// create; nothing of a failed save is left behind.
func TestSaveDiagnosticFailsWithoutLeavingOrTakingAFile(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	attemptID := ids.Random{}.UUID()
	for _, tc := range []struct {
		name      string
		attemptID string
		plant     func(t *testing.T, dir string) // what stands in the way, before the save
		wantErr   string                         // "" : the save succeeds
		want      []string                       // the diagnostics directory's entries after the save
	}{{
		name: "saved", attemptID: attemptID,
		want: []string{attemptID + ".diff"},
	}, {
		name: "unsafe attempt ID", attemptID: "../" + attemptID,
		wantErr: "not safe as a file name",
	}, {
		name: "directory cannot be made", attemptID: attemptID,
		plant: func(t *testing.T, dir string) {
			mustWrite(t, filepath.Dir(dir), "diagnostics", "a file where the directory goes")
		},
		wantErr: "mkdir",
	}, {
		name: "temporary file taken", attemptID: attemptID,
		plant: func(t *testing.T, dir string) {
			mustWrite(t, dir, "."+attemptID+"."+token+".tmp", "not saveDiagnostic's")
		},
		wantErr: "file exists",
		want:    []string{"." + attemptID + "." + token + ".tmp"},
	}, {
		name: "name taken by a directory", attemptID: attemptID,
		plant: func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, attemptID+".diff"), "inside", "keeps the directory non-empty")
		},
		wantErr: "rename",
		want:    []string{attemptID + ".diff"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := productionCoordinator(t, 1, &goD{})
			c.deps.IDs = fixedToken{Source: ids.Random{}, token: token}
			dir := c.diagnosticsDir()
			if tc.plant != nil {
				tc.plant(t, dir)
			}
			before := snapshotFiles(t, filepath.Dir(dir))
			name, err := c.saveDiagnostic(tc.attemptID)([]byte("diff --git a/x b/x\n"))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("save: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("save = %q, %v; want an error naming %q", name, err, tc.wantErr)
			case tc.wantErr != "" && name != "":
				t.Errorf("a failed save named the file %q", name)
			}
			if got := dirNames(t, dir); !slices.Equal(got, tc.want) {
				t.Errorf("diagnostics directory holds %q, want %q", got, tc.want)
			}
			if tc.wantErr == "" {
				path := filepath.Join(dir, name)
				if b, err := os.ReadFile(path); err != nil || string(b) != "diff --git a/x b/x\n" {
					t.Errorf("saved file: %q, %v", b, err)
				}
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("saved file mode: %v, %v; want owner-only", fi.Mode(), err)
				}
				return
			}
			// What stood in the way is untouched.
			for p, content := range before {
				if b, err := os.ReadFile(p); err != nil || string(b) != content {
					t.Errorf("%s: %q, %v after the failed save; want %q untouched", p, b, err, content)
				}
			}
		})
	}
}

// TestSaveDiagnosticReportsAFailedWrite makes saveDiagnostic's write fail
// part-way (the file size limit stands for a full disk) and checks that
// the save is an error and leaves nothing behind. The contract's "Partial
// output": "exportPartial saves D's bounded diff … as
// <diagnostics>/<attemptId>.diff, owner-only, written through an exclusive
// temporary file. The terminal write stores it as diagnostic_ref. A failed
// export adds "Partial output could not be exported: " (quoted) to the
// diagnostic instead." A diff cut short by a failed write is a failed
// export, never a saved one: a later successful Close must not stand for
// the write that failed.
//
// The size limit is process-wide: the test is not parallel, and the limit
// is lifted as soon as the save returns.
func TestSaveDiagnosticReportsAFailedWrite(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, &goD{})
	const limit = 64 << 10
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if old.Cur <= 2*limit {
		t.Skipf("file size limit already %d", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	name, err := c.saveDiagnostic(c.deps.IDs.UUID())(bytes.Repeat([]byte("+"), 2*limit))
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatalf("restoring the file size limit: %v", rerr)
	}
	if err == nil || name != "" {
		t.Errorf("save past the file size limit = %q, %v; want an error and no name", name, err)
	}
	if got := dirNames(t, c.diagnosticsDir()); len(got) != 0 {
		t.Errorf("diagnostics directory holds %q after the failed save, want nothing", got)
	}
}

func mustWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshotFiles is every regular file under root with its content.
func snapshotFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			files[p] = string(b)
		}
		return nil
	})
	return files
}

// dirNames lists dir's entries by name (none when dir is missing or not a
// directory).
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
