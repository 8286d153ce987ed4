package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

var mergeIDs = ids.NewSeeded(99)

func (e *env) beginMerge(key string) string {
	e.t.Helper()
	id := mergeIDs.UUID()
	e.update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, id) })
	return id
}

func (e *env) closedEvents(key string) int64 {
	return e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = 'task-closed'`, key)
}

// Rule 2: only a confirmed merged outcome closes the task, in one
// transaction with the attempt's merged state and the task-closed event.
func TestMergeConfirmedClosesInOneTransaction(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	id := e.beginMerge(key)
	e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) })
	if got := e.task(key).Status; got != words.StatusInReview {
		t.Fatalf("status after submitting and queued = %q, want in review", got)
	}
	if n := e.closedEvents(key); n != 0 {
		t.Fatalf("task-closed before the confirmed merge: %d", n)
	}
	// The transaction's COMMIT fails: none of the three writes stays.
	e.fp.Enable("store/commit", "1*return")
	if err := e.s.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) }); err == nil {
		t.Fatal("FinishMergeMerged committed through a failing COMMIT")
	}
	if st := e.rawString(`SELECT state FROM merge_attempts WHERE id = ?`, id); st != store.MergeQueued || e.task(key).Status != words.StatusInReview || e.closedEvents(key) != 0 {
		t.Fatalf("a rolled-back confirmation left state %q, status %q, %d events", st, e.task(key).Status, e.closedEvents(key))
	}
	e.update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
	if st := e.rawString(`SELECT state FROM merge_attempts WHERE id = ?`, id); st != store.MergeMerged {
		t.Fatalf("merge attempt state = %q", st)
	}
	if got := e.task(key).Status; got != words.StatusMerged {
		t.Fatalf("status = %q, want merged", got)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = 'task-closed' AND action_id = ?`, key, id); n != 1 {
		t.Fatalf("task-closed keyed by the merge attempt: %d", n)
	}
	// A second confirmation is refused; nothing is duplicated.
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) }), store.CodeIllegal)
	if n := e.closedEvents(key); n != 1 {
		t.Fatalf("task-closed events = %d", n)
	}
}

func TestMergeStatesNeverClose(t *testing.T) {
	e := newEnv(t)
	for _, final := range []string{store.MergeRemoved, store.MergeFailed} {
		key := e.newTask(words.StatusInReview)
		id := e.beginMerge(key)
		wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, mergeIDs.UUID()) }), store.CodeMergeActive)
		e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, final) })
		if e.task(key).Status != words.StatusInReview || e.closedEvents(key) != 0 {
			t.Fatalf("%s closed the task", final)
		}
		wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) }), store.CodeIllegal)
		wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) }), store.CodeIllegal)
	}
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.SetMergeState(mergeIDs.UUID(), store.MergeFailed) }), store.CodeNotFound)
	key := e.newTask(words.StatusInReview)
	id := e.beginMerge(key)
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeMerged) }), store.CodeBadInput)
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, "not-a-uuid") }), store.CodeBadInput)
}

// "Cancel task is refused while a merge attempt is submitting or queued,
// including when its outcome is unclear"; after removed or failed it closes.
func TestCancelTaskRefusedWhileMerging(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	id := e.beginMerge(key)
	cancel := func() error {
		return e.s.Update(func(tx *store.Tx) error {
			_, _, err := tx.CancelTask(key, mergeIDs.UUID(), true)
			return err
		})
	}
	wantRefusal(t, cancel(), store.CodeMergeActive)
	e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) })
	wantRefusal(t, cancel(), store.CodeMergeActive)
	if e.task(key).Status != words.StatusInReview || e.closedEvents(key) != 0 {
		t.Fatal("a refused cancel task wrote something")
	}
	e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeFailed) })
	if err := cancel(); err != nil {
		t.Fatalf("cancel task after a failed merge: %v", err)
	}
	if e.task(key).Status != words.StatusCancelled || e.closedEvents(key) != 1 {
		t.Fatal("cancel task did not close the task")
	}
	// A closed task can never change to merged.
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, mergeIDs.UUID()) }), store.CodeTaskClosed)
}

