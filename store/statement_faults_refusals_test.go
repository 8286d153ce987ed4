package store_test

// Refusals of the operations the statement-fault sweep reaches whose
// guard is an error check of its own (an ignored one answers as if the
// guard had passed): each refuses, names why, and writes nothing.

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestApproveContinuationRefusesAStaleReviewVersion: "The person amends the
// owning item […], then posts approve-continuation with the current state
// and review versions" (the contract's "Scope continuation (#88)"). A
// review version the plan has moved past (a note, choice or approval saved
// since the person looked) is refused as a stale review, as start, resume
// and an approval are, and nothing is written: the task stays paused.
func TestApproveContinuationRefusesAStaleReviewVersion(t *testing.T) {
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
	sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.ApproveContinuation(key, sv, rv-1); return err })
	wantRefusal(t, err, store.CodeStaleReview)
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != 0 || e.task(key).Status != words.StatusNeedsAmendment {
		t.Fatalf("the refusal left %d approvals and status %s", n, e.task(key).Status)
	}
}

// TestAdmitMergeRefusesAnActionIDThatIsNotAUUID: a merge click's action ID
// is "an idempotency key the UI generates (a UUID) when the user acts", and
// "one that is not a UUID → HTTP 400; no user_actions row" (the contract's
// feedback-event contract). AdmitMerge, which saves it on the merge attempt
// the click's saved response follows, refuses it as bad input before it
// writes anything: no merge attempt begins.
func TestAdmitMergeRefusesAnActionIDThatIsNotAUUID(t *testing.T) {
	e := newEnv(t)
	key := e.inReview()
	e.approveAll(key)
	sv, rv := e.task(key).StateVersion, e.plan(key).ReviewVersion
	err := e.s.Update(func(tx *store.Tx) error {
		_, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: faultIDs.UUID(), ActionID: "click-1",
			ExpectedStateVersion: sv, ExpectedReviewVersion: rv, Repo: "o/r", Number: 7, HeadSHA: "abc"})
		return err
	})
	wantRefusal(t, err, store.CodeBadInput)
	if n := e.rawInt(`SELECT COUNT(*) FROM merge_attempts`); n != 0 {
		t.Fatalf("the refused merge left %d merge attempts", n)
	}
}
