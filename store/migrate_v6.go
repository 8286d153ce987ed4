package store

import "fmt"

// migrateV6 moves a v6 database to v9 in one transaction: plan_items gains
// its spec column (each item's canonical JSON, plan.Item.Spec). The rows
// v6 wrote keep a NULL spec: PlanItems reads them with a nil Spec, items
// known by their titles alone. Then, as every open of a current database
// does, it adds the tables and indexes a v6 file created before they
// existed lacks. Any failure rolls everything back and leaves the file at
// v6, so that a later Open migrates it from the start.
func (s *Store) migrateV6() error {
	return s.migrateFrom(6, `ALTER TABLE plan_items ADD COLUMN spec TEXT`, addOwedFinding)
}

// migrateV7 moves a v7 database to v9: tasks gains the owed safety
// finding's columns, NULL on every row (nothing is owed).
func (s *Store) migrateV7() error { return s.migrateFrom(7, addOwedFinding) }

// migrateV8 moves a v8 database to v9: the scope checkpoint tables are
// new, and migrateFrom adds them from the schema.
func (s *Store) migrateV8() error { return s.migrateFrom(8) }

// migrateV9 moves a v9 database to v10: merge_attempts gains the merge
// coordinator's columns (mergeColumns, as every migration from an older
// version does), and the questions and planning requests tables are new
// (migrateFrom adds them from the schema).
func (s *Store) migrateV9() error { return s.migrateFrom(9) }

// migrateV10 moves a v10 database to v11: tasks gains run_review_version
// (taskColumns, as every migration from an older version does), NULL on
// every row: no plan run's version is known, and I3's requeue falls back
// to the present review version, as it did before.
func (s *Store) migrateV10() error { return s.migrateFrom(10) }

// taskColumns are the columns of tasks added after v8's owed finding.
var taskColumns = [][2]string{
	{"run_review_version", "INTEGER"},
}

// mergeColumns are v10's columns of merge_attempts: a row written before
// has no pull request, head or action (NULL), needs no fresh review, and
// keeps its state. migrateFrom adds each one a file's table lacks (SQLite
// has no ADD COLUMN IF NOT EXISTS); a file without the table gets the
// whole of it from the schema.
var mergeColumns = [][2]string{
	{"pr_repo", "TEXT"},
	{"pr_number", "INTEGER"},
	{"head_sha", "TEXT"},
	{"review_version", "INTEGER"},
	{"action_id", "TEXT"},
	{"reason", "TEXT"},
	{"requires_fresh_review", "INTEGER NOT NULL DEFAULT 0"},
}

// addMissingColumns adds each of columns that table lacks; a missing
// table is left to the schema.
func (t *Tx) addMissingColumns(table string, columns [][2]string) error {
	rows, err := t.queryOnce(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(have) == 0 {
		return nil
	}
	for _, c := range columns {
		if !have[c[0]] {
			if err := t.execOnce(fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, table, c[0], c[1])); err != nil {
				return err
			}
		}
	}
	return nil
}

// addOwedFinding is v8's change: the evidence and the explicit owed marker
// of a safety finding owed at a human gate.
const addOwedFinding = `ALTER TABLE tasks ADD COLUMN owed_finding TEXT; ALTER TABLE tasks ADD COLUMN owed_attempt TEXT`

// migrateFrom runs a migration's changes from version v, then adds what
// the current schema has and the file lacks, and stamps the version: one
// transaction, so any failure leaves the file at v for a later Open to
// migrate from the start.
func (s *Store) migrateFrom(v int, changes ...string) error {
	sqlTx, err := s.db.BeginTx(s.ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate v%d: %w", v, err)
	}
	defer sqlTx.Rollback()
	t := &Tx{s: s, tx: sqlTx}
	for _, q := range changes {
		if err := t.execOnce(q); err != nil {
			return fmt.Errorf("store: migrate v%d: %w", v, err)
		}
	}
	if err := t.addMissingColumns("merge_attempts", mergeColumns); err != nil {
		return fmt.Errorf("store: migrate v%d: %w", v, err)
	}
	if err := t.addMissingColumns("tasks", taskColumns); err != nil {
		return fmt.Errorf("store: migrate v%d: %w", v, err)
	}
	for _, q := range []string{schemaIfMissing(), fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)} {
		if err := t.execOnce(q); err != nil {
			return fmt.Errorf("store: migrate v%d: %w", v, err)
		}
	}
	return sqlTx.Commit()
}
