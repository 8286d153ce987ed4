package store

import (
	"database/sql"
	"errors"
)

// Check says why an identity cannot name a plan (each part must be a safe
// ID), or nil; configuration is checked with it before the Store opens.
func (id Identity) Check() error { return id.check() }

// EnsureTask creates a configured task the first time a server names it,
// and leaves an existing one exactly as it is: configuration names tasks,
// the Store owns their state.
func (t *Tx) EnsureTask(n NewTask) (created bool, err error) {
	if err := n.Identity.check(); err != nil {
		return false, err
	}
	var one int
	err = t.queryRow(`SELECT 1 FROM plans WHERE key = ?`, n.Identity.Key()).Scan(&one)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	return true, t.CreateTask(n)
}
