package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// importRevision imports doc (a plan document's JSON) over key's plan at
// expected revision.
func (e *env) importRevision(key string, expected int, doc string) {
	e.t.Helper()
	d, err := plan.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	items, err := store.ItemInputs(d)
	if err != nil {
		e.t.Fatal(err)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, expected, items); return err })
}

// runItem admits item of key as an execute attempt and moves it to
// running.
func (e *env) runItem(key string, item int) store.Attempt {
	e.t.Helper()
	req := e.admitReq(key, words.KindExecute)
	req.Item = &item
	a, err := e.s.Admit(req)
	if err != nil {
		e.t.Fatalf("Admit item %d: %v", item, err)
	}
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	return a.Attempt
}

// continuedThroughItem2 is an approved continuation (checkpoint at item 1,
// approved at revision 2) whose item 2 then completed with commit c2, and a
// further revision 3 that keeps the prefix and adds item 3. It returns
// item 2's attempt.
func continuedThroughItem2(t *testing.T) (*env, string, store.Attempt) {
	t.Helper()
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
	if err := e.approve(key); err != nil {
		t.Fatalf("the first approval: %v", err)
	}
	a := e.runItem(key, 2)
	if _, err := e.publish(a.ID, []byte(`{"summary":"done"}`), "c2"); err != nil {
		t.Fatalf("Publish item 2: %v", err)
	}
	e.importRevision(key, 2, `{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two", "files": [{"op": "modify", "path": "docs/x.md"}]}, {"title": "three"}]}`)
	return e, key, a
}

// TestPauseForAmendmentRefusesAFixAttemptsCommit: "only a completed
// execute attempt of a plan item records a scope checkpoint". A fix
// attempt's runner commit at the head of the ledger is not an item's
// work: the pause is refused, and no checkpoint is written nor the task
// moved. Sweep survivor (seed 20261203):
// store/continuation.go:Tx.PauseForAmendment:drop-guard:934536be.
func TestPauseForAmendmentRefusesAFixAttemptsCommit(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	e.publishedItem(key, "c1")
	fix := e.running(key, words.KindFix)
	if _, err := e.publish(fix.ID, []byte(`{"summary":"fixed"}`), "c2"); err != nil {
		t.Fatalf("Publish(fix): %v", err)
	}
	err := e.s.Update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(fix.ID, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: []string{"docs/x.md"}})
	})
	if store.RefusalCode(err) != store.CodeIllegal || !strings.Contains(err.Error(), "only a completed execute attempt of a plan item records a scope checkpoint") {
		t.Fatalf("a pause for a fix attempt's commit: %v, want a refusal saying only an item's execute attempt pauses", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM checkpoints`); n != 0 || e.task(key).Status != words.StatusRunning {
		t.Fatalf("the refused pause left %d checkpoints and status %s", n, e.task(key).Status)
	}
}

// TestApproveContinuationRefusesWhileAnItemRuns: a further revision made
// the approved continuation stale while item 2 runs; approving it again
// then is refused ("task status cannot change while an attempt is
// active"): the task is not moved to queued under its running attempt,
// and no approval is written. Sweep survivor (seed 20261203):
// store/continuation.go:Tx.ApproveContinuation:ignore-error:130211be.
func TestApproveContinuationRefusesWhileAnItemRuns(t *testing.T) {
	e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
	if err := e.approve(key); err != nil {
		t.Fatalf("the first approval: %v", err)
	}
	e.runItem(key, 2)
	e.importRevision(key, 2, `{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two", "files": [{"op": "modify", "path": "docs/x.md"}]}, {"title": "three"}]}`)
	before := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`)
	wantRefusal(t, e.approve(key), store.CodeActiveAttempt)
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != before || e.task(key).Status != words.StatusRunning {
		t.Fatalf("the refusal left %d approvals (was %d) and status %s", n, before, e.task(key).Status)
	}
}

// TestCheckpointKeepsAnEmptyTree: a runner commit whose tree D listed
// whole with no entry (Leaves nil, not cut) keeps an empty tree, not the
// "listing was cut" nil: GET /api/runner sees empty leaves, and a
// continuation that creates a file in that tree is approved rather than
// refused as unable to validate. Sweep survivor (seed 20261203):
// store/continuation.go:nonNil:drop-guard:98b7fd4e.
func TestCheckpointKeepsAnEmptyTree(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	id := e.publishedItem(key, "c1")
	e.update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(id, store.ScopeFinding{Paths: []string{"docs/x.md"}})
	})
	var cp store.Checkpoint
	e.update(func(tx *store.Tx) (err error) { cp, _, err = tx.LatestCheckpoint(key); return err })
	if cp.Leaves == nil || len(cp.Leaves) != 0 {
		t.Fatalf("checkpoint leaves %#v, want an empty, non-nil tree", cp.Leaves)
	}
	e.importRevision(key, 1, `{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two", "files": [{"op": "create", "path": "docs/new.md"}]}]}`)
	if err := e.approve(key); err != nil {
		t.Fatalf("approve a create in an empty tree: %v", err)
	}
}

// TestApproveContinuationReportsAnUnreadableLaterAttempt: when the attempt
// behind a ledger entry after the checkpoint cannot be read back (its
// captured context is not JSON), approving a further revision fails with
// that read error, not a refusal telling the person the head moved and to
// start the plan again; nothing is written. Sweep survivor (seed
// 20261203): store/continuation.go:Tx.auditedHead:ignore-error:31d5f59c~2.
func TestApproveContinuationReportsAnUnreadableLaterAttempt(t *testing.T) {
	e, key, a := continuedThroughItem2(t)
	e.rawExec(`UPDATE attempts SET context = 'not JSON' WHERE id = ?`, a.ID)
	before := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`)
	err := e.approve(key)
	if err == nil || store.RefusalCode(err) != "" || !strings.Contains(err.Error(), "has an unreadable context") {
		t.Fatalf("approve with item 2's attempt unreadable: %v, want the read error, not a refusal", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != before {
		t.Fatalf("the error left %d approvals, was %d", n, before)
	}
}

// TestApproveContinuationReportsAMissingLaterItem: the continuation's
// revision lacking the item a later ledger entry completed (a database
// another build or a failing disk left) is reported as such, not a crash
// on the missing item, and nothing is written. Sweep survivor (seed
// 20261203): store/continuation.go:Tx.prefixItems:drop-guard:9d782dad.
func TestApproveContinuationReportsAMissingLaterItem(t *testing.T) {
	e, key, _ := continuedThroughItem2(t)
	e.rawExec(`DELETE FROM plan_items WHERE plan_key = ? AND revision = 2 AND item = 2`, key)
	before := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`)
	err := e.approve(key)
	if err == nil || store.RefusalCode(err) != "" || !strings.Contains(err.Error(), "revision 2 has no item 2") {
		t.Fatalf("approve with revision 2's item 2 gone: %v, want an error naming the missing item", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != before {
		t.Fatalf("the error left %d approvals, was %d", n, before)
	}
}
