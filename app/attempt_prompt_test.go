package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestAttemptPromptNamesItsItem: an attempt's agent is asked to do its
// plan item: an attempt on item 2 carries item 2's words (at the attempt's
// plan revision) and no other item's; an attempt with no item, or on an
// item its revision does not have, gets its kind and ID alone, never an
// empty "Plan item 0:" that reads as an item to do.
// Sweep survivor (seed 918273): app/agent.go:App.prompt:drop-guard:0ca12934.
func TestAttemptPromptNamesItsItem(t *testing.T) {
	st, id := twoItemTask(t)
	present, err := st.PresentContext(id.Key())
	if err != nil {
		t.Fatal(err)
	}
	a := &App{store: st, log: slog.New(slog.DiscardHandler)}
	two, nine := 2, 9
	for _, c := range []struct {
		name string
		item *int
		want string
	}{
		{"item 2", &two, "codeboost execute attempt a1\nPlan item 2: Handle empty input\n"},
		{"no item", nil, "codeboost execute attempt a1\n"},
		{"an item the revision does not have", &nine, "codeboost execute attempt a1\n"},
	} {
		got := a.prompt(store.Attempt{ID: "a1", PlanKey: id.Key(), Kind: words.KindExecute, Item: c.item, Context: present})
		if !strings.HasPrefix(got, c.want) || c.item != &two && got != c.want {
			t.Errorf("%s: the prompt is\n%q\nwant it to start %q (and be only that without an item)", c.name, got, c.want)
		}
		if strings.Contains(got, "Parse the header") {
			t.Errorf("%s: the prompt carries another item's words:\n%s", c.name, got)
		}
	}
}
