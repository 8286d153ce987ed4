package store_test

// Storage faults the statement-fault sweep does not reach: a row whose
// values cannot be read back, a database file that cannot be opened, and a
// statement that cannot be prepared.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestUnreadableRowIsAnError: a row whose values cannot be read back into
// their fields (a value of the wrong type, a NULL where the build wants
// text, an attempt's captured context that is not JSON: a database another
// build or a failing disk wrote) makes its read fail. It is never returned
// half-read: an attempt with a zero captured context would look stale, and
// a plan item, choice, finding or diagnostic reference with zero fields
// would be acted on as if it were real.
//
// kills: mutant/unreadable-context-ignored mutant/plan-item-scan-error-ignored
func TestUnreadableRowIsAnError(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt func(e *env, key string, a store.Attempt)
		read    func(tx *store.Tx, key string, a store.Attempt) error
	}{
		{"attempt context", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE attempts SET context = 'not JSON' WHERE id = ?`, a.ID)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Attempt(a.ID); return err }},
		{"attempts list", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE attempts SET context = '{' WHERE id = ?`, a.ID)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Attempts(key); return err }},
		{"plan item", func(e *env, key string, a store.Attempt) {
			e.rawExec(`UPDATE plan_items SET run_again = 'sometimes' WHERE plan_key = ? AND item = 2`, key)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.PlanItems(key, 1); return err }},
		{"choice", func(e *env, key string, a store.Attempt) {
			e.update(func(tx *store.Tx) error { return tx.AcceptSegment(key, faultIDs.UUID(), "segment") })
			e.rawExec(`UPDATE choices SET review_version = 'late' WHERE plan_key = ?`, key)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Choices(key); return err }},
		{"finding", func(e *env, key string, a store.Attempt) {
			// A findings table without this build's NOT NULL, as another
			// build could have left it (CREATE TABLE IF NOT EXISTS keeps it).
			e.rawExec(`DROP TABLE findings`)
			e.rawExec(`CREATE TABLE findings (plan_key TEXT NOT NULL, finding_id TEXT NOT NULL, text TEXT, status TEXT NOT NULL DEFAULT 'open', PRIMARY KEY (plan_key, finding_id))`)
			e.rawExec(`INSERT INTO findings (plan_key, finding_id, text) VALUES (?, 'f1', NULL)`, key)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.Findings(key); return err }},
		{"diagnostic reference", func(e *env, key string, a store.Attempt) {
			// attempts.id is a TEXT PRIMARY KEY of a rowid table, which
			// SQLite lets hold NULL.
			e.rawExec(`UPDATE attempts SET diagnostic_ref = 'x.diff', id = NULL WHERE id = ?`, a.ID)
		}, func(tx *store.Tx, key string, a store.Attempt) error { _, err := tx.DiagnosticRefs(); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.admit(key, words.KindReview)
			c.corrupt(e, key, a)
			if err := e.s.View(func(tx *store.Tx) error { return c.read(tx, key, a) }); err == nil {
				t.Fatalf("an unreadable %s was read without an error", c.name)
			}
		})
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
	for i := 0; i < 3; i++ {
		if err := add("f1"); err == nil || !strings.Contains(err.Error(), "findings") {
			t.Fatalf("run %d without the table: %v, want the missing table's error", i+1, err)
		}
	}
	e.rawExec(`ALTER TABLE findings_away RENAME TO findings`)
	for _, id := range []string{"f1", "f2"} {
		if err := add(id); err != nil {
			t.Fatalf("with the table back: %v", err)
		}
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM findings WHERE plan_key = ?`, key); n != 2 {
		t.Fatalf("%d findings, want 2", n)
	}
}
