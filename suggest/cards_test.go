package suggest_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// The card schema's rules are the Store's (store.ParseCards and
// store.ParseDraft, tested there one by one); these hold what the
// coordinator adds (the 1 MiB bound before parsing) and that the two agree.
func TestValidateCards(t *testing.T) {
	got, err := suggest.ValidateCards([]byte(cards), 2)
	if err != nil || len(got) != 2 || got[0].Kind != store.CardChange || got[1].Item != 0 {
		t.Fatalf("ValidateCards: %+v, %v", got, err)
	}
	if _, err := suggest.ValidateCards([]byte(cards), 1); err == nil || !strings.Contains(err.Error(), "card 1") {
		t.Fatalf("a card for item 2 of a one-item plan: %v", err)
	}
	huge := make([]byte, store.MaxPlanReply+1)
	if _, err := suggest.ValidateCards(huge, 2); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("over 1 MiB: %v", err)
	}
}

func TestValidateDraft(t *testing.T) {
	got, err := suggest.ValidateDraft([]byte(draft))
	if err != nil || len(got) != 1 || got[0].Title != "first" {
		t.Fatalf("ValidateDraft: %+v, %v", got, err)
	}
	if _, err := suggest.ValidateDraft([]byte(cards)); err == nil {
		t.Fatal("cards passed as a draft")
	}
	huge := make([]byte, store.MaxPlanReply+1)
	if _, err := suggest.ValidateDraft(huge); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("over 1 MiB: %v", err)
	}
}
