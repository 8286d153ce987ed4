package store_test

// ImportPlan: the plan's next revision from a plan document's items, each
// with its spec (docs/plan-format.md, "What the Store keeps").

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// planItems parses a plan document with items of the given titles (each
// with instructions, a file operation, a link and a scope path, so that a
// spec holds every kind of field) and returns the ImportPlan input for it.
func planItems(t *testing.T, titles ...string) []store.ItemInput {
	t.Helper()
	_, items := parsePlan(t, titles...)
	return items
}

func parsePlan(t *testing.T, titles ...string) (plan.Document, []store.ItemInput) {
	t.Helper()
	var parts []string
	for i, title := range titles {
		link := `{"url": "https://example.com/issues/8", "kind": "issue"}`
		if i > 0 {
			link = fmt.Sprintf(`{"item": %d, "kind": "depends-on"}`, i)
		}
		parts = append(parts, fmt.Sprintf(`{"title": %q, "instructions": "Do <%d>.\n", "files": [{"op": "create", "path": "pkg%d/a.go"}],
			"links": [%s], "scope": ["pkg%d/"]}`, title, i, i, link, i))
	}
	d, err := plan.Parse([]byte(`{"format": "codeboost-plan/1", "title": "p", "items": [` + strings.Join(parts, ", ") + `]}`))
	if err != nil {
		t.Fatalf("fixture plan: %v", err)
	}
	out, err := store.ItemInputs(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, out
}

func (e *env) planItems(key string, revision int) []store.PlanItem {
	e.t.Helper()
	var items []store.PlanItem
	if err := e.s.View(func(tx *store.Tx) (err error) { items, err = tx.PlanItems(key, revision); return err }); err != nil {
		e.t.Fatalf("PlanItems(%s, %d): %v", key, revision, err)
	}
	return items
}

// TestImportPlanStoresSpecs: the next revision holds each item's title and
// spec, which reads back as the parsed item; the revision before it (made
// from titles, as CreateTask and ImportRevision make them) reads with nil
// specs, stored as NULL, and a spec is stored as SQL text.
func TestImportPlanStoresSpecs(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.task(key)
	d, items := parsePlan(t, "Add it", "Test it", "Document it")
	var rev int
	e.update(func(tx *store.Tx) (err error) { rev, err = tx.ImportPlan(key, 1, items); return err })
	if rev != 2 {
		t.Fatalf("ImportPlan made revision %d, want 2", rev)
	}
	got := e.planItems(key, 2)
	if len(got) != len(items) {
		t.Fatalf("%d items, want %d", len(got), len(items))
	}
	for i, it := range got {
		if it.Item != i+1 || it.Title != items[i].Title || it.RunAgain || !bytes.Equal(it.Spec, items[i].Spec) {
			t.Fatalf("item %d = %+v, want %q with spec %s", i+1, it, items[i].Title, items[i].Spec)
		}
		back, err := plan.ParseSpec(it.Spec)
		if err != nil {
			t.Fatalf("item %d: ParseSpec: %v", i+1, err)
		}
		if diff := cmp.Diff(d.Items[i], back); diff != "" {
			t.Fatalf("item %d read back (-parsed +stored):\n%s", i+1, diff)
		}
	}
	for _, it := range e.planItems(key, 1) {
		if it.Spec != nil {
			t.Fatalf("revision 1 (titles only) item %d has spec %q", it.Item, it.Spec)
		}
	}
	if typ := e.rawString(`SELECT group_concat(DISTINCT typeof(spec)) FROM plan_items WHERE plan_key = ? AND revision = 2`, key); typ != "text" {
		t.Fatalf("specs stored as %s, want text", typ)
	}
	if typ := e.rawString(`SELECT group_concat(DISTINCT typeof(spec)) FROM plan_items WHERE plan_key = ? AND revision = 1`, key); typ != "null" {
		t.Fatalf("title-only items' specs stored as %s, want null", typ)
	}
	after := e.task(key)
	if after.ContextGeneration != before.ContextGeneration+1 || after.StateVersion != before.StateVersion+1 {
		t.Fatalf("generation %d → %d, state version %d → %d; want +1 each", before.ContextGeneration, after.ContextGeneration,
			before.StateVersion, after.StateVersion)
	}
	// A later revision from titles alone has no specs: nothing leaks from
	// the revision before it.
	e.update(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 2, []string{"only a title"}); return err })
	if got := e.planItems(key, 3); len(got) != 1 || got[0].Spec != nil {
		t.Fatalf("revision 3 = %+v", got)
	}
}

