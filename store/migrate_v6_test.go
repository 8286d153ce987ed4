package store_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// schemaV6Part is the part of the v6 schema, as v6 builds wrote it, that the
// v6 → v7 migration alters (plan_items, without its spec) and that these
// tests read back (plans and tasks). The migration adds the rest of the
// schema, as every open of a file that lacks part of it does.
const schemaV6Part = `
CREATE TABLE plans (
	key            TEXT PRIMARY KEY,
	repository_id  TEXT NOT NULL,
	task_id        TEXT NOT NULL,
	plan_id        TEXT NOT NULL,
	revision       INTEGER NOT NULL,
	snapshot_id    TEXT NOT NULL,
	review_version INTEGER NOT NULL DEFAULT 0,
	UNIQUE (repository_id, task_id, plan_id)
);
CREATE TABLE plan_items (
	plan_key  TEXT NOT NULL REFERENCES plans(key),
	revision  INTEGER NOT NULL,
	item      INTEGER NOT NULL,
	title     TEXT NOT NULL,
	run_again INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (plan_key, revision, item)
);
CREATE TABLE tasks (
	plan_key             TEXT PRIMARY KEY REFERENCES plans(key),
	status               TEXT NOT NULL,
	requeue_pending      INTEGER NOT NULL DEFAULT 0,
	rebase_in_progress   TEXT,
	budget_deadline      INTEGER,
	cancel_requested     TEXT,
	state_version        INTEGER NOT NULL DEFAULT 0,
	context_generation   INTEGER NOT NULL DEFAULT 0,
	assignment_id        TEXT NOT NULL DEFAULT 'unassigned',
	referenced_code_hash TEXT NOT NULL DEFAULT 'none',
	current_attempt_id   TEXT,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL,
	FOREIGN KEY (plan_key, current_attempt_id) REFERENCES attempts(plan_key, id) DEFERRABLE INITIALLY DEFERRED
);
PRAGMA user_version = 6;
`

const v6Key = "repo/v6/plan"

// writeV6 writes a v6 database: a task in review whose plan is at revision
// 2, after a rejection that marked item 1 to run again.
func writeV6(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{schemaV6Part,
		`INSERT INTO plans VALUES ('repo/v6/plan', 'repo', 'v6', 'plan', 2, 's1', 3)`,
		`INSERT INTO plan_items VALUES ('repo/v6/plan', 1, 1, 'one', 0), ('repo/v6/plan', 1, 2, 'two', 0),
			('repo/v6/plan', 2, 1, 'one', 1), ('repo/v6/plan', 2, 2, 'two', 0)`,
		`INSERT INTO tasks (plan_key, status, state_version, context_generation, created_at, updated_at)
			VALUES ('repo/v6/plan', 'in review', 5, 2, 100, 200)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("v6 fixture: %v", err)
		}
	}
}

// v6Rows is every v6 column of the fixture's rows, read on a connection of
// its own: the migration must keep each one.
func v6Rows(e *env) []string {
	e.t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT * FROM plans ORDER BY key`,
		`SELECT plan_key, revision, item, title, run_again FROM plan_items ORDER BY plan_key, revision, item`,
		`SELECT plan_key, status, requeue_pending, rebase_in_progress, budget_deadline, cancel_requested, state_version,
			context_generation, assignment_id, referenced_code_hash, current_attempt_id, created_at, updated_at FROM tasks ORDER BY plan_key`,
	} {
		rows, err := e.rawDB().Query(q)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			out = append(out, fmt.Sprintf("%q", vals))
		}
		rows.Close()
	}
	return out
}

