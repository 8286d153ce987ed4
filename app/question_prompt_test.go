package app

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// TestQuestionPromptNamesItsItem: a question's agent is asked "the
// question, the plan item it is about (when it names one), and the
// answer's form": a question on item 2 carries item 2's words (from the
// plan's present revision) and no other item's, a question on the whole
// plan, or on an item the plan does not have, carries none.
func TestQuestionPromptNamesItsItem(t *testing.T) {
	st, id := twoItemTask(t)
	a := &App{store: st}
	two, nine := 2, 9
	for _, c := range []struct {
		name      string
		item      *int
		want, not []string
	}{
		{"item 2", &two, []string{"About plan item:\nPlan item 2: Handle empty input\n", "Question:\nwhy?\n"}, []string{"Parse the header"}},
		{"the whole plan", nil, []string{"Question:\nwhy?\n"}, []string{"About plan item", "Plan item"}},
		{"an item the plan does not have", &nine, []string{"Question:\nwhy?\n"}, []string{"About plan item", "Plan item"}},
	} {
		got := a.questionPrompt(store.Question{ID: "q1", PlanKey: id.Key(), Item: c.item, Text: "why?"})
		if !strings.HasPrefix(got, "codeboost question q1 (read-only") || !strings.HasSuffix(got, "{\"summary\": \"…\", \"answer\": \"…\"}\n") {
			t.Errorf("%s: the prompt's frame:\n%s", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the prompt lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: the prompt has %q:\n%s", c.name, n, got)
			}
		}
	}
}

// twoItemTask is a Store with one task whose plan has two items, "Parse
// the header" and "Handle empty input": what the prompt tests word.
func twoItemTask(t *testing.T) (*store.Store, store.Identity) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "cb.db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"Parse the header", "Handle empty input"}})
	}); err != nil {
		t.Fatal(err)
	}
	return st, id
}
