package store_test

// Storage faults the statement-fault sweep does not reach: a row whose
// values cannot be read back, a database file that cannot be opened or
// completed, a statement that cannot be prepared, a closed store, and an ID
// source that gets an attempt ID wrong.

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestUnreadableRowIsAnError: a row whose values cannot be read back into
// their fields (a value of the wrong type, a NULL where the build wants
// text, an attempt's captured context or a saved response that is not JSON:
// a database another build or a failing disk wrote) makes its read fail with
// that error. It is never returned half-read (an attempt with a zero
// captured context would look stale; a plan item, choice, finding, note,
// approval, merge attempt or saved response with zero fields would be acted
// on as if it were real), and never turned into a refusal.
//
// kills: mutant/unreadable-context-ignored mutant/plan-item-scan-error-ignored
// Kills the sweep's store/questions.go:Tx.FailLeftoverQuestions:ignore-error:a6bcae9d
// and store/planrun.go:Tx.StaleApprovals:ignore-error:fb58bef3 (seed 8675309).
func TestUnreadableRowIsAnError(t *testing.T) {
	inView := func(read func(tx *store.Tx, key string, a store.Attempt) error) func(e *env, key string, a store.Attempt) error {
		return func(e *env, key string, a store.Attempt) error {
			return e.s.View(func(tx *store.Tx) error { return read(tx, key, a) })
		}
	}
	for _, c := range []struct {
		name    string
		corrupt func(e *env, key string, a store.Attempt)
		read    func(e *env, key string, a store.Attempt) error
	}{
		{"attempt context", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE attempts SET context = 'not JSON' WHERE id = ?`, a.ID)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Attempt(a.ID); return err })},
		{"attempts list", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE attempts SET context = '{' WHERE id = ?`, a.ID)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Attempts(key); return err })},
		{"plan item", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE plan_items SET run_again = 'sometimes' WHERE plan_key = ? AND item = 2`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.PlanItems(key, 1); return err })},
		{"choice", func(e *env, key string, a store.Attempt) {
			e.update(func(tx *store.Tx) error { return tx.AcceptSegment(key, faultIDs.UUID(), "segment") })
			e.rawExec(`UPDATE choices SET review_version = 'late' WHERE plan_key = ?`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Choices(key); return err })},
		{"note", func(e *env, key string, a store.Attempt) {
			e.update(func(tx *store.Tx) error { _, err := tx.ChangeNote(key, faultIDs.UUID(), 1, "a note"); return err })
			e.rawExec(`UPDATE notes SET revision = 'first' WHERE plan_key = ?`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Notes(key); return err })},
		{"finding", func(e *env, key string, a store.Attempt) {
			// A findings table without this build's NOT NULL, as another
			// build could have left it (CREATE TABLE IF NOT EXISTS keeps it).
			e.rawExec(`DROP TABLE findings`)
			e.rawExec(`CREATE TABLE findings (plan_key TEXT NOT NULL, finding_id TEXT NOT NULL, text TEXT, status TEXT NOT NULL DEFAULT 'open', PRIMARY KEY (plan_key, finding_id))`)
			e.rawExec(`INSERT INTO findings (plan_key, finding_id, text) VALUES (?, 'f1', NULL)`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Findings(key); return err })},
		{"ledger entry", func(e *env, key string, a store.Attempt) {
			e.rawExec(`DROP TABLE history`)
			e.rawExec(`CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, plan_key TEXT NOT NULL, attempt_id TEXT, commit_sha TEXT, created_at INTEGER NOT NULL)`)
			e.rawExec(`INSERT INTO history (plan_key, commit_sha, created_at) VALUES (?, NULL, 0)`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.History(key); return err })},
		{"feedback event", func(e *env, key string, a store.Attempt) {
			e.rawExec(`INSERT INTO feedback_events (plan_key, action_id, plan_revision, snapshot_id, kind, source_ref, created_at)
				VALUES (?, ?, 'one', 'snap-1', ?, ?, 0)`, key, faultIDs.UUID(), words.EventTaskClosed, key)
		}, func(e *env, key string, a store.Attempt) error {
			parts := strings.Split(key, "/")
			_, err := e.s.FeedbackEvents(store.Identity{RepositoryID: parts[0], TaskID: parts[1], PlanID: parts[2]})
			return err
		}},
		{"merge attempt", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE tasks SET status = 'in review' WHERE plan_key = ?`, key)
			e.rawExec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at) VALUES (NULL, ?, 'merged', 0, 0)`, key)
		}, func(e *env, key string, a store.Attempt) error {
			return e.s.Update(func(tx *store.Tx) error { _, err := tx.ReconcileMerged(); return err })
		}},
		{"rebase marker", func(e *env, key string, a store.Attempt) {
			// tasks.plan_key is a TEXT PRIMARY KEY of a rowid table, which
			// SQLite lets hold NULL.
			e.rawExec(`UPDATE tasks SET rebase_in_progress = '{}', plan_key = NULL WHERE plan_key = ?`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.RebasesInProgress(); return err })},
		{"requeue candidate", func(e *env, key string, a store.Attempt) {
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonShutdown, "") })
			e.update(func(tx *store.Tx) error {
				return tx.Finish(a.ID, store.Terminal{State: words.Cancelled, FirstReason: words.ReasonShutdown})
			})
			e.rawExec(`UPDATE tasks SET plan_key = NULL WHERE plan_key = ?`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.RequeueCandidates(); return err })},
		{"diagnostic reference", func(e *env, key string, a store.Attempt) {
			// attempts.id is a TEXT PRIMARY KEY of a rowid table too.
			e.rawExec(`UPDATE attempts SET diagnostic_ref = 'x.diff', id = NULL WHERE id = ?`, a.ID)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.DiagnosticRefs(); return err })},
		{"leftover question", func(e *env, key string, a store.Attempt) {
			// questions.id is a TEXT PRIMARY KEY of a rowid table too: the
			// question's ID would come back empty, and failing "no
			// question" would answer a damaged row with a refusal.
			id := e.ask(key, nil)
			e.rawExec(`UPDATE questions SET id = NULL WHERE id = ?`, id)
		}, func(e *env, key string, a store.Attempt) error {
			return e.s.Update(func(tx *store.Tx) error { _, err := tx.FailLeftoverQuestions("Server stopped"); return err })
		}},
		{"stale approval", func(e *env, key string, a store.Attempt) {
			// An approval from before the latest choice: the gate's own read
			// (review_version > the latest choice) passes it by, the list of
			// stale approvals reads it. Read as item 0, it would mark an
			// item the plan does not have.
			e.approveAll(key)
			e.rawExec(`UPDATE approvals SET item = 'second', review_version = 0 WHERE plan_key = ? AND item = 2`, key)
		}, inView(func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.StaleApprovals(key); return err })},
		{"saved response", func(e *env, key string, a store.Attempt) {
			e.rawExec(`INSERT INTO user_actions (plan_key, action_id, kind, request_hash, response, created_at) VALUES (?, ?, 'note', ?, '{', 0)`,
				key, actionA, store.RequestHash("note", "again"))
		}, func(e *env, key string, a store.Attempt) error {
			_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "note", Request: "again"},
				func(tx *store.Tx) (store.Response, error) { return store.Response{}, nil })
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.running(key, words.KindReview)
			c.corrupt(e, key, a)
			err := c.read(e, key, a)
			if err == nil {
				t.Fatalf("an unreadable %s was read without an error", c.name)
			}
			if code := store.RefusalCode(err); code != "" {
				t.Fatalf("an unreadable %s came back as the refusal %q (%v)", c.name, code, err)
			}
		})
	}
}

// TestUnreadableApprovalIsAnError: the approval gate meets an approvals row
// it cannot read: start fails with that error, never with the refusal "has
// no current approval" that start would record for good.
func TestUnreadableApprovalIsAnError(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	e.approveAll(key)
	e.rawExec(`UPDATE approvals SET item = 'second' WHERE plan_key = ? AND item = 2`, key)
	_, err := e.startPlan(key)
	if err == nil || store.RefusalCode(err) != "" {
		t.Fatalf("start over an unreadable approval: %v, want the read's error", err)
	}
}

// TestOpenNamesAFailedVersionRead: a file that is not a SQLite database is
// refused at the first read, of its schema version, with an error that says
// so, and the file is left exactly as it was (startup then "exits with its
// message").
//
// kills: mutant/open-hides-version-read-error
func TestOpenNamesAFailedVersionRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codeboost.db")
	junk := bytes.Repeat([]byte("not a database, "), 512)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a file that is not a database")
	}
	if !strings.Contains(err.Error(), "store: read schema version: ") {
		t.Errorf("Open: %v, want the failed read of the schema version named", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, junk) {
		t.Errorf("a refused open changed the file")
	}
}

// TestUnpreparableStatementStaysAnError: a statement the database cannot
// prepare (here: its table is missing) fails with an error each time it
// runs, and runs again once the table is back; the statement cache never
// keeps a failed preparation.
//
// kills: mutant/failed-preparation-cached
func TestUnpreparableStatementStaysAnError(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	e.rawExec(`ALTER TABLE findings RENAME TO findings_away`)
	add := func(id string) error {
		return e.s.Update(func(tx *store.Tx) error { return tx.AddFinding(key, id, "a problem") })
	}
	list := func() error {
		return e.s.View(func(tx *store.Tx) error { _, err := tx.Findings(key); return err })
	}
	for i := 0; i < 3; i++ {
		if err := add("f1"); err == nil || !strings.Contains(err.Error(), "findings") {
			t.Fatalf("run %d without the table: %v, want the missing table's error", i+1, err)
		}
		if err := list(); err == nil || !strings.Contains(err.Error(), "findings") {
			t.Fatalf("read %d without the table: %v, want the missing table's error", i+1, err)
		}
	}
	e.rawExec(`ALTER TABLE findings_away RENAME TO findings`)
	for _, id := range []string{"f1", "f2"} {
		if err := add(id); err != nil {
			t.Fatalf("with the table back: %v", err)
		}
	}
	if err := list(); err != nil {
		t.Fatalf("read with the table back: %v", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM findings WHERE plan_key = ?`, key); n != 2 {
		t.Fatalf("%d findings, want 2", n)
	}
}

