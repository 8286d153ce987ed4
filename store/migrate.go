package store

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/words"
)

// SchemaV5 is the part of the review screen's v5 schema that the v5 → v6
// migration reads: the plans, the snapshots they point at (with the head
// commit), and the merge attempts of the review screen's merge button. It is
// exported for fixtures; this build never creates a v5 database.
const SchemaV5 = `
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
CREATE TABLE snapshots (
	plan_key TEXT NOT NULL REFERENCES plans(key),
	id       TEXT NOT NULL,
	head     TEXT NOT NULL,
	PRIMARY KEY (plan_key, id)
);
CREATE TABLE merge_attempts (
	id         TEXT PRIMARY KEY,
	plan_key   TEXT NOT NULL REFERENCES plans(key),
	state      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
PRAGMA user_version = 5;
`

// migrateV5 moves a v5 database to the current schema in one transaction
// ("Proposed storage additions", v5 → v6, with v7's plan_items, which v5 does
// not have): it creates the v6 tables, backfills one tasks row per plans
// row exactly as the contract's backfill table says, moves the merge
// attempts into the v6 table, and gives a merged task its task-closed event
// keyed by the merge attempt's ID. Any failure rolls everything back and
// leaves the database at v5.
func (s *Store) migrateV5() error {
	tx, err := s.db.BeginTx(s.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	t := &Tx{s: s, tx: tx}
	exec := t.execOnce
	has := func(table string) (bool, error) {
		var n int
		err := t.queryRowOnce(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
		return n > 0, err
	}
	if ok, err := has("plans"); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("store: database schema version 5 without a plans table is not a review-screen database; not migrated")
	}
	hasMerges, err := has("merge_attempts")
	if err != nil {
		return err
	}
	hasSnapshots, err := has("snapshots")
	if err != nil {
		return err
	}
	if hasMerges {
		if err := exec(`ALTER TABLE merge_attempts RENAME TO merge_attempts_v5`); err != nil {
			return fmt.Errorf("store: migrate v5: %w", err)
		}
	}
	// The v6 tables; plans is kept as v5 wrote it (the same columns).
	if err := exec(schemaIfMissing()); err != nil {
		return fmt.Errorf("store: migrate v5: create the v6 tables: %w", err)
	}
	now := s.now().UnixMilli()
	latestMerge := `NULL`
	if hasMerges {
		latestMerge = `(SELECT m.state FROM merge_attempts_v5 m WHERE m.plan_key = p.key ORDER BY m.created_at DESC, m.rowid DESC LIMIT 1)`
	}
	head := `NULL`
	if hasSnapshots {
		head = `(SELECT sn.head FROM snapshots sn WHERE sn.plan_key = p.key AND sn.id = p.snapshot_id)`
	}
	// The backfill table, column by column.
	if err := exec(`INSERT INTO tasks (plan_key, status, requeue_pending, rebase_in_progress, budget_deadline, cancel_requested,
			state_version, context_generation, assignment_id, referenced_code_hash, current_attempt_id, created_at, updated_at)
		SELECT p.key, CASE WHEN `+latestMerge+` = 'merged' THEN ? ELSE ? END, 0, NULL, NULL, NULL,
			0, 0, 'unassigned', COALESCE(`+head+`, 'none'), NULL, ?, ?
		FROM plans p ORDER BY p.key`, words.StatusMerged, words.StatusInReview, now, now); err != nil {
		return fmt.Errorf("store: migrate v5: backfill tasks: %w", err)
	}
	if hasMerges {
		// An unknown v5 state fails the v6 CHECK: the migration stops
		// rather than guess whether GitHub may still merge.
		if err := exec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at)
			SELECT id, plan_key, state, created_at, updated_at FROM merge_attempts_v5 ORDER BY created_at, rowid`); err != nil {
			return fmt.Errorf("store: migrate v5: merge attempts: %w", err)
		}
		// A merged task's task-closed, keyed by its latest (merged) attempt.
		rows, err := t.queryOnce(`SELECT t.plan_key, (SELECT m.id FROM merge_attempts m WHERE m.plan_key = t.plan_key
				ORDER BY m.created_at DESC, m.rowid DESC LIMIT 1)
			FROM tasks t WHERE t.status = ? ORDER BY t.plan_key`, words.StatusMerged)
		if err != nil {
			return err
		}
		var merged [][2]string
		for rows.Next() {
			var key string
			var id sql.NullString
			if err := rows.Scan(&key, &id); err != nil {
				rows.Close()
				return err
			}
			merged = append(merged, [2]string{key, id.String})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range merged {
			if err := t.insertEvent(Event{PlanKey: m[0], ActionID: m[1], Kind: words.EventTaskClosed, SourceRef: m[0]}); err != nil {
				return fmt.Errorf("store: migrate v5: task-closed of %s: %w", m[0], err)
			}
		}
		for _, st := range t.local {
			st.Close()
		}
		if err := exec(`DROP TABLE merge_attempts_v5`); err != nil {
			return err
		}
	}
	if err := exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// execOnce, queryRowOnce and queryOnce are exec, queryRow and query for
// the statements a migration runs once: they are never prepared (a DDL text
// holds several statements, and none is worth a place in the statement
// cache), and each is subject to the store/statement failpoint as the Tx
// helpers are, so that every statement of a migration can be made to fail.
func (t *Tx) execOnce(q string, args ...any) error {
	if _, err := t.statementFault(); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(t.s.ctx, q, args...)
	return err
}

func (t *Tx) queryRowOnce(q string, args ...any) row {
	if _, err := t.statementFault(); err != nil {
		return row{err: err}
	}
	return row{r: t.tx.QueryRowContext(t.s.ctx, q, args...)}
}

func (t *Tx) queryOnce(q string, args ...any) (*rows, error) {
	afterFirstRow, fault := t.statementFault()
	if fault != nil && !afterFirstRow {
		return nil, fault
	}
	r, err := t.tx.QueryContext(t.s.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return &rows{Rows: r, fail: fault}, nil
}

// schemaIfMissing is the v6 schema with every CREATE made idempotent: it adds
// what a database lacks and leaves what it has. The v5 → v6 migration uses
// it, and so does every open of a v6 database: tables and indexes added to
// v6 after a database was created (the approvals table, the active-attempt
// index) are additive, so such a database gains them instead of failing.
func schemaIfMissing() string {
	return strings.NewReplacer("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ",
		"CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", "CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ").Replace(schema)
}
