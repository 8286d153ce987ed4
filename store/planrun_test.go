package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

func (e *env) approveAll(key string) {
	e.t.Helper()
	e.update(func(tx *store.Tx) error {
		for _, item := range []int{1, 2} {
			if _, err := tx.Approve(key, item); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) reviewVersion(key string) int {
	e.t.Helper()
	return int(e.rawInt(`SELECT review_version FROM plans WHERE key = ?`, key))
}

func (e *env) startPlan(key string) (store.PlanStart, error) {
	var ps store.PlanStart
	sv, rv := e.task(key).StateVersion, e.reviewVersion(key)
	err := e.s.Update(func(tx *store.Tx) (err error) {
		ps, err = tx.StartPlan(key, sv, rv)
		return err
	})
	return ps, err
}

func (e *env) resumePlan(key string) (store.PlanStart, error) {
	var ps store.PlanStart
	sv, rv := e.task(key).StateVersion, e.reviewVersion(key)
	err := e.s.Update(func(tx *store.Tx) (err error) {
		ps, err = tx.ResumePlan(key, sv, rv)
		return err
	})
	return ps, err
}

// executeItem admits, runs and ends an execute attempt for item in state.
func (e *env) executeItem(key string, item int, state words.State) store.Attempt {
	e.t.Helper()
	r := e.admitReq(key, words.KindExecute)
	r.Item = &item
	a, err := e.s.Admit(r)
	if err != nil {
		e.t.Fatalf("Admit: %v", err)
	}
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	if state == words.Completed {
		if _, err := e.publish(a.ID, []byte(`{}`), ""); err != nil {
			e.t.Fatalf("publish: %v", err)
		}
	} else if err := e.finish(a.ID, store.Terminal{State: state, Diagnostic: "boom"}); err != nil {
		e.t.Fatalf("finish: %v", err)
	}
	return e.attempt(a.ID)
}

func TestStartPlanMovesInReviewToQueuedAndNeedsApprovals(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	before := e.snap(key)
	_, err := e.startPlan(key)
	wantRefusal(t, err, store.CodeNotApproved)
	if got := e.snap(key); got.Task.Status != words.StatusInReview || got.Task.StateVersion != before.Task.StateVersion {
		t.Fatalf("refused start changed the task: %+v", got.Task)
	}
	e.approveAll(key)
	ps, err := e.startPlan(key)
	if err != nil {
		t.Fatal(err)
	}
	task := e.task(key)
	if ps.Item != 1 || task.Status != words.StatusQueued || ps.ExpectedStateVersion != task.StateVersion {
		t.Fatalf("start = %+v, task %s sv %d", ps, task.Status, task.StateVersion)
	}
}

func TestStartAndResumeRefusals(t *testing.T) {
	e := newEnv(t)
	closed := e.newTask(words.StatusCancelled)
	_, err := e.startPlan(closed)
	wantRefusal(t, err, store.CodeTaskClosed)
	_, err = e.resumePlan(closed)
	wantRefusal(t, err, store.CodeTaskClosed)

	gated := e.newTask(words.StatusNeedsHuman)
	_, err = e.startPlan(gated)
	wantRefusal(t, err, store.CodeTaskInactive)

	requeue := e.newTask("")
	e.approveAll(requeue)
	e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, requeue)
	_, err = e.startPlan(requeue)
	wantRefusal(t, err, store.CodeRequeuePending)
	ps, err := e.resumePlan(requeue) // a requeue counts as having started running
	if err != nil || !ps.ClaimRequeue || ps.Item != 1 {
		t.Fatalf("resume of a requeued task = %+v, %v", ps, err)
	}

	cancelling := e.newTask("")
	e.approveAll(cancelling)
	e.rawExec(`UPDATE tasks SET cancel_requested = 'x' WHERE plan_key = ?`, cancelling)
	_, err = e.startPlan(cancelling)
	wantRefusal(t, err, store.CodeCancelPending)

	merging := e.newTask("")
	e.approveAll(merging)
	e.update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(merging, "0f8f2a4e-9a1b-4c3d-8e5f-1a2b3c4d5e6f") })
	_, err = e.startPlan(merging)
	wantRefusal(t, err, store.CodeMergeActive)

	active := e.newTask("")
	e.approveAll(active)
	e.running(active, words.KindReview)
	_, err = e.startPlan(active)
	wantRefusal(t, err, store.CodeActiveAttempt)

	fresh := e.newTask("")
	e.approveAll(fresh)
	_, err = e.resumePlan(fresh)
	wantRefusal(t, err, store.CodeIllegal) // not started: start it instead
	sv, rv := e.task(fresh).StateVersion, e.reviewVersion(fresh)
	err = e.s.Update(func(tx *store.Tx) error {
		_, err := tx.StartPlan(fresh, sv, rv-1)
		return err
	})
	wantRefusal(t, err, store.CodeStaleReview)
}

