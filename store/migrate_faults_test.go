package store_test

// Failures inside the v5 → v6 migration. The migration is one transaction
// ("Backfill in the same migration transaction", the contract's "Proposed
// storage additions"): whatever fails inside it, Open reports that error and
// the file keeps its v5 rows, schema and version, so that a later Open
// migrates it from the start. The only change a failed Open leaves is the
// journal mode: every open of the Store puts the file in WAL mode (DSN)
// before it reads the schema version, and that is a property of the file,
// not a row, a table or a version.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/google/go-cmp/cmp"
)

// TestEveryMigrationStatementErrorPropagates is the statement-fault sweep
// of each migration (v5 → v7, v6 → v7) and of a new database's creation: starting from the migration tests'
// fixture of the older version, it fails the k-th statement the migration
// runs (k = 1, 2, …; the store/statement failpoint, at once or, for a
// query, after its first row) until the migration runs through without
// reaching a k-th one. Each failed Open must return that storage error (not
// another error a later statement met because the failure was ignored, and
// never success), and leave the file's rows, schema and version exactly as
// the older version had them. The last Open, with no fault, on the same file
// that saw every failure, must migrate it exactly as an Open of an untouched
// fixture does.
//
// kills: mutant/migrate-rename-error-ignored
func TestEveryMigrationStatementErrorPropagates(t *testing.T) {
	for _, fx := range []struct {
		name  string
		write func(*testing.T, string)
	}{{"v5", writeV5}, {"v6", writeV6}, {"new", writeNew}} {
		t.Run(fx.name, func(t *testing.T) {
			sweepMigration(t, fx.write)
		})
	}
}

