package store

import "fmt"

// migrateV6 moves a v6 database to v7 in one transaction: plan_items gains
// its spec column (each item's canonical JSON, plan.Item.Spec). The rows
// v6 wrote keep a NULL spec: PlanItems reads them with a nil Spec, items
// known by their titles alone. Then, as every open of a current database
// does, it adds the tables and indexes a v6 file created before they
// existed lacks. Any failure rolls everything back and leaves the file at
// v6, so that a later Open migrates it from the start.
func (s *Store) migrateV6() error {
	sqlTx, err := s.db.BeginTx(s.ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate v6: %w", err)
	}
	defer sqlTx.Rollback()
	t := &Tx{s: s, tx: sqlTx}
	for _, q := range []string{
		`ALTER TABLE plan_items ADD COLUMN spec TEXT`,
		schemaIfMissing(),
		fmt.Sprintf("PRAGMA user_version = %d", schemaVersion),
	} {
		if err := t.execOnce(q); err != nil {
			return fmt.Errorf("store: migrate v6: %w", err)
		}
	}
	return sqlTx.Commit()
}
