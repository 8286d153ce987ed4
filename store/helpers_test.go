package store_test

// Shared helpers for the Store's own tests. Every test runs against a real
// SQLite file under t.TempDir(), opened through store.Open with a clock the
// test controls, seeded IDs and (when asked) a failpoint set of its own.

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// testClock is the controllable clock passed as Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock {
	return &testClock{t: time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one store over one database file.
type env struct {
	t     *testing.T
	s     *store.Store
	path  string
	clock *testClock
	fp    *failpoints.Set
	raw   *sql.DB // a second connection to the same file, opened lazily
	tasks int
}

// newEnv opens a fresh store with its own failpoint set.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "codeboost.db"), clock: newClock(), fp: failpoints.New()}
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	return e
}

// rawDB is a second database/sql connection pool on the same file, through
// the "sqlite" driver, for reading columns the Store does not expose and for
// writes no Store method would make.
func (e *env) rawDB() *sql.DB {
	e.t.Helper()
	if e.raw == nil {
		db, err := sql.Open("sqlite", "file:"+e.path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			e.t.Fatalf("open raw connection: %v", err)
		}
		e.raw = db
		e.t.Cleanup(func() { db.Close() })
	}
	return e.raw
}

func (e *env) rawExec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.rawDB().Exec(q, args...); err != nil {
		e.t.Fatalf("raw exec %q: %v", q, err)
	}
}

func (e *env) rawInt(q string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.rawDB().QueryRow(q, args...).Scan(&n); err != nil {
		e.t.Fatalf("raw query %q: %v", q, err)
	}
	return n
}

func (e *env) rawString(q string, args ...any) string {
	e.t.Helper()
	var s sql.NullString
	if err := e.rawDB().QueryRow(q, args...).Scan(&s); err != nil {
		e.t.Fatalf("raw query %q: %v", q, err)
	}
	return s.String
}

// newTask creates a plan and its task with the given status ("" = queued)
// and returns its plan key.
func (e *env) newTask(status words.TaskStatus) string {
	e.t.Helper()
	e.tasks++
	id := store.Identity{RepositoryID: "repo", TaskID: "task" + strconv.Itoa(e.tasks), PlanID: "plan"}
	err := e.s.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"one", "two"}, Status: status})
	})
	if err != nil {
		e.t.Fatalf("CreateTask: %v", err)
	}
	return id.Key()
}

func (e *env) task(key string) store.Task {
	e.t.Helper()
	task, err := e.s.Task(key)
	if err != nil {
		e.t.Fatalf("Task(%s): %v", key, err)
	}
	return task
}

func (e *env) attempt(id string) store.Attempt {
	e.t.Helper()
	a, err := e.s.Attempt(id)
	if err != nil {
		e.t.Fatalf("Attempt(%s): %v", id, err)
	}
	return a
}

// admitReq is an admission of kind at the task's present state version.
func (e *env) admitReq(key, kind string) store.AdmitRequest {
	return store.AdmitRequest{
		PlanKey:              key,
		Kind:                 kind,
		ExpectedStateVersion: e.task(key).StateVersion,
		AttemptTimeout:       30 * time.Minute,
		Budget:               2 * time.Hour,
	}
}

// admit admits an attempt of kind and fails the test on any error.
func (e *env) admit(key, kind string) store.Attempt {
	e.t.Helper()
	a, err := e.s.Admit(e.admitReq(key, kind))
	if err != nil {
		e.t.Fatalf("Admit(%s, %s): %v", key, kind, err)
	}
	return a.Attempt
}

// running admits an attempt and moves it to running.
func (e *env) running(key, kind string) store.Attempt {
	e.t.Helper()
	a := e.admit(key, kind)
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	return e.attempt(a.ID)
}

// update runs fn and fails the test on any error.
func (e *env) update(fn func(*store.Tx) error) {
	e.t.Helper()
	if err := e.s.Update(fn); err != nil {
		e.t.Fatalf("Update: %v", err)
	}
}

func (e *env) publish(attemptID string, result []byte, commit string) (words.State, error) {
	var state words.State
	err := e.s.Update(func(tx *store.Tx) error {
		var err error
		state, err = tx.Publish(attemptID, result, commit, 0)
		return err
	})
	return state, err
}

func (e *env) finish(attemptID string, term store.Terminal) error {
	return e.s.Update(func(tx *store.Tx) error { return tx.Finish(attemptID, term) })
}

// wantRefusal fails unless err is a *store.Refusal with code.
func wantRefusal(t *testing.T, err error, code string) *store.Refusal {
	t.Helper()
	r, ok := store.IsRefusal(err)
	if !ok {
		t.Fatalf("want refusal %q, got %v", code, err)
	}
	if r.Code != code {
		t.Fatalf("want refusal %q, got %q (%s)", code, r.Code, r.Message)
	}
	return r
}

// snapshot is what a refused write must leave exactly as it was.
type snapshot struct {
	Task     store.Task
	Attempts []store.Attempt
	History  []store.HistoryEntry
	Actions  int
	Events   int
}

func (e *env) snap(key string) snapshot {
	e.t.Helper()
	var sn snapshot
	err := e.s.View(func(tx *store.Tx) error {
		var err error
		if sn.Task, err = tx.Task(key); err != nil {
			return err
		}
		if sn.Attempts, err = tx.Attempts(key); err != nil {
			return err
		}
		if sn.History, err = tx.History(key); err != nil {
			return err
		}
		if sn.Actions, err = tx.UserActionCount(key); err != nil {
			return err
		}
		sn.Events, err = tx.EventCount(key, words.EventTaskClosed)
		return err
	})
	if err != nil {
		e.t.Fatalf("snapshot: %v", err)
	}
	sn.Events = int(e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ?`, key))
	return sn
}

var errBoom = errors.New("boom")