// TestOpenRefusesASchemaItCannotComplete: a database whose tables this build
// cannot complete (a v9 file whose attempts table lacks the columns the
// v9 indexes name), migrate (a v6 file without the plan_items table the
// v6 migration alters, a v7 file without the tasks table the v7 one
// alters) or create (a file at version 0 that already
// holds a table of another shape, another program's database) is refused
// with the step that failed, and keeps its version. The version-0, v6 and
// v7 files gain no table (their creation and migration are one
// transaction); the v9 completion is additive and not one transaction, so the v9 file may
// keep the tables added before the failure (CREATE … IF NOT EXISTS: a later
// open adds the rest).
//
// kills: mutant/schema-create-error-ignored
func TestOpenRefusesASchemaItCannotComplete(t *testing.T) {
	for _, c := range []struct {
		name, setup, want string
		sameTables        bool
	}{
		{"v11 with an older attempts table", `CREATE TABLE attempts (id TEXT PRIMARY KEY); PRAGMA user_version = 11;`, "complete the v11 schema", false},
		{"v9 with another questions table", `CREATE TABLE questions (id TEXT PRIMARY KEY); PRAGMA user_version = 9;`, "migrate v9", true},
		{"v8 with another checkpoints table", `CREATE TABLE checkpoints (attempt_id TEXT PRIMARY KEY); PRAGMA user_version = 8;`, "migrate v8", true},
		{"v7 without tasks", `CREATE TABLE plans (key TEXT PRIMARY KEY); PRAGMA user_version = 7;`, "migrate v7", true},
		{"v6 without plan items", `CREATE TABLE plans (key TEXT PRIMARY KEY); PRAGMA user_version = 6;`, "migrate v6", true},
		{"another program's database", `CREATE TABLE plans (name TEXT); INSERT INTO plans VALUES ('mine');`, "create schema", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "codeboost.db")
			raw, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(c.setup); err != nil {
				t.Fatal(err)
			}
			var version int
			raw.QueryRow(`PRAGMA user_version`).Scan(&version)
			tables := func() string {
				var names []string
				rows, err := raw.Query(`SELECT name FROM sqlite_master ORDER BY name`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var n string
					rows.Scan(&n)
					names = append(names, n)
				}
				return strings.Join(names, " ")
			}
			before := tables()
			s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
			if err == nil {
				s.Close()
				t.Fatalf("Open accepted it")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open: %v, want %q named", err, c.want)
			}
			var after int
			raw.QueryRow(`PRAGMA user_version`).Scan(&after)
			if after != version || (c.sameTables && tables() != before) {
				t.Errorf("a refused open changed the file: version %d → %d, tables %q → %q", version, after, before, tables())
			}
		})
	}
}

