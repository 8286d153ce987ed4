package store

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
)

// statementHelpers is one family of a transaction's statement helpers: the
// Tx helpers every Store operation uses (prepared and cached), or the
// migration's, which run their statements unprepared, once.
type statementHelpers struct {
	name     string
	exec     func(tx *Tx, q string, args ...any) error
	queryRow func(tx *Tx, q string, args ...any) row
	query    func(tx *Tx, q string, args ...any) (*rows, error)
}

var statementFamilies = []statementHelpers{
	{"prepared", func(tx *Tx, q string, args ...any) error { _, err := tx.exec(q, args...); return err },
		(*Tx).queryRow, (*Tx).query},
	{"once", (*Tx).execOnce, (*Tx).queryRowOnce, (*Tx).queryOnce},
}

// TestStatementFaultFailsWhereItSays pins what the store/statement failpoint
// does to each kind of statement, so that the statement-fault sweeps (of the
// Store's operations and of the v5 → v6 migration) fail statements the way
// its two modes say: exec and queryRow fail at once; a query fails at once
// with "return", and with return("step") returns its first row and then
// fails, Next answering false and Err the fault (an empty result fails at
// its first step). A statement with no fault armed runs, and one that fails
// by itself (its table is missing) returns its own error. Both families of
// statement helpers behave alike.
func TestStatementFaultFailsWhereItSays(t *testing.T) {
	for _, h := range statementFamilies {
		t.Run(h.name, func(t *testing.T) { statementFaultFailsWhereItSays(t, h) })
	}
}

func statementFaultFailsWhereItSays(t *testing.T, h statementHelpers) {
	fp := failpoints.New()
	now := time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "codeboost.db"), Options{Now: func() time.Time { return now }, IDs: ids.NewSeeded(1), Failpoints: fp})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Update(func(tx *Tx) error {
			return h.exec(tx, `INSERT INTO app_settings (key, value) VALUES (?, 'v')`, k)
		}); err != nil {
			t.Fatal(err)
		}
	}
	isFault := func(err error) bool { return err != nil && strings.Contains(err.Error(), "failpoint store/statement") }
	arm := func(terms string) {
		t.Helper()
		if err := fp.Enable("store/statement", terms); err != nil {
			t.Fatal(err)
		}
	}
	read := func(q string) (n int, err error) {
		err = s.View(func(tx *Tx) error {
			rows, err := h.query(tx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				n++
			}
			return rows.Err()
		})
		return n, err
	}
	const all = `SELECT key FROM app_settings ORDER BY key`

	arm("1*return")
	if n, err := read(all); !isFault(err) || n != 0 {
		t.Errorf("query, return: %d rows, %v; want no row and the fault", n, err)
	}
	arm(`1*return("step")`)
	if n, err := read(all); !isFault(err) || n != 1 {
		t.Errorf("query, step: %d rows, %v; want the first row, then the fault", n, err)
	}
	arm(`1*return("step")`)
	if n, err := read(`SELECT key FROM app_settings WHERE key = 'none'`); !isFault(err) || n != 0 {
		t.Errorf("empty query, step: %d rows, %v; want the fault", n, err)
	}
	if n, err := read(all); err != nil || n != 3 {
		t.Errorf("query with the fault spent: %d rows, %v", n, err)
	}
	for _, terms := range []string{"1*return", `1*return("step")`} {
		arm(terms)
		err := s.View(func(tx *Tx) error {
			var v string
			return h.queryRow(tx, `SELECT value FROM app_settings WHERE key = 'a'`).Scan(&v)
		})
		if !isFault(err) {
			t.Errorf("queryRow, %s: %v, want the fault", terms, err)
		}
		arm(terms)
		err = s.Update(func(tx *Tx) error {
			return h.exec(tx, `UPDATE app_settings SET value = 'w' WHERE key = 'a'`)
		})
		if !isFault(err) {
			t.Errorf("exec, %s: %v, want the fault", terms, err)
		}
	}
	fp.Disable("store/statement")
	var v string
	if err := s.View(func(tx *Tx) error {
		return h.queryRow(tx, `SELECT value FROM app_settings WHERE key = 'a'`).Scan(&v)
	}); err != nil || v != "v" {
		t.Errorf("with no fault armed: %q %v (the failed updates must not have landed)", v, err)
	}
	if n, err := read(`SELECT key FROM no_such_table`); err == nil || isFault(err) || n != 0 {
		t.Errorf("query of a missing table: %d rows, %v; want its own error", n, err)
	}
}
