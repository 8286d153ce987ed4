package store_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

const (
	v5Open   = "repo/open/plan"
	v5Merged = "repo/merged/plan"
	v5NoSnap = "repo/nosnap/plan"
	v5Failed = "11111111-1111-4111-8111-111111111111"
	v5Merge  = "22222222-2222-4222-8222-222222222222"
	v5Queued = "33333333-3333-4333-8333-333333333333"
)

// writeV5 writes the review screen's v5 fixture: an open plan, a merged plan
// (an earlier failed merge, then the merged one) and an open plan whose
// snapshot row is missing and whose merge is still queued.
func writeV5(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{store.SchemaV5,
		`INSERT INTO plans VALUES ('repo/open/plan', 'repo', 'open', 'plan', 3, 's1', 7)`,
		`INSERT INTO plans VALUES ('repo/merged/plan', 'repo', 'merged', 'plan', 2, 's2', 4)`,
		`INSERT INTO plans VALUES ('repo/nosnap/plan', 'repo', 'nosnap', 'plan', 1, 's9', 0)`,
		`INSERT INTO snapshots VALUES ('repo/open/plan', 's0', 'aaaaaaa'), ('repo/open/plan', 's1', 'abc1234'), ('repo/merged/plan', 's2', 'def5678')`,
		`INSERT INTO merge_attempts VALUES ('` + v5Failed + `', 'repo/merged/plan', 'failed', 100, 100)`,
		`INSERT INTO merge_attempts VALUES ('` + v5Merge + `', 'repo/merged/plan', 'merged', 200, 300)`,
		`INSERT INTO merge_attempts VALUES ('` + v5Queued + `', 'repo/nosnap/plan', 'queued', 200, 200)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("v5 fixture: %v", err)
		}
	}
}

// The contract's test: "A test migrates a v5 fixture with an open and a
// merged plan, checks every column of both rows, and then checks that retry,
// recovery and the time-limit check treat the migrated open task as not
// expired and not requeue-pending."
func TestMigrateV5Backfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v5.db")
	writeV5(t, path)
	clock := newClock()
	s, err := store.Open(path, store.Options{Now: clock.Now, IDs: ids.NewSeeded(1), Failpoints: failpoints.New()})
	if err != nil {
		t.Fatalf("Open(v5): %v", err)
	}
	e := &env{t: t, s: s, path: path, clock: clock}
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d", v)
	}
	now := clock.Now().UnixMilli()
	type row struct {
		status                          words.TaskStatus
		requeue                         int64
		rebase, budget, cancel, current sql.NullString
		sv, gen                         int64
		assignment, code                string
		created, updated                int64
	}
	read := func(key string) row {
		var r row
		err := e.rawDB().QueryRow(`SELECT status, requeue_pending, rebase_in_progress, budget_deadline, cancel_requested, current_attempt_id,
			state_version, context_generation, assignment_id, referenced_code_hash, created_at, updated_at FROM tasks WHERE plan_key = ?`, key).
			Scan(&r.status, &r.requeue, &r.rebase, &r.budget, &r.cancel, &r.current, &r.sv, &r.gen, &r.assignment, &r.code, &r.created, &r.updated)
		if err != nil {
			t.Fatalf("tasks row of %s: %v", key, err)
		}
		return r
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM tasks`); n != 3 {
		t.Fatalf("%d tasks rows, want one per plans row (3)", n)
	}
	for key, want := range map[string]row{
		v5Open:   {status: words.StatusInReview, assignment: "unassigned", code: "abc1234", created: now, updated: now},
		v5Merged: {status: words.StatusMerged, assignment: "unassigned", code: "def5678", created: now, updated: now},
		v5NoSnap: {status: words.StatusInReview, assignment: "unassigned", code: "none", created: now, updated: now},
	} {
		if got := read(key); got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", key, got, want)
		}
	}
	// The merged one, and only it, has one task-closed keyed by its merge attempt.
	if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events`); n != 1 {
		t.Fatalf("%d feedback events, want 1", n)
	}
	var key, action, kind, snap string
	var rev int64
	if err := e.rawDB().QueryRow(`SELECT plan_key, action_id, kind, plan_revision, snapshot_id FROM feedback_events`).Scan(&key, &action, &kind, &rev, &snap); err != nil {
		t.Fatal(err)
	}
	if key != v5Merged || action != v5Merge || kind != words.EventTaskClosed || rev != 2 || snap != "s2" {
		t.Fatalf("event = %s %s %s r%d %s", key, action, kind, rev, snap)
	}
	// The merge attempts moved into the v6 table, states kept.
	if n := e.rawInt(`SELECT COUNT(*) FROM merge_attempts`); n != 3 {
		t.Fatalf("%d merge attempts", n)
	}
	if st := e.rawString(`SELECT state FROM merge_attempts WHERE id = ?`, v5Queued); st != store.MergeQueued {
		t.Fatalf("queued merge became %q", st)
	}
	// J can read the merged task's events; the plans rows are untouched.
	if _, err := s.FeedbackEvents(store.Identity{RepositoryID: "repo", TaskID: "merged", PlanID: "plan"}); err != nil {
		t.Fatalf("FeedbackEvents(merged): %v", err)
	}
	if rv := e.rawInt(`SELECT review_version FROM plans WHERE key = ?`, v5Open); rv != 7 {
		t.Fatalf("review_version = %d", rv)
	}

	// Recovery: the open task is not listed to requeue and nothing is
	// repaired (the merged one is complete).
	var cands, fixed []string
	e.update(func(tx *store.Tx) (err error) {
		if cands, err = tx.RequeueCandidates(); err != nil {
			return err
		}
		fixed, err = tx.ReconcileMerged()
		return err
	})
	if len(cands) != 0 || len(fixed) != 0 {
		t.Fatalf("recovery lists %v to requeue and repairs %v", cands, fixed)
	}
	task := e.task(v5Open)
	if task.BudgetDeadline != nil || task.RequeuePending {
		t.Fatalf("open task: budget %v, requeue %v", task.BudgetDeadline, task.RequeuePending)
	}
	// A merge still queued in v5 keeps cancel task refused.
	wantRefusal(t, s.Update(func(tx *store.Tx) error {
		_, _, err := tx.CancelTask(v5NoSnap, mergeIDs.UUID(), true)
		return err
	}), store.CodeMergeActive)

	// The time-limit check, long after the migration: a null budget is "not
	// started", never expired. The first admission starts it.
	clock.Advance(1000 * time.Hour)
	e.update(func(tx *store.Tx) error { return tx.SetTaskStatus(v5Open, words.StatusQueued) })
	a := e.admit(v5Open, words.KindReview)
	task = e.task(v5Open)
	if task.BudgetDeadline == nil || !task.BudgetDeadline.Equal(clock.Now().Add(2*time.Hour)) {
		t.Fatalf("budget after the first admission = %v", task.BudgetDeadline)
	}
	// Retry: not requeue-pending, not expired.
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	e.update(func(tx *store.Tx) error {
		return tx.Finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "provider error"})
	})
	sv := e.task(v5Open).StateVersion
	if err := s.View(func(tx *store.Tx) error {
		_, err := tx.CheckRetry(v5Open, a.ID, sv)
		return err
	}); err != nil {
		t.Fatalf("retry of the migrated task: %v", err)
	}
	// A closed migrated task can never change to merged or admit work.
	wantRefusal(t, s.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(v5Merged, mergeIDs.UUID()) }), store.CodeTaskClosed)
}

// Reopening a migrated database does not migrate again; an unknown v5 merge
// state stops the migration and leaves the file at v5.
func TestMigrateV5OnceAndAllOrNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v5.db")
	writeV5(t, path)
	for i := 0; i < 2; i++ {
		s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		s.Close()
	}
	db, _ := sql.Open("sqlite", "file:"+path)
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM feedback_events`).Scan(&n)
	db.Close()
	if n != 1 {
		t.Fatalf("%d events after two opens", n)
	}

	bad := filepath.Join(t.TempDir(), "bad.db")
	writeV5(t, bad)
	db, _ = sql.Open("sqlite", "file:"+bad)
	if _, err := db.Exec(`INSERT INTO merge_attempts VALUES ('44444444-4444-4444-8444-444444444444', 'repo/open/plan', 'pending-review', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := store.Open(bad, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)}); err == nil {
		s.Close()
		t.Fatal("a v5 merge state the v6 table does not know was migrated")
	}
	db, _ = sql.Open("sqlite", "file:"+bad)
	defer db.Close()
	var v int
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	var tasks int
	err := db.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&tasks)
	if v != 5 || err == nil {
		t.Fatalf("a failed migration left user_version %d and a tasks table (%v)", v, err)
	}
	var merges int
	if err := db.QueryRow(`SELECT COUNT(*) FROM merge_attempts`).Scan(&merges); err != nil || merges != 4 {
		t.Fatalf("v5 merge attempts after a failed migration: %d (%v)", merges, errors.Unwrap(err))
	}
}
