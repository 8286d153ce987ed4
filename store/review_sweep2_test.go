package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestAddFindingRefusesTextThatIsNotUTF8: a finding's text is shown to a
// person and carried into feedback, so text that is not UTF-8 is refused
// as bad input and no finding is written; the same finding with valid
// text is recorded.
// Sweep survivor (seed 20261203): store/review.go:Tx.AddFinding:drop-guard:c3647eec.
func TestAddFindingRefusesTextThatIsNotUTF8(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	err := e.s.Update(func(tx *store.Tx) error { return tx.AddFinding(key, "f1", "null check \xff missing") })
	if r := wantRefusal(t, err, store.CodeBadInput); r.Message != "finding text is not UTF-8" {
		t.Fatalf("refusal message %q", r.Message)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM findings WHERE plan_key = ?`, key); n != 0 {
		t.Fatalf("the refused finding wrote %d rows", n)
	}
	e.update(func(tx *store.Tx) error { return tx.AddFinding(key, "f1", "null check missing") })
	if got := e.rawString(`SELECT text FROM findings WHERE plan_key = ? AND finding_id = 'f1'`, key); got != "null check missing" {
		t.Fatalf("finding text %q", got)
	}
}
