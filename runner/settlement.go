package runner

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// settled handles D's settlement: the container and its capture stopped.
func (c *Coordinator) settled(j *job, s dadapter.Settlement) {
	j.settled = &s
	c.stopTimers(j)
	c.traceAttempt(j.attemptID, "settled %s stop=%q exit=%d", j.attemptID, s.StopReason, s.ExitCode)
	if len(s.Unreleased) > 0 {
		c.unreleased = true // recorded durably with the terminal write, before the slot is freed
	}
	if j.startNotSaved {
		// The row is still pending: only startup recovery can reconcile it.
		c.toMarker(j, words.StartNotSaved)
		return
	}
	o, _, err := c.decide(j)
	if err != nil {
		c.traceAttempt(j.attemptID, "settlement read failed %s: %v", j.attemptID, err)
		c.toMarker(j, words.ResultNotSaved)
		return
	}
	switch {
	case o.publish:
		c.publishResult(j)
	case c.auditsFailedRun(j, s):
		c.inspect(j, func(finding string, _ dadapter.ChangeManifest) {
			j.finding = finding
			c.finishAfterSettle(j, o)
		})
	default:
		c.finishAfterSettle(j, o)
	}
}

// decide reads durable state and applies rule 2 (decideTerminal) with the
// job's first reason (memory first: it is the source of truth until the
// terminal write).
func (c *Coordinator) decide(j *job) (outcome, store.Attempt, error) {
	a, task, present, err := c.read(j)
	if err != nil {
		return outcome{}, a, err
	}
	first, cause := j.firstReason, j.staleCause
	if first == "" {
		first, cause = a.FirstReason, a.StaleCause
	}
	if first == "" && task.CancelRequested != "" {
		// A pending cancel task always carries first reason cancelled (cancel
		// task records both in one transaction). One committed by a writer
		// this process did not see still decides the row: step 4's reread
		// after the publication guard refused completed.
		first = words.ReasonCancelled
	}
	s := j.settled
	f := terminalFacts{
		firstReason: first, staleCause: cause, presentCause: store.StaleCause(a.Context, present),
		settled: true, stopReason: s.StopReason, exitCode: s.ExitCode, outputValid: validOutput(j.kind, s.Output),
		diagnostic: s.Diagnostic, output: string(s.Output),
		timeoutMinutes: int(a.Deadline.Sub(a.CreatedAt).Minutes()),
	}
	o := decideTerminal(f)
	if first != "" && j.firstReason == "" {
		j.firstReason, j.staleCause = first, cause
	}
	return o, a, nil
}

// publishResult is publication: for a writable attempt the file-scope
// audit reads what the agent changed and the commit is taken out of task
// storage (both before any Store write), then one transaction runs every
// guard and writes completed with the ledger entry. An audit finding is
// written instead of a commit: the attempt completes, the task goes to
// needs human, and nothing of the agent's work is committed or fetched.
func (c *Coordinator) publishResult(j *job) {
	if !j.writable {
		c.publishNow(j, "")
		return
	}
	if j.storage == nil {
		c.finishAfterSettle(j, outcome{state: words.Failed, diagnostic: "the commit could not be taken: task storage is gone"})
		return
	}
	c.inspect(j, func(finding string, m dadapter.ChangeManifest) {
		if finding != "" {
			j.finding = finding
			c.publishNow(j, "")
			return
		}
		paths, err := c.outOfScope(j, m)
		if err != nil {
			c.finishAfterSettle(j, outcome{state: words.Failed, diagnostic: "the scope audit could not read the plan item: " + err.Error()})
			return
		}
		j.scope.Paths = paths
		c.takeCommit(j)
	})
}

// takeCommit is step 5's first half: commitTaskChanges returns the commit,
// which D takes into the runner-owned repository; nothing reaches the
// Store until publishNow.
func (c *Coordinator) takeCommit(j *job) {
	ctx, cancel := context.WithCancel(context.Background())
	c.traceAttempt(j.attemptID, "commit extraction %s", j.attemptID)
	c.deps.D.CommitTaskChanges(ctx, j.storage, func(b dadapter.Bundle, err error) {
		c.post(func() {
			cancel()
			if err != nil {
				c.traceAttempt(j.attemptID, "commit extraction failed %s: %v", j.attemptID, err)
				c.finishAfterSettle(j, outcome{state: words.Failed, diagnostic: commitFailure(err)})
			} else {
				c.traceAttempt(j.attemptID, "commit extracted %s %s", j.attemptID, b.Commit)
				j.scope.Leaves, j.scope.LeavesCut = b.Leaves, b.LeavesCut
				c.publishNow(j, b.Commit)
			}
		})
	})
}

