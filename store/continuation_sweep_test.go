package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// amendedWithLaterItem pauses item 1 of a new task for amendment at a
// checkpoint whose tree is leaves, and imports a revision that amends item
// 1's scope and whose item 2 declares files.
func amendedWithLaterItem(t *testing.T, leaves []string, files string) (*env, string) {
	t.Helper()
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	id := e.publishedItem(key, "c1")
	e.update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(id, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: leaves})
	})
	doc, err := plan.Parse([]byte(`{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two", "files": ` + files + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		t.Fatal(err)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, items); return err })
	return e, key
}

// approve approves key's continuation at its present state and review
// versions.
func (e *env) approve(key string) error {
	task := e.task(key)
	return e.s.Update(func(tx *store.Tx) error {
		p, err := tx.Plan(key)
		if err != nil {
			return err
		}
		_, err = tx.ApproveContinuation(key, task.StateVersion, p.ReviewVersion)
		return err
	})
}

// approveWithLaterItem is amendedWithLaterItem, then the approval.
func approveWithLaterItem(t *testing.T, leaves []string, files string) error {
	t.Helper()
	e, key := amendedWithLaterItem(t, leaves, files)
	return e.approve(key)
}

// TestApproveContinuationChecksEachDeclaredDelete: "a modify, a delete or
// a rename's source must exist" in the checkpoint's tree, so a later item
// that deletes a file the tree lacks refuses the continuation, and one that
// deletes a file the tree has is approved. Sweep survivors (seed 7):
// store/continuation.go:applyOps:negate:7c26ee74~2 (the delete's check)
// and store/continuation.go:applyOps:negate:b3b9fdab (the refusal).
func TestApproveContinuationChecksEachDeclaredDelete(t *testing.T) {
	leaves := []string{"docs/x.md", "src/a.go"}
	err := approveWithLaterItem(t, leaves, `[{"op": "delete", "path": "src/gone.go"}]`)
	if store.RefusalCode(err) != store.CodeIllegal || !strings.Contains(err.Error(), "item 2's delete of src/gone.go does not fit the checkpoint's tree: it does not exist") {
		t.Fatalf("a delete of a missing file: %v, want a refusal saying it does not exist", err)
	}
	if err := approveWithLaterItem(t, leaves, `[{"op": "delete", "path": "src/a.go"}]`); err != nil {
		t.Fatalf("a delete of a file the tree has: %v, want it approved", err)
	}
}

// TestApproveContinuationRefusesAnUnreadableLaterSpec: a later item's
// stored spec that no longer parses is an error, not an item that declares
// nothing and so fits any tree: the continuation is not approved, and the
// task stays paused. Sweep survivor (seed 7):
// store/continuation.go:applyOps:ignore-error:31d5f59c.
func TestApproveContinuationRefusesAnUnreadableLaterSpec(t *testing.T) {
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "delete", "path": "src/gone.go"}]`)
	e.rawExec(`UPDATE plan_items SET spec = '{"title": 2' WHERE plan_key = ? AND item = 2 AND revision = (SELECT MAX(revision) FROM plan_items WHERE plan_key = ?)`, key, key)
	err := e.approve(key)
	if err == nil || !strings.Contains(err.Error(), "plan item 2's spec") {
		t.Fatalf("approve with item 2's spec unreadable: %v, want the spec's error", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != 0 || e.task(key).Status != words.StatusNeedsAmendment {
		t.Fatalf("the error left %d approvals and status %s", n, e.task(key).Status)
	}
}

// TestApproveContinuationRefusesARevisionShorterThanThePrefix: a pause at
// item 2 makes items 1 and 2 the completed prefix, and a revision with
// one item does not keep it: the continuation is refused, saying so (not
// a crash on the missing item). Sweep survivor (seed 5150):
// store/continuation.go:Tx.amendedPrefix:drop-guard:b0847963.
func TestApproveContinuationRefusesARevisionShorterThanThePrefix(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	e.publishedItem(key, "c1")
	two := 2
	req := e.admitReq(key, words.KindExecute)
	req.Item = &two
	a, err := e.s.Admit(req)
	if err != nil {
		t.Fatalf("Admit item 2: %v", err)
	}
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	if _, err := e.publish(a.ID, []byte(`{"summary":"done"}`), "c2"); err != nil {
		t.Fatalf("Publish item 2: %v", err)
	}
	e.update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(a.ID, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: []string{"docs/x.md"}})
	})
	doc, err := plan.Parse([]byte(`{"format": "codeboost-plan/1", "title": "P", "items": [{"title": "one"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		t.Fatal(err)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, items); return err })
	err = e.approve(key)
	if store.RefusalCode(err) != store.CodeIllegal || !strings.Contains(err.Error(), "it must keep the completed prefix, items 1 to 2") {
		t.Fatalf("approve with a one-item revision after a pause at item 2: %v, want a refusal naming the prefix", err)
	}
}

// TestApproveContinuationRefusesAnItemRunTwiceAfterThePrefix: after an
// approved continuation, the head is audited only while the runner
// commits after the checkpoint are the continuation's items "in item
// order" (auditedHead); a second commit of the same item is not, so a
// further approval refuses as the head having moved. Sweep survivor (seed 5150):
// store/continuation.go:Tx.auditedHead:boundary:50ef3295.
func TestApproveContinuationRefusesAnItemRunTwiceAfterThePrefix(t *testing.T) {
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
	if err := e.approve(key); err != nil {
		t.Fatalf("the first approval: %v", err)
	}
	run := func(item int, commit string) {
		t.Helper()
		req := e.admitReq(key, words.KindExecute)
		req.Item = &item
		a, err := e.s.Admit(req)
		if err != nil {
			t.Fatalf("Admit item %d: %v", item, err)
		}
		e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
		if _, err := e.publish(a.ID, []byte(`{"summary":"done"}`), commit); err != nil {
			t.Fatalf("Publish item %d: %v", item, err)
		}
	}
	run(2, "c2")
	run(2, "c3")
	doc, err := plan.Parse([]byte(`{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two", "files": [{"op": "modify", "path": "docs/x.md"}]}, {"title": "three"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		t.Fatal(err)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 2, items); return err })
	if err := e.approve(key); store.RefusalCode(err) != store.CodeHeadMoved {
		t.Fatalf("a further approval after item 2 ran twice: %v, want the head moved", err)
	}
}
