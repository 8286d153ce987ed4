package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestCheckRetryRefusesWhileARequeueIsPending: "the task is running or
// queued with no requeue pending" is part of the Store half of Retry, so a
// failed attempt that would otherwise be retried is refused while recovery
// has listed the task to requeue (resume claims it), and retried once the
// mark is gone. Sweep survivor (seed 20261203):
// store/admission.go:Tx.CheckRetry:drop-guard:271020de.
func TestCheckRetryRefusesWhileARequeueIsPending(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	a := e.running(key, words.KindReview)
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	check := func() error {
		task := e.task(key)
		return e.s.View(func(tx *store.Tx) error {
			_, err := tx.CheckRetry(key, a.ID, task.StateVersion)
			return err
		})
	}
	if err := check(); err != nil {
		t.Fatalf("CheckRetry of a failed review attempt with no requeue pending: %v", err)
	}
	e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, key)
	wantRefusal(t, check(), store.CodeRequeuePending)
}
