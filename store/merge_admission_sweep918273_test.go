package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestAdmitMergeRefusesAStaleStateVersion: a merge click carries the state
// version the person saw; when the task changed since (here: its state
// version moved on by a write the person did not see), the click is refused
// as stale, as every user action with a stale version is (the action
// around it records the refusal), and no merge attempt is written; the same click with the version now current is
// admitted. Sweep survivor (seed 918273):
// store/merge_admission.go:Tx.AdmitMerge:drop-guard:9ab69ef5.
func TestAdmitMergeRefusesAStaleStateVersion(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	e.approveAll(key)
	admit := func(sv int64) error { return e.admitMerge(key, sv) }
	seen := e.task(key).StateVersion
	e.rawExec(`UPDATE tasks SET state_version = state_version + 1 WHERE plan_key = ?`, key)
	if err := admit(seen); store.RefusalCode(err) != store.CodeStaleVersion {
		t.Fatalf("a merge click at state version %d after the task moved on: %v, want a stale-version refusal", seen, err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM merge_attempts WHERE plan_key = ?`, key); n != 0 {
		t.Errorf("the refused merge wrote %d merge attempts", n)
	}
	if err := admit(e.task(key).StateVersion); err != nil {
		t.Fatalf("the same click at the current state version: %v, want it admitted", err)
	}
}
