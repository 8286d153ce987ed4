package suggest

import (
	"fmt"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
)

// ValidateCards is E2's card validation, run on every suggestion reply
// before publication ("validate every card via E2"). A suggestion's reply
// is a JSON array of at most store.MaxCards cards:
//
//	[{"item": 2, "title": "…", "instructions": "…", "kind": "change"}, …]
//
// where item is the 1-based number of an existing item (items is how many
// the bound revision has) for a "change" or a "remove", and 0 for an
// "add"; title is 1 to 200 characters on one line; instructions are at
// most 8 KiB; no unknown field, at most one card per item. The rules are
// the Store's (store.ParseCards): the Store applies what it accepts, so a
// reply the coordinator publishes is one the Store can apply. The error
// names the card.
func ValidateCards(reply []byte, items int) ([]store.Card, error) {
	if len(reply) > store.MaxPlanReply {
		return nil, fmt.Errorf("the reply is %d bytes; at most %d (1 MiB)", len(reply), store.MaxPlanReply)
	}
	return store.ParseCards(reply, items)
}

// ValidateDraft is the same for a draft's reply, a whole next revision of
// the plan: {"items": [{"title": "…", "instructions": "…"}, …]} with 1 to
// 200 items, each held to a card's title and instructions rules
// (store.ParseDraft). The error names the item.
func ValidateDraft(reply []byte) ([]plan.Item, error) {
	if len(reply) > store.MaxPlanReply {
		return nil, fmt.Errorf("the reply is %d bytes; at most %d (1 MiB)", len(reply), store.MaxPlanReply)
	}
	return store.ParseDraft(reply)
}
