package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Rule 1 of "Rules for the running state": a stop request does not end the
// attempt. It sets the first reason on the in-memory job, writes it onto the
// row, and asks D to stop (or aborts preparation). The slot stays held.

// stop records reason as j's first reason. With tx non-nil (a user action)
// the durable write joins that transaction and the in-memory effect waits for
// its commit: a rolled-back action drops the stop. If the reason write itself
// throws, the stop applies at once, shown as not saved. It reports whether
// this stop became the first reason (false: an earlier reason wins).
func (c *Coordinator) stop(j *job, reason words.Reason, staleCause string, tx *store.Tx) bool {
	if j.h.First != "" {
		return false // the first reason wins, in memory
	}
	var err error
	write := func(tx *store.Tx) error { return tx.RecordFirstReason(j.attemptID, reason, staleCause) }
	if tx != nil {
		err = write(tx)
	} else {
		err = c.write(write)
	}
	switch {
	case err == nil:
		if tx != nil {
			tx.AfterCommit(func() { c.applyStop(j, reason, staleCause, true) })
		} else {
			c.applyStop(j, reason, staleCause, true)
		}
		return true
	case store.RefusalCode(err) == store.CodeFirstReasonSet:
		// The row already holds an earlier reason (for example from earlier
		// in this same transaction): that one wins.
		return false
	default:
		c.traceAttempt(j.attemptID, "first reason %s for %s not saved: %v", reason, j.attemptID, err)
		c.noteUnsavedStop(j)
		c.applyStop(j, reason, staleCause, false)
		return true
	}
}

// stopHintName is the file a failed first-reason write leaves in the
// attempt directory. The contract's one way to lose a first reason is a
// crash after a failed reason write and before a successful terminal write;
// recovery "cannot recover a reason that was never saved", but it adds "a
// stop may have been requested" to the diagnostic, and this file, written
// outside the database that just failed, is how it knows that a write may
// have failed. It is best effort: with no attempt directory yet (a stop
// during storage allocation) there is nowhere to leave it. It is empty: its
// existence is all recovery reads, and it carries no reason because recovery
// "cannot recover a reason that was never saved" and must not try (the
// reason is in the trace and the log).
const stopHintName = "stop-requested"

func (c *Coordinator) noteUnsavedStop(j *job) {
	p := filepath.Join(c.attemptDir(j.attemptID), stopHintName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		if !errors.Is(err, fs.ErrExist) {
			c.traceAttempt(j.attemptID, "stop hint for %s not left: %v", j.attemptID, err)
		}
		return
	}
	f.Close()
}

// applyStop is the in-memory effect of a stop: the holder keeps the
// first reason and asks for the preparation's abort or D's cancel with
// the matching reason.
func (c *Coordinator) applyStop(j *job, reason words.Reason, staleCause string, saved bool) {
	if c.jobs[j.planKey] != j || j.h.First != "" {
		return // the job ended meanwhile, or an earlier reason wins
	}
	j.staleCause, j.reasonSaved = staleCause, saved
	c.traceAttempt(j.attemptID, "stopping %s: %s (saved=%v)", j.attemptID, reason, saved)
	c.step(j, holder.Stop{Reason: reason})
}

// armTimers arms the attempt deadline (preparation only: once D has a
// handle, timeouts are D's job) and the whole-task budget.
func (c *Coordinator) armTimers(j *job, a store.Admitted) {
	now := c.deps.Clock.Now()
	j.deadlineTimer = c.afterFunc(a.Deadline.Sub(now), func() { c.deadlinePassed(j) })
	j.budgetTimer = c.afterFunc(a.BudgetDeadline.Sub(now), func() { c.budgetSpent(j) })
}

func (c *Coordinator) stopTimers(j *job) {
	if j.deadlineTimer != nil {
		j.deadlineTimer.Stop()
	}
	if j.budgetTimer != nil {
		j.budgetTimer.Stop()
	}
}

// deadlinePassed: before D's start, the job aborts preparation with timeout
// and records no first reason; the row ends failed "Timed out while
// preparing". After D's start the deadline is D's to enforce. A deadline
// whose event arrives after the preparation ended changes nothing (the
// holder takes it and does nothing).
func (c *Coordinator) deadlinePassed(j *job) {
	if c.jobs[j.planKey] != j || j.h.Launched || j.h.First != "" || j.h.PrepTimedOut {
		return
	}
	c.traceAttempt(j.attemptID, "attempt deadline passed while preparing %s", j.attemptID)
	c.step(j, holder.PrepDeadline{})
}

// budgetSpent follows rule 1 with first reason time-limit (rule 4).
func (c *Coordinator) budgetSpent(j *job) {
	if c.jobs[j.planKey] != j || j.settled != nil {
		return
	}
	c.trace("task budget spent %s", j.planKey)
	c.stop(j, words.ReasonTimeLimit, "", nil)
}