// TestMigrateV6KeepsRows: a v6 database opens as v7; every row keeps every
// v6 column, and the items v6 wrote read back with a nil spec (items known
// by their titles alone). The migrated task then imports a plan document's
// items with their specs, and a second open migrates nothing.
func TestMigrateV6KeepsRows(t *testing.T) {
	e := &env{t: t, path: filepath.Join(t.TempDir(), "v6.db"), clock: newClock(), fp: failpoints.New()}
	writeV6(t, e.path)
	before := v6Rows(e)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("Open(v6): %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d, want 11", v)
	}
	if after := v6Rows(e); !reflect.DeepEqual(before, after) {
		t.Fatalf("the migration changed v6 rows:\nbefore %q\nafter  %q", before, after)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM plan_items WHERE spec IS NOT NULL`); n != 0 {
		t.Fatalf("%d migrated items have a spec", n)
	}
	want := []store.PlanItem{{Item: 1, Title: "one", RunAgain: true}, {Item: 2, Title: "two"}}
	if got := e.planItems(v6Key, 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("PlanItems(revision 2) = %+v, want %+v", got, want)
	}
	// The migrated task takes a plan document's items.
	task := e.task(v6Key)
	items := planItems(t, "three", "four")
	var rev int
	e.update(func(tx *store.Tx) (err error) { rev, err = tx.ImportPlan(v6Key, 2, items); return err })
	got := e.planItems(v6Key, 3)
	if rev != 3 || len(got) != 2 || string(got[0].Spec) != string(items[0].Spec) || string(got[1].Spec) != string(items[1].Spec) {
		t.Fatalf("ImportPlan on the migrated task: revision %d, items %+v", rev, got)
	}
	if after := e.task(v6Key); after.ContextGeneration != task.ContextGeneration+1 || after.StateVersion != task.StateVersion+1 {
		t.Fatalf("generation %d → %d, state version %d → %d; want +1 each", task.ContextGeneration, after.ContextGeneration,
			task.StateVersion, after.StateVersion)
	}
	// Reopening migrates nothing again.
	s.Close()
	dump := fileDump(e)
	s2, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s2.Close()
	if diff := cmp.Diff(dump, fileDump(e)); diff != "" {
		t.Fatalf("a second open changed the file:\n%s", diff)
	}
}

// TestMigrateV7AddsTheOwedFinding: a v7 file (tasks without the owed
// finding's columns) opens as v9 with its rows kept and nothing owed;
// the columns then hold what OweFinding writes.
func TestMigrateV7AddsTheOwedFinding(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	e.s.Close()
	e.rawExec(`ALTER TABLE tasks DROP COLUMN owed_finding; ALTER TABLE tasks DROP COLUMN owed_attempt; PRAGMA user_version = 7`)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("Open(v7): %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d, want 11", v)
	}
	task, err := s.Task(key)
	if err != nil || task.OwedFinding != "" || task.OwedAttempt != "" {
		t.Fatalf("the migrated task: %+v, %v; want it kept, nothing owed", task, err)
	}
}

// TestMigrateV8AddsScopeCheckpoints: a v8 file (without the scope
// checkpoint tables) opens as v11 with its rows kept, no checkpoint, and
// the tables ready for one.
func TestMigrateV8AddsScopeCheckpoints(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	e.s.Close()
	e.rawExec(`DROP TABLE continuation_approvals; DROP TABLE checkpoints; PRAGMA user_version = 8`)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("Open(v8): %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d, want 11", v)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM checkpoints`) + e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != 0 {
		t.Fatalf("%d checkpoint rows after the migration, want none", n)
	}
	if _, err := s.Task(key); err != nil {
		t.Fatalf("the migrated task: %v", err)
	}
}

// TestMigrateV9AddsTheLanesTables: a v9 file (without the questions and
// planning requests tables) opens as v11 with its rows kept and both
// tables empty.
func TestMigrateV9AddsTheLanesTables(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	e.s.Close()
	e.rawExec(`DROP TABLE questions; DROP TABLE plan_requests; DROP TABLE merge_attempts;
		CREATE TABLE merge_attempts (id TEXT PRIMARY KEY, plan_key TEXT NOT NULL REFERENCES tasks(plan_key),
			state TEXT NOT NULL CHECK (state IN ('submitting','queued','merged','removed','failed')),
			created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
		CREATE INDEX merge_attempts_by_task ON merge_attempts(plan_key, created_at);
		INSERT INTO merge_attempts VALUES ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa1', '` + key + `', 'queued', 1, 2);
		PRAGMA user_version = 9`)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("Open(v9): %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d, want 11", v)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM questions`) + e.rawInt(`SELECT COUNT(*) FROM plan_requests`); n != 0 {
		t.Fatalf("%d rows in the new tables after the migration, want none", n)
	}
	// The merge attempt keeps its state and gains the coordinator's
	// columns, empty, needing no fresh review.
	if n := e.rawInt(`SELECT COUNT(*) FROM merge_attempts WHERE state = 'queued' AND pr_number IS NULL AND requires_fresh_review = 0`); n != 1 {
		t.Fatalf("%d migrated merge attempts as written, want 1", n)
	}
	if _, err := s.Task(key); err != nil {
		t.Fatalf("the migrated task: %v", err)
	}
}

// TestMigrateV10AddsTheRunReviewVersion: a v10 file (whose tasks have no
// run_review_version) opens as v11 with its tasks kept and no plan run's
// version known, so I3's requeue falls back to the present review version.
func TestMigrateV10AddsTheRunReviewVersion(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	e.s.Close()
	e.rawExec(`ALTER TABLE tasks DROP COLUMN run_review_version; PRAGMA user_version = 10`)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
	if err != nil {
		t.Fatalf("Open(v10): %v", err)
	}
	e.s = s
	t.Cleanup(func() { s.Close() })
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d, want 11", v)
	}
	task, err := s.Task(key)
	if err != nil || task.Status != words.StatusQueued || task.RunReviewVersion != nil {
		t.Fatalf("the migrated task: %+v, %v; want it kept, queued, with no run's review version", task, err)
	}
}
