package cli

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// runServe runs `codeboost serve ARGS` in this process.
func runServe(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = serve(args, &out, &errb)
	return code, out.String(), errb.String()
}

var ownerLine = regexp.MustCompile(`codeboost: runner owner ([0-9a-f]{32})`)

// firstStart gives the test a HOME of its own and a new database that one
// `codeboost serve --check` has created; it returns the database's folder,
// its path and its runner owner token.
func firstStart(t *testing.T) (dir, db, token string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir = t.TempDir()
	db = filepath.Join(dir, "codeboost.db")
	code, out, errs := runServe(t, "--db", db, "--check")
	if code != 0 {
		t.Fatalf("first start: exit %d\n%s%s", code, out, errs)
	}
	m := ownerLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no owner token in %q", out)
	}
	return dir, db, m[1]
}

// TestServeRecoversWhatACrashLeft is production wiring end to end on real
// files: a database and runner root as a killed process leaves them (a
// running attempt, its attempt directory, an entry recovery does not know)
// are recovered by `codeboost serve` before admission opens, and shutdown
// then runs in order.
func TestServeRecoversWhatACrashLeft(t *testing.T) {
	dir, db, token := firstStart(t)
	attempt, planKey, attempts := leaveCrashedAttempt(t, db, dir, token)
	if err := os.WriteFile(filepath.Join(attempts, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runServe(t, "--db", db, "--check")
	if code != 0 {
		t.Fatalf("restart: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"recovery: finalized " + attempt.ID + " failed",
		"recovery: requeue " + planKey,
		"attempts/notes.txt under the attempts directory; left alone",
		"recovery: done; runner open",
		"shutdown: every job ended",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(attempts, attempt.ID)); !os.IsNotExist(err) {
		t.Errorf("the attempt directory is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(attempts, "notes.txt")); err != nil {
		t.Errorf("recovery touched an entry it does not know: %v", err)
	}
	st, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, _ := st.Attempt(attempt.ID)
	task, _ := st.Task(planKey)
	if a.State != words.Failed || !strings.HasPrefix(a.Diagnostic, words.Interrupted) || !task.RequeuePending {
		t.Errorf("after recovery: attempt %s %q, requeue_pending %v", a.State, a.Diagnostic, task.RequeuePending)
	}
}

// TestServeFailedRecoveryReleasesTheLock: a startup that fails after the
// lock was taken exits non-zero with its message and releases the lock.
func TestServeFailedRecoveryReleasesTheLock(t *testing.T) {
	dir, db, _ := firstStart(t)
	// A root that is a file: recovery cannot make the runner's directories.
	root := filepath.Join(dir, "root-file")
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runServe(t, "--db", db, "--root", root, "--check")
	if code != 1 || errs == "" {
		t.Fatalf("want exit 1 with a message, got %d %q", code, errs)
	}
	// The lock was released on that exit path: the next start takes it.
	if code, out, errs := runServe(t, "--db", db, "--check"); code != 0 {
		t.Fatalf("after a failed start the lock is still held: exit %d\n%s%s", code, out, errs)
	}
}

// leaveCrashedAttempt writes what a killed runner leaves: a task whose
// execute attempt is running, and its attempt directory under the runner
// root. It returns the attempt, its plan key and the attempts directory.
func leaveCrashedAttempt(t *testing.T, db, dir, token string) (store.Attempt, string, string) {
	t.Helper()
	st, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	var attempt store.Attempt
	err = st.Update(func(tx *store.Tx) error {
		if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}}); err != nil {
			return err
		}
		item := 1
		if attempt, err = tx.Admit(store.AdmitRequest{PlanKey: id.Key(), Kind: words.KindExecute, Item: &item,
			AttemptTimeout: time.Hour, Budget: 2 * time.Hour}); err != nil {
			return err
		}
		return tx.MarkRunning(attempt.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	attempts := filepath.Join(dir, "codeboost-runner", token, "attempts")
	if err := os.MkdirAll(filepath.Join(attempts, attempt.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	return attempt, id.Key(), attempts
}

// TestServeFinalizationFailsThenRetries is R066 with the real lock: a
// storage error in recovery's finalization transaction stops startup with
// the error and a non-zero exit, removes nothing, and releases the lock; the
// next start runs recovery again from the start and finishes it.
func TestServeFinalizationFailsThenRetries(t *testing.T) {
	dir, db, token := firstStart(t)
	attempt, _, attempts := leaveCrashedAttempt(t, db, dir, token)
	raw := func(q string) {
		t.Helper()
		conn, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw(`CREATE TRIGGER disk_error BEFORE UPDATE OF state ON attempts BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`)

	code, out, errs := runServe(t, "--db", db, "--check")
	if code != 1 || !strings.Contains(errs, "the finalization transaction failed") || !strings.Contains(errs, "disk I/O error") {
		t.Fatalf("want exit 1 with the finalization error, got %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "serving") || strings.Contains(out, "recovery: finalized") {
		t.Errorf("startup went on after the failed finalization:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(attempts, attempt.ID)); err != nil {
		t.Errorf("the attempt directory was removed after the failed finalization: %v", err)
	}

	raw(`DROP TRIGGER disk_error`)
	code, out, errs = runServe(t, "--db", db, "--check")
	if code != 0 || !strings.Contains(out, "recovery: finalized "+attempt.ID+" failed") {
		t.Fatalf("the next start (lock released?) exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(attempts, attempt.ID)); !os.IsNotExist(err) {
		t.Errorf("the attempt directory is still there after recovery: %v", err)
	}
}
