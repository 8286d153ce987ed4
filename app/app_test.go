package app_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// syncBuffer is a bytes.Buffer safe for the app's log and its signal
// watcher at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runApp runs the App in this process with opt (its Log and Stderr set
// here) and returns Run's error, the text log and what went to stderr.
func runApp(t *testing.T, opt app.Options) (logs, stderr string, err error) {
	t.Helper()
	var out, errs syncBuffer
	log, lerr := app.NewLogger(&out, app.LogText)
	if lerr != nil {
		t.Fatal(lerr)
	}
	opt.Log, opt.Stderr = log, &errs
	a, err := app.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run()
	return out.String(), errs.String(), err
}

// check runs `codeboost serve --db DB --check` in this process.
func check(t *testing.T, db string) (logs string, err error) {
	t.Helper()
	logs, _, err = runApp(t, app.Options{DB: db, Check: true})
	return logs, err
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
	logs, err := check(t, db)
	if err != nil {
		t.Fatalf("first start: %v\n%s", err, logs)
	}
	m := ownerLine.FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no owner token in %q", logs)
	}
	return dir, db, m[1]
}

// TestRunRecoversWhatACrashLeft is production wiring end to end on real
// files: a database and runner root as a killed process leaves them (a
// running attempt, its attempt directory, an entry recovery does not know)
// are recovered before admission opens, and shutdown then runs in order.
func TestRunRecoversWhatACrashLeft(t *testing.T) {
	dir, db, token := firstStart(t)
	attempt, planKey, attempts := leaveCrashedAttempt(t, db, dir, token)
	if err := os.WriteFile(filepath.Join(attempts, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := check(t, db)
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	for _, want := range []string{
		"recovery: finalized " + attempt.ID + " failed",
		"recovery: requeue " + planKey,
		"attempts/notes.txt under the attempts directory; left alone",
		"recovery: done; runner open",
		"codeboost: stopping\n",
		"shutdown: every job ended",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
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

// TestRunFailedRecoveryReleasesTheLock: a startup that fails after the lock
// was taken returns its error and releases the lock.
func TestRunFailedRecoveryReleasesTheLock(t *testing.T) {
	dir, db, _ := firstStart(t)
	// A root that is a file: recovery cannot make the runner's directories.
	root := filepath.Join(dir, "root-file")
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logs, _, err := runApp(t, app.Options{DB: db, Root: root, Check: true})
	if err == nil {
		t.Fatalf("want an error, got none:\n%s", logs)
	}
	// The lock was released on that exit path: the next start takes it.
	if logs, err := check(t, db); err != nil {
		t.Fatalf("after a failed start the lock is still held: %v\n%s", err, logs)
	}
}

// leaveCrashedAttempt writes what a killed runner leaves: a task whose
// execute attempt is running, and its attempt directory under the runner
// root. It returns the attempt, its plan key and the attempts directory.
func leaveCrashedAttempt(t *testing.T, db, dir, token string) (store.Attempt, string, string) {
	t.Helper()
	attempt, key := leaveExecuteAttempt(t, db, func(tx *store.Tx, a store.Attempt) error { return tx.MarkRunning(a.ID) })
	attempts := filepath.Join(dir, "codeboost-runner", token, "attempts")
	if err := os.MkdirAll(filepath.Join(attempts, attempt.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	return attempt, key, attempts
}

// leaveExecuteAttempt creates, in the database at db, a task with one plan
// item and admits an execute attempt of it; then, in the same transaction,
// writes what the caller's crash left. It returns the attempt and the task's
// plan key.
func leaveExecuteAttempt(t *testing.T, db string, then func(tx *store.Tx, a store.Attempt) error) (store.Attempt, string) {
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
		admitted, err := tx.Admit(store.AdmitRequest{PlanKey: id.Key(), Kind: words.KindExecute, Item: &item,
			AttemptTimeout: time.Hour, Budget: 2 * time.Hour})
		if err != nil {
			return err
		}
		attempt = admitted.Attempt
		return then(tx, attempt)
	})
	if err != nil {
		t.Fatal(err)
	}
	return attempt, id.Key()
}

// TestRunFinalizationFailsThenRetries is R066 with the real lock: a storage
// error in recovery's finalization transaction stops startup with the
// error, removes nothing, and releases the lock; the next start runs
// recovery again from the start and finishes it.
func TestRunFinalizationFailsThenRetries(t *testing.T) {
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

	out, err := check(t, db)
	if err == nil || !strings.Contains(err.Error(), "the finalization transaction failed") || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("want the finalization error, got %v\n%s", err, out)
	}
	if strings.Contains(out, "serving") || strings.Contains(out, "recovery: finalized") {
		t.Errorf("startup went on after the failed finalization:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(attempts, attempt.ID)); err != nil {
		t.Errorf("the attempt directory was removed after the failed finalization: %v", err)
	}

	raw(`DROP TRIGGER disk_error`)
	out, err = check(t, db)
	if err != nil || !strings.Contains(out, "recovery: finalized "+attempt.ID+" failed") {
		t.Fatalf("the next start (lock released?): %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(attempts, attempt.ID)); !os.IsNotExist(err) {
		t.Errorf("the attempt directory is still there after recovery: %v", err)
	}
}
