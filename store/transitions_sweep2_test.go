package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// TestOweFindingRefusedUnderAnActiveAttempt guards OweFinding's active-attempt
// guard: "an active attempt refuses it (a task does not change status under
// one)". With an attempt pending, owing a finding is refused with
// active-attempt and writes nothing: no owed marker, no needs human, no
// state version bump.
//
// Sweep survivor (seed 20261203): store/transitions.go:Tx.OweFinding:drop-guard:84073d57.
func TestOweFindingRefusedUnderAnActiveAttempt(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindReview)
	before := e.snap(key)

	err := e.s.Update(func(tx *store.Tx) error { return tx.OweFinding(key, actionIDs.UUID(), "agent committed") })
	wantRefusal(t, err, store.CodeActiveAttempt)

	after := e.snap(key)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("a refused OweFinding changed the task (-before +after):\n%s", diff)
	}
	if got := after.Task.OwedFinding; got != "" {
		t.Errorf("owed finding = %q under active attempt %s, want none", got, a.ID)
	}
}