// TestImportPlanRefusesAsImportRevisionDoes: an unknown plan and a stale
// expected revision are refused with ImportRevision's very codes and
// messages, and write nothing.
func TestImportPlanRefusesAsImportRevisionDoes(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	items := planItems(t, "one", "two")
	for _, c := range []struct {
		name     string
		key      string
		expected int
		code     string
	}{
		{"unknown plan", "repo/nobody/plan", 1, store.CodeNotFound},
		{"stale revision", key, 0, store.CodeStaleVersion},
		{"revision from the future", key, 2, store.CodeStaleVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			full := wantRefusal(t, e.s.Update(func(tx *store.Tx) error { _, err := tx.ImportPlan(c.key, c.expected, items); return err }), c.code)
			titles := wantRefusal(t, e.s.Update(func(tx *store.Tx) error {
				_, err := tx.ImportRevision(c.key, c.expected, []string{"one", "two"})
				return err
			}), c.code)
			if *full != *titles {
				t.Fatalf("ImportPlan refused with %+v, ImportRevision with %+v", *full, *titles)
			}
			if diff := cmp.Diff(before, e.dump()); diff != "" {
				t.Fatalf("a refused import wrote:\n%s", diff)
			}
		})
	}
}

// TestImportPlanRefusesBadItems: no item, more items than a plan document
// holds, or an item whose spec is missing, is not an item or names another
// title is bad input, refused before anything is read or written.
func TestImportPlanRefusesBadItems(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	good := planItems(t, "one")
	tooMany := make([]store.ItemInput, plan.MaxItems+1)
	for i := range tooMany {
		spec, _ := plan.Item{Title: fmt.Sprint("item ", i+1)}.Spec()
		tooMany[i] = store.ItemInput{Title: fmt.Sprint("item ", i+1), Spec: spec}
	}
	for _, c := range []struct {
		name  string
		items []store.ItemInput
		want  string
	}{
		{"no items", nil, "a plan has 1 to 200 items, not 0"},
		{"201 items", tooMany, "a plan has 1 to 200 items, not 201"},
		{"no spec", []store.ItemInput{good[0], {Title: "two"}}, "plan item 2: its spec is not a plan item: the document is empty"},
		{"spec not JSON", []store.ItemInput{{Title: "one", Spec: []byte("one")}},
			"plan item 1: its spec is not a plan item: invalid JSON: invalid character 'o' looking for beginning of value"},
		{"spec with an unknown field", []store.ItemInput{{Title: "one", Spec: []byte(`{"title": "one", "owner": "me"}`)}},
			`plan item 1: its spec is not a plan item: unknown field "owner"`},
		{"spec of another title", []store.ItemInput{{Title: "two", Spec: good[0].Spec}},
			`plan item 1: title "two", but its spec's title is "one"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			r := wantRefusal(t, e.s.Update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, c.items); return err }), store.CodeBadInput)
			if r.Message != c.want {
				t.Fatalf("refusal %q, want %q", r.Message, c.want)
			}
			if diff := cmp.Diff(before, e.dump()); diff != "" {
				t.Fatalf("a refused import wrote:\n%s", diff)
			}
		})
	}
	// 200 items are a plan.
	spec200 := tooMany[:plan.MaxItems]
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, spec200); return err })
	if n := len(e.planItems(key, 2)); n != plan.MaxItems {
		t.Fatalf("%d items stored, want %d", n, plan.MaxItems)
	}
}

// TestRejectKeepsSpecs: "Reject with feedback" copies the current revision
// into the next one; the copied items keep their specs (the work to run
// again is the same work), and the marked item runs again.
func TestRejectKeepsSpecs(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	items := planItems(t, "one", "two")
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, items); return err })
	one := 1
	e.update(func(tx *store.Tx) error {
		_, err := tx.RejectWithFeedback(key, actionIDs.UUID(), 2, []store.NoteInput{{Item: &one, Text: "redo one"}})
		return err
	})
	want := []store.PlanItem{{Item: 1, Title: "one", RunAgain: true, Spec: items[0].Spec}, {Item: 2, Title: "two", Spec: items[1].Spec}}
	if diff := cmp.Diff(want, e.planItems(key, 3)); diff != "" {
		t.Fatalf("revision 3 (-want +got):\n%s", diff)
	}
}
