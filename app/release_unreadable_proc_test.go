package app_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/app"
)

// TestReleasePreparationRefusesWhenTheCheckCannotRun: "Before removing
// anything, it checks that no process has a file open or a working
// directory inside the attempt directory, using … /proc/*/fd and
// /proc/*/cwd on Linux. If a process is found, or the check cannot run, it
// refuses and keeps admission closed." The release runs in a child process
// of this test whose /proc is an empty file system (a mount namespace of
// its own): no process can be inspected, so the check cannot run, and the
// release refuses, saying so, and leaves the directory and the mark.
// Sweep survivor (seed 918273): app/release.go:App.releasePreparation:ignore-error:0f028da0.
func TestReleasePreparationRefusesWhenTheCheckCannotRun(t *testing.T) {
	if db := os.Getenv("CODEBOOST_TEST_RELEASE_DB"); db != "" {
		// The child, with /proc empty.
		_, _, err := runApp(t, app.Options{DB: db, ReleasePreparation: os.Getenv("CODEBOOST_TEST_RELEASE_ID")})
		if err == nil || !strings.Contains(err.Error(), "cannot check which processes use") {
			t.Fatalf("release with no process to inspect: %v; want the refusal that the check cannot run", err)
		}
		return
	}
	if err := exec.Command("unshare", "--mount", "--propagation", "private", "true").Run(); err != nil {
		t.Skip("no mount namespace here (unshare needs root): ", err)
	}
	dir, db, token := firstStart(t)
	id, adir := startingPreparation(t, db, dir, token, true, 0)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount -t tmpfs none /proc && exec "$0" "$@"`,
		os.Args[0], "-test.run=^TestReleasePreparationRefusesWhenTheCheckCannotRun$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CODEBOOST_TEST_RELEASE_DB="+db, "CODEBOOST_TEST_RELEASE_ID="+id)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReleasePreparationRefusesWhenTheCheckCannotRun") {
		t.Fatalf("the release under an empty /proc: %v\n%s", err, out)
	}
	if _, err := os.Lstat(adir); err != nil {
		t.Errorf("the refused release removed %s: %v", adir, err)
	}
	if !stillStarting(t, db, id) {
		t.Errorf("the refused release cleared the starting mark of %s", id)
	}
}