// TestCallsAfterCloseFail: "Calls after Close fail" (Store.Close): reads and
// writes return an error, never a panic or a silent success.
//
// kills: mutant/view-ignores-begin-error
func TestCallsAfterCloseFail(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.s.Close()
	if _, err := e.s.Task(key); err == nil {
		t.Errorf("a read after Close succeeded")
	}
	if err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, words.StatusNeedsHuman) }); err == nil {
		t.Errorf("a write after Close succeeded")
	}
}

// badIDs is an ID source whose attempt IDs are not UUIDs.
type badIDs struct{ ids.Source }

func (badIDs) UUID() string { return "attempt-1" }

// TestAdmitRefusesAnAttemptIDThatIsNotAUUID: an attempt ID names the
// attempt's directory and labels; one the ID source got wrong is never
// written.
//
// kills: mutant/admit-unchecked-attempt-id
func TestAdmitRefusesAnAttemptIDThatIsNotAUUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codeboost.db")
	s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: badIDs{ids.NewSeeded(1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := store.Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}
	if err := s.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap", Items: []string{"one"}})
	}); err != nil {
		t.Fatal(err)
	}
	task, err := s.Task(id.Key())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(store.AdmitRequest{PlanKey: id.Key(), Kind: words.KindReview, ExpectedStateVersion: task.StateVersion,
		AttemptTimeout: time.Minute, Budget: time.Hour}); err == nil {
		t.Fatalf("Admit wrote an attempt whose ID is not a UUID")
	}
	if as, err := s.Attempts(id.Key()); err != nil || len(as) != 0 {
		t.Fatalf("attempts after the refused admission: %v %v", as, err)
	}
}

