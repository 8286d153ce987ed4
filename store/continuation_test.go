package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The scope continuation's rules are proven end to end by scenarios
// F-106…F-109; these tests hold the Store's own refusals that no runner
// path reaches: a pause for anything but the head's completed item, and a
// continuation from a checkpoint whose tree D could not list whole.

// publishedItem admits item 1 of key as an execute attempt, publishes it with
// commit, and returns the attempt's ID.
func (e *env) publishedItem(key, commit string) string {
	e.t.Helper()
	one := 1
	req := e.admitReq(key, words.KindExecute)
	req.Item = &one
	a, err := e.s.Admit(req)
	if err != nil {
		e.t.Fatalf("Admit: %v", err)
	}
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	if _, err := e.publish(a.ID, []byte(`{"summary":"done"}`), commit); err != nil {
		e.t.Fatalf("Publish: %v", err)
	}
	return a.ID
}

func TestPauseForAmendmentRefusesWhatIsNotTheHeadsItem(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	id := e.publishedItem(key, "c1")
	finding := store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: []string{"docs/x.md"}}

	e.update(func(tx *store.Tx) error { return tx.RecordHistory(key, "", "c2") }) // the head moved on
	err := e.s.Update(func(tx *store.Tx) error { return tx.PauseForAmendment(id, finding) })
	if store.RefusalCode(err) != store.CodeIllegal || !strings.Contains(err.Error(), "is not the task's head") {
		t.Fatalf("a pause behind the head: %v, want a refusal naming the head", err)
	}
	err = e.s.Update(func(tx *store.Tx) error { return tx.PauseForAmendment(id, store.ScopeFinding{}) })
	if store.RefusalCode(err) != store.CodeBadInput {
		t.Fatalf("a pause with no path: %v, want bad input", err)
	}
	check := e.running(key, words.KindCheck)
	if _, err := e.publish(check.ID, []byte(`{"passed":true}`), ""); err != nil {
		t.Fatalf("Publish(check): %v", err)
	}
	err = e.s.Update(func(tx *store.Tx) error { return tx.PauseForAmendment(check.ID, finding) })
	if store.RefusalCode(err) != store.CodeIllegal {
		t.Fatalf("a pause for a check attempt: %v, want a refusal", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM checkpoints`); n != 0 || e.task(key).Status != words.StatusRunning {
		t.Fatalf("refused pauses left %d checkpoints and status %s", n, e.task(key).Status)
	}
}

func TestApproveContinuationRefusesACutTree(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	id := e.publishedItem(key, "c1")
	e.update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(id, store.ScopeFinding{Paths: []string{"docs/x.md"}, LeavesCut: true})
	})
	if got := e.task(key).Status; got != words.StatusNeedsAmendment {
		t.Fatalf("status %s after the pause", got)
	}
	doc, err := plan.Parse([]byte(`{"format": "codeboost-plan/1", "title": "P", "items": [
		{"title": "one", "scope": ["docs/x.md"]}, {"title": "two"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		t.Fatal(err)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, items); return err })
	var cp store.Checkpoint
	var ok bool
	e.update(func(tx *store.Tx) (err error) { cp, ok, err = tx.LatestCheckpoint(key); return err })
	if !ok || cp.AttemptID != id || cp.Commit != "c1" || cp.Leaves != nil || cp.Approval != nil {
		t.Fatalf("checkpoint %+v (found %v): want attempt %s at c1 with no leaves and no approval", cp, ok, id)
	}
	task := e.task(key)
	err = e.s.Update(func(tx *store.Tx) error {
		rv := 0
		_, err := tx.ApproveContinuation(key, task.StateVersion, rv)
		return err
	})
	if store.RefusalCode(err) != store.CodeIllegal || !strings.Contains(err.Error(), "could not keep its commit's tree") {
		t.Fatalf("approve-continuation from a cut tree: %v, want a refusal saying why", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != 0 || e.task(key).Status != words.StatusNeedsAmendment {
		t.Fatalf("the refusal left %d approvals and status %s", n, e.task(key).Status)
	}
}
