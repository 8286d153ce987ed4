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

// migrateV9 moves a v9 database to v10: the questions and planning
// requests tables are new, and migrateFrom adds them from the schema.
func (s *Store) migrateV9() error { return s.migrateFrom(9) }

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
	for _, q := range append(changes, schemaIfMissing(), fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)) {
		if err := t.execOnce(q); err != nil {
			return fmt.Errorf("store: migrate v%d: %w", v, err)
		}
	}
	return sqlTx.Commit()
}
