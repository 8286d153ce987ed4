package store_test

import (
	"sort"
	"strings"
	"testing"
)

// notSwept are the exported methods of Store, Tx and Capability that no
// statement-fault case covers, each with why: they run no statement of
// their own, or run one where the store/statement failpoint cannot reach.
var notSwept = map[string]string{
	"Store.Close":              "closes the connection pool; it runs no statement",
	"Store.ShutdownCapability": "hands out the capability; it runs no statement",
	"Store.CloseWriteGate":     "sets the write gate; it runs no statement",
	"Tx.AfterCommit":           "registers a function to run after COMMIT; it runs no statement",
	"Tx.Now":                   "reads the Store's clock; it runs no statement",
	"Store.Update":             "runs the caller's function in a write transaction; every inTx case runs through it",
	"Store.View":               "runs the caller's function in a read transaction; every inView case runs through it",
	"Capability.Update":        "Store.Update past the closed write gate; the same transaction, no statement of its own",
	"Store.ChangeToken": "reads PRAGMA data_version on the pool, outside any transaction, where store/statement cannot reach; " +
		"TestChangeTokenFailsAfterClose fails that read",
}

// TestEveryStatementMethodIsSwept keeps the statement-fault sweep whole:
// every exported method of Store, Tx and Capability is in some fault
// case's covers, or in notSwept with the reason it runs no statement the
// failpoint can fail. A new method fails here until it has a case whose
// fixture reaches its statements, so that none of its ignored statement
// errors goes unnoticed; a name that is not an exported method any more
// (a rename) fails too.
func TestEveryStatementMethodIsSwept(t *testing.T) {
	exported := map[string]bool{}
	for _, m := range exportedMethods() {
		exported[m] = true
	}
	covered := map[string][]string{}
	for _, c := range faultCases() {
		if len(c.covers) == 0 {
			t.Errorf("fault case %q covers no method: name the exported methods whose statements it runs", c.name)
		}
		for _, m := range c.covers {
			covered[m] = append(covered[m], c.name)
		}
	}
	for _, m := range exportedMethods() {
		_, exempt := notSwept[m]
		switch cases := covered[m]; {
		case len(cases) == 0 && !exempt:
			t.Errorf("%s is in no statement-fault case: add a faultCase (store/statement_faults_*_test.go) whose fixture "+
				"reaches its statements, with %q in covers, or add it to notSwept with why it runs no statement", m, m)
		case len(cases) > 0 && exempt:
			t.Errorf("%s is both covered (by %s) and in notSwept", m, strings.Join(cases, ", "))
		}
	}
	var unknown []string
	for m := range covered {
		if !exported[m] {
			unknown = append(unknown, m+" (covers of "+strings.Join(covered[m], ", ")+")")
		}
	}
	for m := range notSwept {
		if !exported[m] {
			unknown = append(unknown, m+" (notSwept)")
		}
	}
	sort.Strings(unknown)
	for _, m := range unknown {
		t.Errorf("%s is not an exported method of Store, Tx or Capability", m)
	}
}

// TestChangeTokenFailsAfterClose: Store.ChangeToken reads SQLite's
// data_version outside any transaction, where the statement failpoint
// cannot fail it; a closed Store fails that read instead ("Close closes
// the database. Calls after Close fail."; TestCallsAfterCloseFail holds
// View and Update to it). The read's error comes back as an error, never
// as a token a status reader would cache its answer under.
func TestChangeTokenFailsAfterClose(t *testing.T) {
	e := newEnv(t)
	if _, err := e.s.ChangeToken(); err != nil {
		t.Fatalf("ChangeToken on an open Store: %v", err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if tk, err := e.s.ChangeToken(); err == nil {
		t.Fatalf("ChangeToken after Close: %+v and no error", tk)
	}
}
