package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestEndMergeFailsWithItsSavedResponse: EndMerge changes the merge
// attempt and the merge click's saved response "in the same transaction",
// so a storage error while updating that response fails the whole outcome
// (the statement-fault sweep: reported as a storage error, nothing
// written), never an attempt marked failed whose click still answers
// submitting. With no fault, the saved response becomes the outcome.
// Sweep survivor (seed 20261203): store/merge.go:Tx.EndMerge:ignore-error:cb96f2da.
func TestEndMergeFailsWithItsSavedResponse(t *testing.T) {
	var e *env
	var key, id, click string
	c := faultCase{name: "end merge of a merge click", setup: func(env *env) func() error {
		e = env
		key = e.newTask(words.StatusInReview)
		e.approveAll(key)
		id, click = ids.Random{}.UUID(), ids.Random{}.UUID()
		task, p := e.task(key), e.plan(key)
		_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: click, Kind: "merge", Request: "merge"},
			func(tx *store.Tx) (store.Response, error) {
				m, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: id, ActionID: click,
					ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: p.ReviewVersion, Repo: "o/r", Number: 7, HeadSHA: "abc"})
				return store.Response{Outcome: m.State, AttemptID: m.ID}, err
			})
		if err != nil {
			t.Fatalf("merge click: %v", err)
		}
		return e.inTx(func(tx *store.Tx) error { return tx.EndMerge(id, store.MergeFailed, "checks failed") })
	}}
	sweepStatements(t, c, "")
	if r, ok := e.savedResponse(key, click); !ok || r.Outcome != store.MergeFailed || r.AttemptID != id || r.Message != "checks failed" {
		t.Fatalf("the merge click's saved response after EndMerge: %+v (found %v), want failed with its reason", r, ok)
	}
}