// TestUnreadableCheckpointIsAnError: LatestCheckpoint is "what GET
// /api/runner shows, read from rows alone"; a checkpoint whose scope paths
// are not JSON (a database another build or a failing disk wrote) is read
// as that error, never as a checkpoint with no scope paths (the scope the
// continuation approval covers would silently be empty), and never as a
// refusal (TestUnreadableRowIsAnError's rule).
// Its leaves are read the same way.
func TestUnreadableCheckpointIsAnError(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ scope, leaves, want string }{
		{"not JSON", "", "scope paths"},
		{"[]", "not JSON", "leaves"},
	} {
		key := e.newTask("")
		a := e.running(key, words.KindReview)
		var leaves any
		if c.leaves != "" {
			leaves = c.leaves
		}
		e.rawExec(`INSERT INTO checkpoints (attempt_id, plan_key, revision, item, commit_sha, scope_paths, leaves, created_at)
			VALUES (?, ?, 1, 1, 'c1', ?, ?, 0)`, a.ID, key, c.scope, leaves)
		var ok bool
		err := e.s.View(func(tx *store.Tx) (err error) { _, ok, err = tx.LatestCheckpoint(key); return err })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("a checkpoint whose %s are unreadable: %v (found %v)", c.want, err, ok)
		}
		if code := store.RefusalCode(err); code != "" {
			t.Fatalf("an unreadable checkpoint came back as the refusal %q (%v)", code, err)
		}
	}
}

// TestUnreadableRequestStopsTheMove: invalidatePlanRequests runs "in the
// transaction that moves the plan's revision or snapshot"; a pending
// request whose binding cannot be read back cannot be judged current or
// stale, so the move fails with that error (not a refusal) and rolls back:
// the plan keeps its revision and snapshot and the request row is as it
// was, never invalidated with a cause built from a zero binding.
func TestUnreadableRequestStopsTheMove(t *testing.T) {
	for _, c := range []struct {
		name string
		move func(tx *store.Tx, key string) error
	}{
		{"snapshot change", func(tx *store.Tx, key string) error { return tx.ChangeSnapshot(key, "snap-2") }},
		{"import", func(tx *store.Tx, key string) error {
			_, err := tx.ImportPlan(key, 1, []store.ItemInput{{Title: "only", Spec: []byte(`{"title":"only"}`)}})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			r := e.begin(key, store.ModeSuggestion)
			e.rawExec(`UPDATE plan_requests SET revision = 'first' WHERE id = ?`, r.ID)
			before := e.plan(key)
			err := e.s.Update(func(tx *store.Tx) error { return c.move(tx, key) })
			if err == nil {
				t.Fatal("the plan moved over a request it could not read")
			}
			if code := store.RefusalCode(err); code != "" {
				t.Fatalf("an unreadable request came back as the refusal %q (%v)", code, err)
			}
			if p := e.plan(key); p.Revision != before.Revision || p.SnapshotID != before.SnapshotID {
				t.Fatalf("plan moved to revision %d on %s despite the error", p.Revision, p.SnapshotID)
			}
			if st := e.rawString(`SELECT state || '|' || COALESCE(cause, '') FROM plan_requests WHERE id = ?`, r.ID); st != store.RequestPending+"|" {
				t.Fatalf("unreadable request became %q", st)
			}
		})
	}
}
