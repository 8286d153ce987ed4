package store_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
)

// TestConsumeSuggestionStatementErrorsPropagate runs the statement-fault
// sweep (statement_faults_test.go) over applying a ready suggestion: the
// read of the bound revision's items failing is a storage error, never
// the refusal "the cards name no existing item" that a suggestion read
// against no items would give, and it writes nothing. (The sweep's
// "consume" case applies a draft, which reads no items.)
// Sweep survivor (seed 20261203): store/requests.go:Tx.ConsumePlanRequest:ignore-error:31d5f59c~5.
func TestConsumeSuggestionStatementErrorsPropagate(t *testing.T) {
	c := faultCase{name: "consume a suggestion", setup: func(e *env) func() error {
		key := e.newTask("")
		r := e.ready(key, store.ModeSuggestion, twoChange)
		return e.inTx(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 1); return err })
	}}
	for _, mode := range faultModes {
		t.Run(mode.name, func(t *testing.T) { sweepStatements(t, c, mode.value) })
	}
}

// TestUnreadablePlanRequestIsAnError: a planning request row whose values
// cannot be read back (here a revision that is not a number, as another
// build or a failing disk could leave) makes the list of the plan's
// requests fail with that error; it is never listed half-read, which the
// coordinator would take for a request bound to revision 0.
// Sweep survivor (seed 20261203): store/requests.go:Tx.PlanRequests:ignore-error:31d5f59c~2.
func TestUnreadablePlanRequestIsAnError(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.begin(key, store.ModeSuggestion)
	e.rawExec(`UPDATE plan_requests SET revision = 'first' WHERE id = ?`, r.ID)
	var rs []store.PlanRequest
	err := e.s.View(func(tx *store.Tx) (err error) { rs, err = tx.PlanRequests(key); return err })
	if err == nil || store.RefusalCode(err) != "" {
		t.Fatalf("listing an unreadable request: %+v, %v; want the read's error", rs, err)
	}
}

// TestApplyCardsRefusesAnUnreadableItemSpec: applying a suggestion keeps
// every item's declared files, links and scope, so an item whose stored
// spec cannot be read makes ApplyCards fail, naming the item, rather than
// carry the item over empty.
// Sweep survivor (seed 20261203): store/requests.go:ApplyCards:ignore-error:31d5f59c.
func TestApplyCardsRefusesAnUnreadableItemSpec(t *testing.T) {
	items := []store.PlanItem{{Item: 1, Title: "one", Spec: []byte(`{"title": `)}, {Item: 2, Title: "two"}}
	cards := []store.Card{{Item: 2, Title: "two, better", Kind: store.CardChange}}
	out, err := store.ApplyCards(items, cards)
	if err == nil || !strings.Contains(err.Error(), "plan item 1's spec") {
		t.Fatalf("ApplyCards over an unreadable spec = %+v, %v; want an error naming item 1", out, err)
	}
}

// TestDraftMayHoldTheMostItemsAPlanHolds: a draft is "the whole next
// revision of the plan, 1 to plan.MaxItems items", so a draft of exactly
// plan.MaxItems items is read, and one more is refused with the rule.
// Sweep survivor (seed 20261203): store/requests.go:ParseDraft:boundary:cbaa5d59.
func TestDraftMayHoldTheMostItemsAPlanHolds(t *testing.T) {
	draft := func(n int) []byte {
		var items []string
		for i := 1; i <= n; i++ {
			items = append(items, `{"title": "item `+strconv.Itoa(i)+`", "instructions": ""}`)
		}
		return []byte(`{"items": [` + strings.Join(items, ", ") + `]}`)
	}
	if out, err := store.ParseDraft(draft(plan.MaxItems)); err != nil || len(out) != plan.MaxItems {
		t.Fatalf("a draft of %d items: %d items, %v", plan.MaxItems, len(out), err)
	}
	_, err := store.ParseDraft(draft(plan.MaxItems + 1))
	if want := fmt.Sprintf("a draft has 1 to %d items, not %d", plan.MaxItems, plan.MaxItems+1); err == nil || err.Error() != want {
		t.Fatalf("a draft of %d items: %v, want %q", plan.MaxItems+1, err, want)
	}
}

// TestCardInstructionsMayFillTheirLimit: a card's instructions are held
// "to MaxCardInstructions bytes", so instructions of exactly that many
// bytes are accepted and one byte more is refused, naming the card.
// Sweep survivor (seed 20261203): store/requests.go:checkCardText:boundary:794378fa.
func TestCardInstructionsMayFillTheirLimit(t *testing.T) {
	reply := func(n int) []byte {
		return []byte(`[{"item": 0, "title": "three", "instructions": "` + strings.Repeat("x", n) + `", "kind": "add"}]`)
	}
	if cards, err := store.ParseCards(reply(store.MaxCardInstructions), 2); err != nil || len(cards) != 1 {
		t.Fatalf("instructions of %d bytes: %+v, %v", store.MaxCardInstructions, cards, err)
	}
	_, err := store.ParseCards(reply(store.MaxCardInstructions+1), 2)
	if want := fmt.Sprintf("card 1: instructions are %d bytes; at most %d (8 KiB)", store.MaxCardInstructions+1, store.MaxCardInstructions); err == nil || err.Error() != want {
		t.Fatalf("instructions of %d bytes: %v, want %q", store.MaxCardInstructions+1, err, want)
	}
}
