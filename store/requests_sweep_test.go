package store_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestApplyCardsKeepsThePlanWithinItsItemLimit: a suggestion whose add
// cards would take the plan past plan.MaxItems refuses, saying how many
// items it makes, as importing such a plan would; one that reaches the
// limit exactly applies. Sweep survivor (seed 5150):
// store/requests.go:ApplyCards:drop-guard:5f9c532e.
func TestApplyCardsKeepsThePlanWithinItsItemLimit(t *testing.T) {
	items := []store.PlanItem{{Item: 1, Title: "one"}, {Item: 2, Title: "two"}}
	adds := func(n int) []store.Card {
		var cs []store.Card
		for i := 0; i < n; i++ {
			cs = append(cs, store.Card{Kind: store.CardAdd, Title: "added " + strconv.Itoa(i)})
		}
		return cs
	}
	out, err := store.ApplyCards(items, adds(plan.MaxItems-len(items)))
	if err != nil || len(out) != plan.MaxItems {
		t.Fatalf("a suggestion reaching %d items: %d items, %v", plan.MaxItems, len(out), err)
	}
	_, err = store.ApplyCards(items, adds(plan.MaxItems-len(items)+1))
	if want := "the suggestion makes " + strconv.Itoa(plan.MaxItems+1) + " items; a plan has at most " + strconv.Itoa(plan.MaxItems); err == nil || err.Error() != want {
		t.Fatalf("a suggestion past the limit: %v, want %q", err, want)
	}
}

// TestCreateTaskNeedsASnapshot: a task's plan is bound to the snapshot it
// was made from, so a task without one is refused as bad input and
// nothing is written. Sweep survivor (seed 5150):
// store/tasks.go:Tx.CreateTask:drop-guard:c1f345bb.
func TestCreateTaskNeedsASnapshot(t *testing.T) {
	e := newEnv(t)
	id := store.Identity{RepositoryID: "repo", TaskID: "nosnap", PlanID: "plan"}
	err := e.s.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, Items: []string{"one"}, Status: words.StatusQueued})
	})
	if store.RefusalCode(err) != store.CodeBadInput || !strings.Contains(err.Error(), "a task needs a snapshot") {
		t.Fatalf("CreateTask without a snapshot: %v, want bad input", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM plans`) + e.rawInt(`SELECT COUNT(*) FROM tasks`); n != 0 {
		t.Fatalf("the refusal wrote %d plan or task rows", n)
	}
}
