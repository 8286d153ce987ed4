package runner

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// settled handles D's settlement: the container and its capture stopped.
// The holder goes on: a writable attempt to its audit (audit), a
// read-only one to its terminal write (terminalWrite), one whose start was
// never saved to its marker.
func (c *Coordinator) settled(j *job, s dadapter.Settlement) {
	j.settled = &s
	c.traceAttempt(j.attemptID, "settled %s stop=%q exit=%d", j.attemptID, s.StopReason, s.ExitCode)
	if len(s.Unreleased) > 0 {
		c.unreleased = true // recorded durably with the terminal write, before the slot is freed
	}
	c.step(j, holder.SettledEv{})
}

// audit is a writable attempt's inspection, the holder's Audit: rule 2's
// decision, then publication's audit and commit extraction when it
// publishes, or the audit of a failed run for a finding. It reports
// Inspected, completed when publication's write is to follow.
func (c *Coordinator) audit(j *job) {
	if !c.decideNow(j) {
		c.step(j, holder.Inspected{Err: errNotDecided})
		return
	}
	switch {
	case j.outcome.publish:
		c.publishResult(j)
	case c.auditsFailedRun(j, *j.settled):
		c.inspect(j, func(finding string, _ dadapter.ChangeManifest) {
			j.finding = finding
			c.step(j, holder.Inspected{})
		})
	default:
		c.step(j, holder.Inspected{})
	}
}

var errNotDecided = errors.New("the settlement could not be read")

// decideNow makes j's decision by rule 2 (decide): at settlement, and
// again when publication is skipped or refused. It reports false when
// the rows could not be read.
func (c *Coordinator) decideNow(j *job) bool {
	o, _, err := c.decide(j)
	if err != nil {
		c.traceAttempt(j.attemptID, "settlement read failed %s: %v", j.attemptID, err)
		return false
	}
	j.outcome, j.decided = o, true
	return true
}

// decide reads durable state and applies rule 2 (decideTerminal) with the
// job's first reason (memory first: it is the source of truth until the
// terminal write).
func (c *Coordinator) decide(j *job) (outcome, store.Attempt, error) {
	a, task, present, err := c.read(j)
	if err != nil {
		return outcome{}, a, err
	}
	first, cause := j.h.First, j.staleCause
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
		diagnostic: s.Diagnostic, output: string(s.Output), stderr: string(s.Stderr),
		timeoutMinutes: int(a.Deadline.Sub(a.CreatedAt).Minutes()),
	}
	o := decideTerminal(f)
	if first != "" && j.h.First == "" {
		// A reason recorded by a writer this process did not see: from
		// here memory holds it too (publication step 3 reads memory).
		j.staleCause = cause
		c.step(j, holder.Stop{Reason: first})
	}
	return o, a, nil
}

// publishResult is publication for a writable attempt: the file-scope
// audit reads what the agent changed and the commit is taken out of task
// storage (both before any Store write); publishNow's one transaction then
// runs every guard and writes completed with the ledger entry. An audit
// finding is written instead of a commit: the attempt completes, the task
// goes to needs human, and nothing of the agent's work is committed or
// fetched.
func (c *Coordinator) publishResult(j *job) {
	if j.storage == nil {
		c.notPublished(j, "the commit could not be taken: task storage is gone")
		return
	}
	c.inspect(j, func(finding string, m dadapter.ChangeManifest) {
		if finding != "" {
			j.finding = finding
			c.step(j, holder.Inspected{Completed: true})
			return
		}
		paths, err := c.outOfScope(j, m)
		if err != nil {
			c.notPublished(j, "the scope audit could not read the plan item: "+err.Error())
			return
		}
		j.scope.Paths = paths
		c.takeCommit(j)
	})
}

