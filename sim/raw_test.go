package sim

import (
	"database/sql"
)

// rawExec writes what the oracle needs behind the Store's back: a pending
// cancel task with no first reason, or a closed status during an attempt,
// states only another writer could leave.
func rawExec(db *sql.DB, key string, c settleCase) error {
	if c.cancelReq {
		if _, err := db.Exec(`UPDATE tasks SET cancel_requested = '00000000-0000-4000-8000-000000000001' WHERE plan_key = ?`, key); err != nil {
			return err
		}
	}
	if c.closed {
		if _, err := db.Exec(`UPDATE tasks SET status = 'merged' WHERE plan_key = ?`, key); err != nil {
			return err
		}
	}
	return nil
}