// writeNew leaves an empty file: a new database, at version 0.
func writeNew(t *testing.T, path string) {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sweepMigration(t *testing.T, write func(*testing.T, string)) {
	ref := filepath.Join(t.TempDir(), "old.db")
	write(t, ref)
	s, err := store.Open(ref, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatalf("Open with no fault: %v", err)
	}
	s.Close()
	migrated := fileDump(&env{t: t, path: ref})

	for _, mode := range faultModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			e := &env{t: t, path: filepath.Join(t.TempDir(), "old.db"), clock: newClock(), fp: failpoints.New()}
			write(t, e.path)
			old := fileDump(e)
			for k := 1; ; k++ {
				terms := "1*return" + mode.value
				if k > 1 {
					terms = strconv.Itoa(k-1) + "*off->" + terms
				}
				if err := e.fp.Enable("store/statement", terms); err != nil {
					t.Fatal(err)
				}
				s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(1), Failpoints: e.fp})
				if err == nil {
					s.Close()
				}
				reached := e.faultSpent(k)
				e.fp.Disable("store/statement")
				if !reached {
					if k == 1 {
						t.Fatal("the migration ran no statement")
					}
					if err != nil {
						t.Fatalf("with no fault (%d statements): %v", k-1, err)
					}
					if diff := cmp.Diff(migrated, fileDump(e)); diff != "" {
						t.Fatalf("after %d failed migrations, the one with no fault migrated otherwise than from an untouched file:\n%s", k-1, diff)
					}
					t.Logf("%d statements, each failed in turn", k-1)
					return
				}
				switch {
				case err == nil:
					t.Errorf("statement %d failed, yet Open migrated the file", k)
				case !strings.Contains(err.Error(), "failpoint store/statement"):
					t.Errorf("statement %d failed, and Open returned another error: %v", k, err)
				}
				if diff := cmp.Diff(old, fileDump(e)); diff != "" {
					t.Fatalf("statement %d failed (%v), and the older file changed:\n%s", k, err, diff)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestMigrationThatCannotBeginIsAnError: another SQLite client (the review
// screen's server, a shell) holds the v5 file's write lock for longer than
// the busy timeout, so the migration's transaction cannot begin. Open
// reports that error and migrates nothing; once the lock is released, the
// next Open migrates the file.
//
// kills: mutant/migrate-begin-error-ignored
func TestMigrationThatCannotBeginIsAnError(t *testing.T) {
	t.Parallel() // it waits out the 5 s busy timeout
	e := &env{t: t, path: filepath.Join(t.TempDir(), "v5.db")}
	writeV5(t, e.path)
	// WAL, as the Store would leave it: the other client's write lock then
	// lets Open read the schema version, and the migration's BEGIN
	// IMMEDIATE is what waits.
	e.rawExec(`PRAGMA journal_mode = WAL`)
	v5 := fileDump(e)
	ctx := context.Background()
	other, err := e.rawDB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(e.path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err == nil {
		s.Close()
		t.Fatal("Open migrated a file whose write lock another client holds")
	}
	t.Logf("Open: %v", err)
	if !strings.Contains(err.Error(), "locked") {
		t.Errorf("Open: %v, want the locked database's error", err)
	}
	if _, err := other.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if diff := cmp.Diff(v5, fileDump(e)); diff != "" {
		t.Fatalf("a migration that could not begin changed the file:\n%s", diff)
	}
	s, err = store.Open(e.path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatalf("Open after the lock was released: %v", err)
	}
	s.Close()
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Fatalf("user_version = %d after the lock was released", v)
	}
}

// TestMigrateV5RefusesAnotherProgramsDatabase: a file at schema version 5
// without a plans table is not the review screen's database ("v5 data only
// comes from the review screen", the backfill table). Open refuses it with
// that reason and adds nothing to it: no v6 table, no version 6.
//
// kills: mutant/migrate-without-plans-table
func TestMigrateV5RefusesAnotherProgramsDatabase(t *testing.T) {
	e := &env{t: t, path: filepath.Join(t.TempDir(), "other.db")}
	e.rawExec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`)
	e.rawExec(`INSERT INTO notes (text) VALUES ('mine')`)
	e.rawExec(`PRAGMA user_version = 5`)
	before := fileDump(e)
	s, err := store.Open(e.path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err == nil {
		s.Close()
		t.Fatal("Open migrated a version-5 file without a plans table")
	}
	if !strings.Contains(err.Error(), "not a review-screen database") {
		t.Errorf("Open: %v, want it to say the file is not a review-screen database", err)
	}
	if diff := cmp.Diff(before, fileDump(e)); diff != "" {
		t.Fatalf("a refused migration changed the file:\n%s", diff)
	}
}

// TestMigrateV5UnreadableMergedTaskIsAnError: the migration reads back the
// merged tasks to give each its task-closed event. A tasks row it cannot
// read (here a merged row with a NULL key, in a tasks table the v5 file
// already held, as another build could have left it: CREATE TABLE IF NOT
// EXISTS keeps it, and a TEXT PRIMARY KEY admits NULL) fails the migration
// with that read's error, and the file stays at v5. It is never read half
// (an empty key would look for a plan "" and report that instead).
//
// kills: mutant/migrate-merged-scan-error-ignored
func TestMigrateV5UnreadableMergedTaskIsAnError(t *testing.T) {
	e := &env{t: t, path: filepath.Join(t.TempDir(), "v5.db")}
	writeV5(t, e.path)
	e.rawExec(`CREATE TABLE tasks (
		plan_key TEXT PRIMARY KEY, status TEXT NOT NULL, requeue_pending INTEGER NOT NULL DEFAULT 0,
		rebase_in_progress TEXT, budget_deadline INTEGER, cancel_requested TEXT,
		state_version INTEGER NOT NULL DEFAULT 0, context_generation INTEGER NOT NULL DEFAULT 0,
		assignment_id TEXT NOT NULL DEFAULT 'unassigned', referenced_code_hash TEXT NOT NULL DEFAULT 'none',
		current_attempt_id TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`)
	e.rawExec(`INSERT INTO tasks (plan_key, status, created_at, updated_at) VALUES (NULL, 'merged', 0, 0)`)
	before := fileDump(e)
	s, err := store.Open(e.path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err == nil {
		s.Close()
		t.Fatal("Open migrated a file whose merged task cannot be read")
	}
	if !strings.Contains(err.Error(), "converting NULL to string") {
		t.Errorf("Open: %v, want the unreadable row's error", err)
	}
	if diff := cmp.Diff(before, fileDump(e)); diff != "" {
		t.Fatalf("a failed migration changed the file:\n%s", diff)
	}
}

// fileDump is the file's schema (every table, index and trigger, with its
// SQL) followed by dump's rows and schema version.
func fileDump(e *env) []string {
	e.t.Helper()
	rows, err := e.rawDB().Query(`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s on %s: %s", typ, name, table, text))
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return append(out, e.dump()...)
}