func TestResumeStartsAtFirstItemWithoutCompletedAttempt(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.approveAll(key)
	e.executeItem(key, 1, words.Completed)
	e.executeItem(key, 2, words.Failed)
	ps, err := e.resumePlan(key)
	if err != nil || ps.Item != 2 || ps.ClaimRequeue {
		t.Fatalf("resume = %+v, %v; want item 2", ps, err)
	}
	_, err = e.startPlan(key)
	wantRefusal(t, err, store.CodeTaskInactive) // a running task is resume's
}

// An approval of a completed item survives a snapshot change when it came
// from the snapshot that item's execution used; items not yet completed need
// approvals from the current snapshot.
func TestApprovalsAfterASnapshotChange(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.approveAll(key)
	e.executeItem(key, 1, words.Completed)
	e.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") })
	_, err := e.resumePlan(key)
	if r := wantRefusal(t, err, store.CodeNotApproved); r.Message != "item 2 of revision 1 has no current approval" {
		t.Fatalf("refusal names the wrong item: %s", r.Message)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.Approve(key, 2); return err })
	if ps, err := e.resumePlan(key); err != nil || ps.Item != 2 {
		t.Fatalf("resume = %+v, %v", ps, err)
	}
}

// A choice saved after the approvals makes them stale; a note advances the
// review version, which the item executor compares with the run's own.
func TestChoicesAndNotesAgainstApprovals(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.approveAll(key)
	e.executeItem(key, 1, words.Completed)
	rv := e.reviewVersion(key)
	act := ids.NewSeeded(7)
	e.update(func(tx *store.Tx) error { _, err := tx.ChangeNote(key, act.UUID(), 2, "careful"); return err })
	if e.reviewVersion(key) != rv+1 {
		t.Fatalf("a note did not advance the review version")
	}
	err := e.s.Update(func(tx *store.Tx) error { _, _, err := tx.NextPlanItem(key, rv); return err })
	wantRefusal(t, err, store.CodeStaleReview)
	e.update(func(tx *store.Tx) error { return tx.AcceptSegment(key, act.UUID(), "seg-1") })
	_, err = e.resumePlan(key)
	wantRefusal(t, err, store.CodeNotApproved)
}

// NextPlanItem moves the task to review once every item has a completed
// execute attempt at the current revision.
func TestNextPlanItemFinishesTheRun(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.approveAll(key)
	rv := e.reviewVersion(key)
	e.executeItem(key, 1, words.Completed)
	var next store.PlanStart
	var finished bool
	e.update(func(tx *store.Tx) (err error) { next, finished, err = tx.NextPlanItem(key, rv); return })
	if finished || next.Item != 2 {
		t.Fatalf("next = %+v finished=%v", next, finished)
	}
	e.executeItem(key, 2, words.Completed)
	e.update(func(tx *store.Tx) (err error) { next, finished, err = tx.NextPlanItem(key, rv); return })
	if !finished || e.task(key).Status != words.StatusInReview {
		t.Fatalf("finished=%v status %s", finished, e.task(key).Status)
	}
}
