package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// TestMalformedInputIsRefusedBeforeAnyWrite: the IDs and texts a question,
// an owed finding, a snapshot change and a history entry carry are checked
// before anything is written: each malformed one is refused bad-input,
// and the database is unchanged.
func TestMalformedInputIsRefusedBeforeAnyWrite(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	good := faultIDs.UUID()
	for name, op := range map[string]func(tx *store.Tx) error{
		"a question ID that is not a UUID": func(tx *store.Tx) error {
			_, err := tx.AskQuestion(key, "q-1", faultIDs.UUID(), nil, "why?")
			return err
		},
		"an allocation ID that is not a UUID": func(tx *store.Tx) error {
			_, err := tx.AskQuestion(key, faultIDs.UUID(), "../alloc", nil, "why?")
			return err
		},
		"a question with no text": func(tx *store.Tx) error {
			_, err := tx.AskQuestion(key, faultIDs.UUID(), faultIDs.UUID(), nil, "  ")
			return err
		},
		"a question over the text limit": func(tx *store.Tx) error {
			_, err := tx.AskQuestion(key, faultIDs.UUID(), faultIDs.UUID(), nil, strings.Repeat("?", store.MaxFeedbackText+1))
			return err
		},
		"an owed finding's attempt ID that is not a UUID": func(tx *store.Tx) error { return tx.OweFinding(key, "a-1", "wrote outside") },
		"an owed finding with no text":                    func(tx *store.Tx) error { return tx.OweFinding(key, good, "") },
		"a snapshot change with no snapshot":              func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "") },
		"a history entry with no commit":                  func(tx *store.Tx) error { return tx.RecordHistory(key, good, "") },
	} {
		before := e.dump()
		if r := wantRefusal(t, e.s.Update(op), store.CodeBadInput); r == nil {
			t.Errorf("%s: not refused", name)
		}
		if diff := cmp.Diff(before, e.dump()); diff != "" {
			t.Errorf("%s: the refusal changed the database:\n%s", name, diff)
		}
	}
}

// TestQuestionEndsOnce: a question's life moves one way (pending, running,
// then completed or failed): a second answer, a failure after the answer
// and a start of an answered question are each refused illegal, and the
// answer kept.
func TestQuestionEndsOnce(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	id := faultIDs.UUID()
	e.update(func(tx *store.Tx) error {
		_, err := tx.AskQuestion(key, id, faultIDs.UUID(), nil, "why this file?")
		return err
	})
	e.update(func(tx *store.Tx) error { return tx.FinishAnswer(id, "because") })
	for name, op := range map[string]func(tx *store.Tx) error{
		"a second answer":         func(tx *store.Tx) error { return tx.FinishAnswer(id, "again") },
		"a failure after it":      func(tx *store.Tx) error { return tx.FailQuestion(id, "late", true) },
		"a start of the answered": func(tx *store.Tx) error { return tx.StartQuestion(id) },
	} {
		before := e.dump()
		wantRefusal(t, e.s.Update(op), store.CodeIllegal)
		if diff := cmp.Diff(before, e.dump()); diff != "" {
			t.Errorf("%s: the refusal changed the database:\n%s", name, diff)
		}
	}
}

// TestApprovalAtAnOldReviewVersionIsRefused: an approval given at a review
// version the plan has moved on from is refused stale-review, and
// approves nothing.
func TestApprovalAtAnOldReviewVersionIsRefused(t *testing.T) {
	e := newEnv(t)
	key := e.inReview()
	rv := e.plan(key).ReviewVersion
	before := e.dump()
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.ApproveReviewed(key, 2, rv-1); return err })
	wantRefusal(t, err, store.CodeStaleReview)
	if diff := cmp.Diff(before, e.dump()); diff != "" {
		t.Errorf("the refusal changed the database:\n%s", diff)
	}
}
