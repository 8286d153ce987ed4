package store

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/words"
)

// Tests for the survivors of the seed-271828 sweep in store/.

// TestRejectionNotesMayFillTheEventExactly: "an event's text is at most
// 4000 characters", so notes that join to exactly MaxFeedbackText
// characters are one rejection; one more is refused. Kills the sweep's
// store/review.go:Tx.RejectWithFeedback:boundary:33cab7de.
func TestRejectionNotesMayFillTheEventExactly(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one")
	half := (MaxFeedbackText - len(rejectSeparator)) / 2
	notes := []NoteInput{{Text: strings.Repeat("é", half)}, {Text: strings.Repeat("é", MaxFeedbackText-len(rejectSeparator)-half)}}
	if err := s.Update(func(tx *Tx) error { _, err := tx.RejectWithFeedback(key, aid.next(), 1, notes); return err }); err != nil {
		t.Fatalf("notes joining to exactly %d characters: %v", MaxFeedbackText, err)
	}
}

// TestCutKeepsAnInvalidLeadByteBound: a diagnostic that is nothing but
// UTF-8 continuation bytes has no character boundary to back up to; cut
// stops at the start instead of reading before it, and the bound still
// holds. Kills the sweep's store/transitions.go:cut:boundary:299ee650.
func TestCutKeepsAnInvalidLeadByteBound(t *testing.T) {
	s := strings.Repeat("\x80", MaxDiagnostic+10)
	got := cut(s, MaxDiagnostic)
	if got != "…" {
		t.Fatalf("cut of continuation bytes = %q (len %d); want the mark alone", got[:min(len(got), 20)], len(got))
	}
}

// TestReassignRefusesAnEmptyAssignment: an empty assignment ID is bad input
// and changes nothing (it would otherwise make every attempt of the task
// non-current under no assignment at all). Kills the sweep's
// store/context.go:Tx.Reassign:drop-guard:25788651.
func TestReassignRefusesAnEmptyAssignment(t *testing.T) {
	s := openReviewStore(t, nil)
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusRunning, "one")
	var before, after Task
	mustUpdate(t, s, func(tx *Tx) (err error) { before, err = tx.Task(key); return err })
	err := s.Update(func(tx *Tx) error { return tx.Reassign(key, "") })
	if RefusalCode(err) != CodeBadInput {
		t.Fatalf("Reassign to \"\": %v; want a %s refusal", err, CodeBadInput)
	}
	mustUpdate(t, s, func(tx *Tx) (err error) { after, err = tx.Task(key); return err })
	if after.AssignmentID != before.AssignmentID || after.StateVersion != before.StateVersion {
		t.Fatalf("task changed by a refused reassignment: %+v → %+v", before, after)
	}
}
