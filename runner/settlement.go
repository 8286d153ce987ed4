package runner

import (
	"context"
	"encoding/json"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// validOutput is publication step 2's schema and size check: a JSON value
// of at most 1 MiB.
func validOutput(out []byte) bool {
	return len(out) > 0 && len(out) <= store.MaxResult && json.Valid(out)
}

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
	o, a, err := c.decide(j)
	if err != nil {
		c.traceAttempt(j.attemptID, "settlement read failed %s: %v", j.attemptID, err)
		c.toMarker(j, words.ResultNotSaved)
		return
	}
	if !o.publish && j.writable && j.firstReason == "" && c.deps.Audit != nil {
		if f := c.deps.Audit(a, s); f != "" {
			j.finding = f
		}
	}
	if o.publish {
		c.publishResult(j)
		return
	}
	c.finishAfterSettle(j, o)
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
		settled: true, stopReason: s.StopReason, exitCode: s.ExitCode, outputValid: validOutput(s.Output),
		diagnostic: s.Diagnostic, output: string(s.Output),
		timeoutMinutes: int(a.Deadline.Sub(a.CreatedAt).Minutes()),
	}
	o := decideTerminal(f)
	if first != "" && j.firstReason == "" {
		j.firstReason, j.staleCause = first, cause
	}
	return o, a, nil
}

// publishResult is publication: for a writable attempt the commit is taken
// out of task storage first (before any Store write), then one transaction
// runs every guard and writes completed with the ledger entry.
func (c *Coordinator) publishResult(j *job) {
	if !j.writable {
		c.publishNow(j, "")
		return
	}
	if j.storage == nil {
		c.finishAfterSettle(j, outcome{state: words.Failed, diagnostic: "the commit could not be taken: task storage is gone"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.traceAttempt(j.attemptID, "commit extraction %s", j.attemptID)
	c.deps.D.CommitTaskChanges(ctx, j.storage, func(b dadapter.Bundle, err error) {
		c.post(func() {
			cancel()
			if err != nil {
				c.traceAttempt(j.attemptID, "commit extraction failed %s: %v", j.attemptID, err)
				c.finishAfterSettle(j, outcome{state: words.Failed, diagnostic: "the commit could not be taken: " + err.Error()})
			} else {
				c.traceAttempt(j.attemptID, "commit extracted %s %s", j.attemptID, b.Commit)
				c.publishNow(j, b.Commit)
			}
		})
	})
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
	err := c.deps.Capability.Update(func(tx *store.Tx) (err error) {
		if j.finding != "" {
			if err := tx.RecordSafetyFinding(j.attemptID, j.finding); err != nil {
				return err
			}
		}
		state, err = tx.Publish(j.attemptID, j.settled.Output, commit, j.settled.ExitCode)
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
	err := c.deps.Capability.Update(func(tx *store.Tx) error {
		if j.finding != "" {
			if err := tx.RecordSafetyFinding(j.attemptID, j.finding); err != nil {
				return err
			}
		}
		return tx.Finish(j.attemptID, term)
	})
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

// afterTerminal releases what outlives the terminal write, in order.
func (c *Coordinator) afterTerminal(j *job, state words.State) {
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
				c.freeSlot(j)
			}
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