// commitFailure is the diagnostic of a commit that could not be taken:
// changes over the commit limit say so in the words the person reads
// (words.CommitOverLimit), anything else names D's error.
func commitFailure(err error) string {
	if big, ok := errors.AsType[*dadapter.CommitTooLarge](err); ok {
		return big.Error()
	}
	return "the commit could not be taken: " + err.Error()
}

// publishNow is publication steps 3 and 4.
func (c *Coordinator) publishNow(j *job, commit string) {
	c.fp.Hook("runner/before-publish")
	if j.firstReason != "" {
		// Step 3: a first reason held in memory (its write failed, or a
		// stop arrived after validation) skips publication.
		c.traceAttempt(j.attemptID, "publication skipped %s: first reason %s in memory", j.attemptID, j.firstReason)
		o, _, err := c.decide(j)
		if err != nil {
			c.toMarker(j, words.ResultNotSaved)
			return
		}
		c.finishAfterSettle(j, o)
		return
	}
	var state words.State
	err := c.withFinding(j, func(tx *store.Tx) (err error) {
		state, err = tx.Publish(j.attemptID, j.settled.Output, commit, j.settled.ExitCode)
		if err == nil && state == words.Completed && commit != "" && len(j.scope.Paths) > 0 {
			err = c.pauseForScope(tx, j)
		}
		return err
	})
	switch {
	case err == nil:
		c.traceAttempt(j.attemptID, "published %s %s", j.attemptID, state)
		c.afterTerminal(j, state)
	case isRefusal(err):
		// Step 4: reread durable state and settle by the rules above,
		// keeping the original diagnostic. The fetched ref is dropped with
		// the storage.
		c.traceAttempt(j.attemptID, "publication refused %s: %v", j.attemptID, err)
		o, _, rerr := c.decide(j)
		if rerr != nil {
			c.toMarker(j, words.ResultNotSaved)
			return
		}
		if o.publish { // nothing changed that rule 2 sees: the refusal decides
			o = outcome{state: words.Failed, diagnostic: "result refused: " + err.Error()}
		}
		c.finishAfterSettle(j, o)
	default:
		c.traceAttempt(j.attemptID, "publication failed %s: %v", j.attemptID, err)
		c.toMarker(j, words.ResultNotSaved)
	}
}

func isRefusal(err error) bool { _, ok := store.IsRefusal(err); return ok }

// finishAfterSettle follows the task-storage holder order: settled → the
// partial-output export (a writable attempt that did not complete) → the
// terminal write with diagnostic_ref → host files → removeTaskFilesystems →
// the slot is freed.
func (c *Coordinator) finishAfterSettle(j *job, o outcome) {
	if !j.writable || j.storage == nil {
		c.writeTerminal(j, o, func() { c.afterTerminal(j, o.state) })
		return
	}
	c.exportPartial(j, func(ref, exportErr string) {
		o := c.redecide(j, o)
		if exportErr != "" {
			if o.diagnostic != "" {
				o.diagnostic += "; "
			}
			o.diagnostic += exportErr
		}
		o.diagnosticRef = ref
		c.writeTerminal(j, o, func() { c.afterTerminal(j, o.state) })
	})
}

// redecide applies rule 2 again right before the terminal write of a job
// whose decision waited on I/O (the partial-output export, and before it the
// commit extraction). The row was still running meanwhile, so a cancel attempt
// or cancel task could record a first reason on it, and a context change could
// make it non-current; once a first reason is recorded, or the context is no
// longer current, only the matching terminal state is legal, and the Store
// would refuse the earlier decision (leaving a marker, though nothing failed).
// A decision nothing has overruled is kept, with its diagnostic.
func (c *Coordinator) redecide(j *job, o outcome) outcome {
	n, _, err := c.decide(j)
	switch {
	case err != nil:
		return o // the decision stands; the terminal write's own guard reads the rows again
	case n.publish, n.state == o.state && n.firstReason == o.firstReason:
		return o
	}
	c.traceAttempt(j.attemptID, "decided again %s: %s (was %s)", j.attemptID, n.state, o.state)
	return n
}