// notPublished ends the inspection of an attempt that rule 2 would have
// published, failed with diag.
func (c *Coordinator) notPublished(j *job, diag string) {
	j.outcome = outcome{state: words.Failed, diagnostic: diag}
	c.step(j, holder.Inspected{})
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
				c.notPublished(j, commitFailure(err))
			} else {
				c.traceAttempt(j.attemptID, "commit extracted %s %s", j.attemptID, b.Commit)
				j.commit = b.Commit
				j.scope.Leaves, j.scope.LeavesCut = b.Leaves, b.LeavesCut
				c.step(j, holder.Inspected{Completed: true})
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

// terminalWrite is the holder's WriteTerminal: for an attempt that ended
// without D, the failure or stop that ended it; for a settled one,
// publication (steps 3 and 4) when rule 2 publishes, else rule 2's
// decision, made now for a read-only attempt (a writable one decided it
// at its audit, and again after its export).
func (c *Coordinator) terminalWrite(j *job) {
	switch {
	case !j.h.Launched:
		c.writeTerminal(j, c.endOutcome(j))
	case !j.decided && !c.decideNow(j):
		c.step(j, holder.Wrote{Err: errNotDecided})
	case j.outcome.publish:
		c.publishNow(j)
	default:
		c.writeTerminal(j, j.outcome)
	}
}

// publishNow is publication steps 3 and 4. A decision they overrule is
// written instead, after the partial output's export for a writable
// attempt (holder.Overruled).
func (c *Coordinator) publishNow(j *job) {
	c.fp.Hook("runner/before-publish")
	if j.h.First != "" {
		// Step 3: a first reason held in memory (its write failed, or a
		// stop arrived after validation) skips publication.
		c.traceAttempt(j.attemptID, "publication skipped %s: first reason %s in memory", j.attemptID, j.h.First)
		if !c.decideNow(j) {
			c.step(j, holder.Wrote{Err: errNotDecided})
			return
		}
		c.overrule(j)
		return
	}
	var state words.State
	err := c.withFinding(j, func(tx *store.Tx) (err error) {
		state, err = tx.Publish(j.attemptID, j.settled.Output, j.commit, j.settled.ExitCode)
		if err == nil && state == words.Completed && j.commit != "" && len(j.scope.Paths) > 0 {
			err = c.pauseForScope(tx, j)
		}
		return err
	})
	switch {
	case err == nil:
		c.traceAttempt(j.attemptID, "published %s %s", j.attemptID, state)
		c.step(j, holder.Wrote{NotCompleted: state != words.Completed})
	case isRefusal(err):
		// Step 4: reread durable state and settle by the rules above,
		// keeping the original diagnostic. The fetched ref is dropped with
		// the storage.
		c.traceAttempt(j.attemptID, "publication refused %s: %v", j.attemptID, err)
		if !c.decideNow(j) {
			c.step(j, holder.Wrote{Err: errNotDecided})
			return
		}
		if j.outcome.publish { // nothing changed that rule 2 sees: the refusal decides
			j.outcome = outcome{state: words.Failed, diagnostic: "result refused: " + err.Error()}
		}
		c.overrule(j)
	default:
		c.traceAttempt(j.attemptID, "publication failed %s: %v", j.attemptID, err)
		c.step(j, holder.Wrote{Err: err})
	}
}

// overrule has the holder make the terminal write again with j's new
// decision, which publishes nothing: publication is tried once.
func (c *Coordinator) overrule(j *job) {
	j.outcome.publish = false
	c.step(j, holder.Overruled{})
}

func isRefusal(err error) bool { _, ok := store.IsRefusal(err); return ok }

// export is the holder's Export: a writable attempt that did not
// complete has its partial output exported (its diagnostic_ref), and its
// decision made again, since the row was running meanwhile (redecide).
func (c *Coordinator) export(j *job) {
	if j.storage == nil {
		c.step(j, holder.Exported{})
		return
	}
	c.exportPartial(j, func(ref, exportErr string) {
		o := c.redecide(j, j.outcome)
		if exportErr != "" {
			if o.diagnostic != "" {
				o.diagnostic += "; "
			}
			o.diagnostic += exportErr
		}
		o.diagnosticRef = ref
		j.outcome = o
		c.step(j, holder.Exported{})
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

// writeTerminal is the terminal write of o. On failure the holder keeps
// the job as a marker that holds the slot and keeps the first reason in
// memory.
func (c *Coordinator) writeTerminal(j *job, o outcome) {
	first := j.h.First
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
		c.step(j, holder.Wrote{Err: err})
		return
	}
	c.traceAttempt(j.attemptID, "terminal %s %s %q", j.attemptID, o.state, o.diagnostic)
	if o.diagnosticRef != "" {
		c.retention()
	}
	c.step(j, holder.Wrote{})
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

// release is the holder's RemoveStorage: removeTaskFilesystems.
func (c *Coordinator) release(j *job) {
	if j.storage == nil {
		c.step(j, holder.StorageRemoved{})
		return
	}
	c.deps.D.RemoveTaskFilesystems(j.storage, func(err error) {
		c.post(func() {
			if err != nil {
				c.traceAttempt(j.attemptID, "storage not removed %s: %v", j.attemptID, err)
			} else {
				c.traceAttempt(j.attemptID, "storage removed %s", j.attemptID)
			}
			c.step(j, holder.StorageRemoved{Err: err})
		})
	})
}

// releaseCommit is the holder's ReleaseCommit: the removed storage's
// commit ref is dropped (dropCommit).
func (c *Coordinator) releaseCommit(j *job) {
	if j.storage == nil { // no storage was ever allocated: no commit to drop
		c.step(j, holder.CommitReleased{})
		return
	}
	c.dropCommit(j.attemptID, j.storage, func() { c.step(j, holder.CommitReleased{}) })
}

// dropCommit is the "Release" row of the runner-owned repository: after
// the terminal write and the storage's removal, the commit ref of a
// writable attempt that did not complete is dropped (a refused
// publication's fetched commit among them). A ref left behind is garbage
// in the runner-owned repository, not a hazard: a failure is traced, and
// the slot is freed all the same. then runs on the loop once the drop has
// ended: the job ends only then, so shutdown, which awaits every job,
// never exits with the drop's git process still writing the runner-owned
// repository.
func (c *Coordinator) dropCommit(attemptID string, fs dadapter.TaskFilesystems, then func()) {
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
	c.markers[j.planKey] = &marker{attemptID: j.attemptID, reason: reason, firstReason: j.h.First}
	c.traceAttempt(j.attemptID, "unresolved %s %s", j.attemptID, reason)
	c.itemEnded(j)
}
