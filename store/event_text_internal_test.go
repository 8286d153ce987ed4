package store

import (
	"strings"
	"testing"
)

// TestEventTextIsBoundedWhereItIsWritten: every user action checks its
// text before it writes, and the event insert checks it again, so that a
// caller that forgot cannot store an event over MaxFeedbackText
// characters; the refusal writes nothing.
func TestEventTextIsBoundedWhereItIsWritten(t *testing.T) {
	s := openReviewStore(t, nil)
	err := s.Update(func(tx *Tx) error {
		return tx.insertEvent(Event{PlanKey: "repo/task/plan", Kind: "note", Text: strings.Repeat("é", MaxFeedbackText+1)})
	})
	if r, ok := IsRefusal(err); !ok || r.Code != CodeBadInput || !strings.Contains(r.Message, "over 4000 characters") {
		t.Fatalf("an event over the text bound: %v", err)
	}
	var n int
	if err := s.View(func(tx *Tx) error { return tx.queryRow(`SELECT COUNT(*) FROM feedback_events`).Scan(&n) }); err != nil || n != 0 {
		t.Errorf("%d events written (%v)", n, err)
	}
}