// Recovery step 5: a merged attempt without its status or its event is
// repaired once; a second run repairs nothing.
func TestReconcileMergedOnce(t *testing.T) {
	e := newEnv(t)
	noEvent := e.newTask(words.StatusInReview)   // status merged, event lost
	noStatus := e.newTask(words.StatusInReview)  // neither
	complete := e.newTask(words.StatusInReview)  // both: untouched
	queued := e.newTask(words.StatusInReview)    // not confirmed: untouched
	cancelled := e.newTask(words.StatusInReview) // closed: never changes
	e.beginMerge(queued)
	full := e.beginMerge(complete)
	e.update(func(tx *store.Tx) error { return tx.FinishMergeMerged(full) })
	e.update(func(tx *store.Tx) error {
		_, _, err := tx.CancelTask(cancelled, mergeIDs.UUID(), true)
		return err
	})
	ids := map[string]string{}
	for _, key := range []string{noEvent, noStatus, cancelled} {
		ids[key] = mergeIDs.UUID()
		e.rawExec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at) VALUES (?, ?, 'merged', 0, 0)`, ids[key], key)
	}
	e.rawExec(`UPDATE tasks SET status = 'merged' WHERE plan_key = ?`, noEvent)
	before := e.task(complete).StateVersion

	var fixed []string
	e.update(func(tx *store.Tx) (err error) { fixed, err = tx.ReconcileMerged(); return err })
	if len(fixed) != 2 || fixed[0] != noEvent || fixed[1] != noStatus {
		t.Fatalf("repaired %v, want [%s %s]", fixed, noEvent, noStatus)
	}
	for _, key := range []string{noEvent, noStatus} {
		if e.task(key).Status != words.StatusMerged {
			t.Fatalf("%s status = %q", key, e.task(key).Status)
		}
		if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = 'task-closed' AND action_id = ?`, key, ids[key]); n != 1 {
			t.Fatalf("%s: %d task-closed keyed by its merge attempt", key, n)
		}
	}
	if e.task(queued).Status != words.StatusInReview || e.closedEvents(queued) != 0 {
		t.Fatal("a queued merge was reconciled")
	}
	if e.task(cancelled).Status != words.StatusCancelled || e.closedEvents(cancelled) != 1 {
		t.Fatal("a cancelled task was changed")
	}
	if e.task(complete).StateVersion != before || e.closedEvents(complete) != 1 {
		t.Fatal("a complete merged task was touched")
	}
	e.update(func(tx *store.Tx) (err error) { fixed, err = tx.ReconcileMerged(); return err })
	if len(fixed) != 0 {
		t.Fatalf("second reconciliation repaired %v", fixed)
	}
	for _, key := range []string{noEvent, noStatus} {
		if n := e.closedEvents(key); n != 1 {
			t.Fatalf("%s: %d task-closed after two runs", key, n)
		}
	}
}

// The rebase marker: set by compare-and-swap from null, cleared by
// compare-and-swap on its attemptId.
func TestRebaseMarkerCompareAndSwap(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	a, b := mergeIDs.UUID(), mergeIDs.UUID()
	e.update(func(tx *store.Tx) error { return tx.SetRebaseInProgress(key, a) })
	if got := e.task(key).RebaseInProgress; got != `{"attemptId":"`+a+`"}` {
		t.Fatalf("marker = %s", got)
	}
	wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return tx.SetRebaseInProgress(key, b) }), store.CodeIllegal)
	var list []store.Rebase
	e.update(func(tx *store.Tx) (err error) { list, err = tx.RebasesInProgress(); return err })
	if len(list) != 1 || list[0].PlanKey != key || list[0].AttemptID != a {
		t.Fatalf("rebases = %+v", list)
	}
	var ok bool
	e.update(func(tx *store.Tx) (err error) { ok, err = tx.AbortRebase(key, b); return err })
	if ok || e.task(key).RebaseInProgress == "" {
		t.Fatal("another attempt's abort cleared the marker")
	}
	sv := e.task(key).StateVersion
	e.update(func(tx *store.Tx) (err error) { ok, err = tx.AbortRebase(key, a); return err })
	if !ok || e.task(key).RebaseInProgress != "" || e.task(key).StateVersion != sv+1 {
		t.Fatal("the marker's own abort did not clear it")
	}
	e.update(func(tx *store.Tx) (err error) { ok, err = tx.AbortRebase(key, a); return err })
	if ok {
		t.Fatal("a second abort reported clearing")
	}
	// An abort never moves the context.
	if e.task(key).ContextGeneration != 0 {
		t.Fatal("the rebase marker moved the context generation")
	}
}