// writeTerminal is the terminal write. On failure the job becomes a marker
// that holds the slot and keeps the first reason in memory.
func (c *Coordinator) writeTerminal(j *job, o outcome, next func()) {
	first := j.firstReason
	if o.state == words.Failed && first != "" && first != words.ReasonShutdown {
		first = "" // unreachable by rule 2; keep Legal's view consistent
	}
	term := store.Terminal{State: o.state, FirstReason: first, StaleCause: o.staleCause, Diagnostic: o.diagnostic,
		DiagnosticRef: o.diagnosticRef}
	if o.state == words.Stale && term.StaleCause == "" {
		term.StaleCause = j.staleCause
	}
	if s := j.settled; s != nil {
		term.StopReason = s.StopReason
		exit := s.ExitCode
		term.ExitCode = &exit
		if len(s.Unreleased) > 0 {
			b, _ := json.Marshal(s.Unreleased)
			term.Unreleased = string(b)
		}
	}
	err := c.withFinding(j, func(tx *store.Tx) error { return tx.Finish(j.attemptID, term) })
	if err != nil {
		c.traceAttempt(j.attemptID, "terminal write failed %s: %v", j.attemptID, err)
		c.toMarker(j, words.ResultNotSaved)
		return
	}
	c.traceAttempt(j.attemptID, "terminal %s %s %q", j.attemptID, o.state, o.diagnostic)
	if o.diagnosticRef != "" {
		c.retention()
	}
	next()
}

// withFinding runs a terminal write through the shutdown capability with
// j's safety finding recorded first, in the same transaction ("The runner's
// own audit records it on the attempt … before the terminal write"). When
// that fails for a reason other than a refusal and there is a finding, the
// finding's save is what may have failed: it is held in memory, owed at a
// human gate (owed.go), and the terminal write is made again without it,
// so that the attempt still ends.
func (c *Coordinator) withFinding(j *job, write func(tx *store.Tx) error) error {
	err := c.deps.Capability.Update(func(tx *store.Tx) error {
		if j.finding != "" {
			if err := tx.RecordSafetyFinding(j.attemptID, j.finding); err != nil {
				return err
			}
		}
		return write(tx)
	})
	if err == nil || j.finding == "" || isRefusal(err) {
		return err
	}
	c.traceAttempt(j.attemptID, "safety finding of %s not saved: %v", j.attemptID, err)
	c.owe(j)
	j.finding = ""
	return c.deps.Capability.Update(write)
}

// afterTerminal releases what outlives the terminal write, in order.
func (c *Coordinator) afterTerminal(j *job, state words.State) {
	j.completed = state == words.Completed
	if j.handle == nil {
		c.release(j)
		return
	}
	c.removeHostFiles(j, func() { c.release(j) })
}

// release removes task storage, then frees the slot and drops the job.
func (c *Coordinator) release(j *job) {
	if j.storage == nil {
		c.freeSlot(j)
		return
	}
	fs := j.storage
	c.deps.D.RemoveTaskFilesystems(fs, func(err error) {
		c.post(func() {
			if err != nil {
				c.traceAttempt(j.attemptID, "storage not removed %s: %v", j.attemptID, err)
				c.toMarker(j, words.StorageNotRemoved)
			} else {
				c.traceAttempt(j.attemptID, "storage removed %s", j.attemptID)
				j.storage = nil
				c.releaseCommit(j.attemptID, j.writable && !j.completed, fs, func() { c.freeSlot(j) })
			}
		})
	})
}

// releaseCommit is the "Release" row of the runner-owned repository: after
// the terminal write and the storage's removal, the commit ref of a
// writable attempt that did not complete is dropped (a refused
// publication's fetched commit among them). A ref left behind is garbage
// in the runner-owned repository, not a hazard: a failure is traced, and
// the slot is freed all the same. then runs on the loop once the drop has
// ended (at once when there is nothing to drop): the job ends only then, so
// shutdown, which awaits every job, never exits with the drop's git
// process still writing the runner-owned repository.
func (c *Coordinator) releaseCommit(attemptID string, drop bool, fs dadapter.TaskFilesystems, then func()) {
	if !drop {
		then()
		return
	}
	c.deps.D.ReleaseTaskCommit(fs, func(err error) {
		c.post(func() {
			if err != nil {
				c.traceAttempt(attemptID, "commit ref of %s not dropped: %v", attemptID, err)
			}
			then()
		})
	})
}

func (c *Coordinator) freeSlot(j *job) {
	if c.jobs[j.planKey] != j {
		return
	}
	delete(c.jobs, j.planKey)
	c.slotsUsed--
	c.traceAttempt(j.attemptID, "slot freed %s", j.attemptID)
	c.itemEnded(j)
}

// toMarker turns the job into an unresolved marker: the slot stays held and
// admission and retry for the task are blocked until startup recovery.
func (c *Coordinator) toMarker(j *job, reason string) {
	if c.jobs[j.planKey] != j {
		return
	}
	delete(c.jobs, j.planKey)
	c.markers[j.planKey] = &marker{attemptID: j.attemptID, reason: reason, firstReason: j.firstReason}
	c.traceAttempt(j.attemptID, "unresolved %s %s", j.attemptID, reason)
	c.itemEnded(j)
}
