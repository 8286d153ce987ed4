package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestCheckRunAgainChecksTheTaskAsRetryDoes: run again and retry share the
// task's half of their check (againTask), which GET /api/runner's offers
// also run: a stale review attempt runs again on a running task, and not
// while a requeue is pending, nor on a task that waits on a person, nor on
// a task that is not running or queued.
func TestCheckRunAgainChecksTheTaskAsRetryDoes(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	a := e.running(key, words.KindReview)
	if err := e.finish(a.ID, store.Terminal{State: words.Stale, FirstReason: words.ReasonStale, StaleCause: "the plan moved"}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	check := func() error {
		task := e.task(key)
		return e.s.View(func(tx *store.Tx) error {
			_, err := tx.CheckRunAgain(key, a.ID, task.StateVersion)
			return err
		})
	}
	if err := check(); err != nil {
		t.Fatalf("CheckRunAgain of a stale review attempt of a running task: %v", err)
	}
	e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, key)
	wantRefusal(t, check(), store.CodeRequeuePending)
	e.rawExec(`UPDATE tasks SET requeue_pending = 0 WHERE plan_key = ?`, key)
	for _, status := range []words.TaskStatus{words.StatusNeedsHuman, words.StatusInReview, words.StatusCancelled} {
		e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, status, key)
		wantRefusal(t, check(), store.CodeNotRetryable)
	}
}