// TestEndMergeRefusesAnEndedAttempt: SetMergeState (and EndMerge) records
// "the terminal removed or failed (from submitting or queued)": an attempt
// already merged, removed or failed is refused as illegal, and its row
// (state, reason, requires_fresh_review) and the task stay as they were.
// A merged attempt turned removed would also demand a fresh review of a
// task that is closed, and "a closed status never changes again".
func TestEndMergeRefusesAnEndedAttempt(t *testing.T) {
	e := newEnv(t)
	for _, from := range []string{store.MergeMerged, store.MergeRemoved, store.MergeFailed} {
		for _, to := range []string{store.MergeRemoved, store.MergeFailed} {
			t.Run(from+" to "+to, func(t *testing.T) {
				key := e.newTask(words.StatusInReview)
				id := e.beginMerge(key)
				if from == store.MergeMerged {
					e.update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
				} else {
					e.update(func(tx *store.Tx) error { return tx.EndMerge(id, from, "the first end") })
				}
				row := func() string {
					return e.rawString(`SELECT state || '|' || COALESCE(reason, '') || '|' || requires_fresh_review FROM merge_attempts WHERE id = ?`, id)
				}
				before, status, events := row(), e.task(key).Status, e.closedEvents(key)
				err := e.s.Update(func(tx *store.Tx) error { return tx.EndMerge(id, to, "a second end") })
				wantRefusal(t, err, store.CodeIllegal)
				if after := row(); after != before {
					t.Fatalf("refused end changed the merge attempt: %q → %q", before, after)
				}
				if e.task(key).Status != status || e.closedEvents(key) != events {
					t.Fatalf("refused end changed the task: status %q → %q, task-closed %d → %d",
						status, e.task(key).Status, events, e.closedEvents(key))
				}
			})
		}
	}
}

// TestFinishMergeMergedKeepsACancelledTask: "Closed means merged or
// cancelled ...; a closed status never changes again", and "a closed task
// can never change to merged". A task that is cancelled while its merge
// attempt is still queued (cancel task refuses that, so only another build
// or a hand edit leaves it) refuses the confirmation as task-closed, and
// nothing moves: the attempt stays queued, the task cancelled, no second
// task-closed event.
func TestFinishMergeMergedKeepsACancelledTask(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	id := e.beginMerge(key)
	e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) })
	e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusCancelled, key)
	err := e.s.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
	wantRefusal(t, err, store.CodeTaskClosed)
	if st := e.rawString(`SELECT state FROM merge_attempts WHERE id = ?`, id); st != store.MergeQueued {
		t.Fatalf("merge attempt is %q after a refused confirmation, want queued", st)
	}
	if got := e.task(key).Status; got != words.StatusCancelled {
		t.Fatalf("cancelled task became %q", got)
	}
	if n := e.closedEvents(key); n != 0 {
		t.Fatalf("refused confirmation wrote %d task-closed events", n)
	}
}

// TestReconcileMergedTwoMergedAttemptsOneRepair: a task whose merged
// status and event are missing, with two confirmed merged merge attempts
// (a resubmission both of whose confirmations landed), is repaired once,
// keyed by its first merge attempt: one status change, one task-closed
// event, and its plan key listed once.
func TestReconcileMergedTwoMergedAttemptsOneRepair(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	first, second := mergeIDs.UUID(), mergeIDs.UUID()
	e.rawExec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at) VALUES (?, ?, 'merged', 1, 1)`, first, key)
	e.rawExec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at) VALUES (?, ?, 'merged', 2, 2)`, second, key)
	before := e.task(key).StateVersion
	var fixed []string
	e.update(func(tx *store.Tx) (err error) { fixed, err = tx.ReconcileMerged(); return err })
	if len(fixed) != 1 || fixed[0] != key {
		t.Fatalf("repaired %v, want [%s] once", fixed, key)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = 'task-closed'`, key); n != 1 {
		t.Fatalf("%d task-closed events, want 1", n)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = 'task-closed' AND action_id = ?`, key, first); n != 1 {
		t.Fatal("the task-closed event is not keyed by the first merged attempt")
	}
	if task := e.task(key); task.Status != words.StatusMerged || task.StateVersion != before+1 {
		t.Fatalf("task %s at version %d; want merged at %d (one change)", task.Status, task.StateVersion, before+1)
	}
}
