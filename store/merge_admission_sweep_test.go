package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestAdmitMergeOnlyFromReview: "a task merges from in review" (or from
// approved but merge blocked, to try again): a merge click on a task in
// any other status is refused, with every item approved, and writes no
// merge attempt; the same task in review is admitted. Sweep survivor (seed 5150):
// store/merge_admission.go:Tx.AdmitMerge:drop-guard:f7947d01.
func TestAdmitMergeOnlyFromReview(t *testing.T) {
	e := newEnv(t)
	admit := func(key string) error { return e.admitMerge(key, e.task(key).StateVersion) }
	for _, st := range []words.TaskStatus{words.StatusQueued, words.StatusNeedsHuman, words.StatusNeedsApproval, words.StatusPossiblyAlreadyFixed} {
		key := e.newTask(st)
		e.approveAll(key)
		if err := admit(key); store.RefusalCode(err) != store.CodeTaskInactive {
			t.Errorf("a merge of a task %s: %v, want a refusal (task inactive)", st, err)
		}
		if n := e.rawInt(`SELECT COUNT(*) FROM merge_attempts WHERE plan_key = ?`, key); n != 0 {
			t.Errorf("the refused merge of a task %s wrote %d merge attempts", st, n)
		}
	}
	// The same, approved, from review: admitted.
	key := e.newTask(words.StatusInReview)
	e.approveAll(key)
	if err := admit(key); err != nil {
		t.Fatalf("a merge of an approved task in review: %v, want it admitted", err)
	}
}

// admitMerge is a merge click on key at state version sv and the plan's
// present review version, in its own transaction.
func (e *env) admitMerge(key string, sv int64) error {
	return e.s.Update(func(tx *store.Tx) error {
		p, err := tx.Plan(key)
		if err != nil {
			return err
		}
		_, err = tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: ids.Random{}.UUID(), ActionID: ids.Random{}.UUID(),
			ExpectedStateVersion: sv, ExpectedReviewVersion: p.ReviewVersion, Repo: "o/r", Number: 1, HeadSHA: "abc"})
		return err
	})
}
