package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Preparation is its own abortable unit, tracked by the job like an
// invocation: the storage allocation (D), then the task clone (the helper
// runs git in its own process group under the fixed attempt directory). Each
// step reports back as an event. A stop aborts the in-flight step and waits
// for it to report; only then are host-side files removed and the terminal
// state written (the "Launch" table).

// Its end is the holder's Prepared: the tree check's answer, or the
// first failure or stop.

// prepareStorage starts the allocation under the allocation ID that the
// admission transaction saved on the row, so a crash mid-allocation still
// leaves a row that matches what D created.
func (c *Coordinator) prepareStorage(j *job) {
	if !c.markPreparationStarting(j) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.prepCancel, j.prepBusy = cancel, true
	owner := dadapter.StorageOwner{RunnerOwner: c.cfg.Owner, AttemptID: j.attemptID, AllocationID: j.allocationID}
	c.traceAttempt(j.attemptID, "prepare storage %s", j.attemptID)
	c.deps.D.PrepareTaskFilesystems(ctx, owner, j.source, c.onGroup(j), func(fs dadapter.TaskFilesystems, err error) {
		c.post(func() { c.storagePrepared(j, fs, err) })
	})
}

func (c *Coordinator) storagePrepared(j *job, fs dadapter.TaskFilesystems, err error) {
	j.prepBusy = false
	c.preparationStepEnded(j)
	if fs != nil {
		j.storage = fs
		c.traceAttempt(j.attemptID, "storage ready %s", j.attemptID)
	}
	// The baseline is saved in this same event, before anything else can
	// run: on the way to the clone it rides in the clone's "preparation
	// starting" write (one commit fewer per attempt); on every other way
	// out it is written on its own first.
	if err != nil || c.stopping(j) {
		if werr := c.saveBaseline(j, nil); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		c.preparationFailed(j, "task storage: "+err.Error())
		return
	}
	if c.preparationStopped(j) {
		return
	}
	c.prepareClone(j)
}

// saveBaseline writes the storage's metadata baseline and base onto the row
// once, joining tx when given.
func (c *Coordinator) saveBaseline(j *job, tx *store.Tx) error {
	if j.storage == nil || j.baselineSaved {
		return nil
	}
	write := func(tx *store.Tx) error {
		return tx.SetStorageBaseline(j.attemptID, j.storage.MetadataBaseline(), j.storage.Base())
	}
	if tx != nil {
		if err := write(tx); err != nil {
			return err
		}
		tx.AfterCommit(func() { j.baselineSaved = true })
		return nil
	}
	err := c.write(write)
	if err == nil {
		j.baselineSaved = true
	}
	return err
}

func (c *Coordinator) prepareClone(j *job) {
	dir := c.attemptDir(j.attemptID)
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) { // the parent goes first, once
		if err = os.MkdirAll(filepath.Dir(dir), 0o700); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	if err != nil {
		c.saveBaseline(j, nil)
		c.preparationFailed(j, "attempt directory: "+err.Error())
		return
	}
	if !c.markPreparationStarting(j) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.prepCancel, j.prepBusy = cancel, true
	c.traceAttempt(j.attemptID, "clone %s", j.attemptID)
	// The clone is made at the commit the storage was seeded from, so the
	// agent and F look at the same tree even when the source named none.
	src := dadapter.Source{Repository: j.source.Repository, Commit: j.storage.Base()}
	c.deps.D.CreateTaskClone(ctx, dir, src, c.onGroup(j), func(cl dadapter.Clone, err error) {
		c.post(func() { c.clonePrepared(j, cl, err) })
	})
}

func (c *Coordinator) clonePrepared(j *job, cl dadapter.Clone, err error) {
	j.prepBusy = false
	c.preparationStepEnded(j)
	if err != nil {
		c.preparationFailed(j, "clone: "+err.Error())
		return
	}
	j.clone = cl
	c.traceAttempt(j.attemptID, "clone ready %s", j.attemptID)
	if c.preparationStopped(j) {
		return
	}
	c.checkTree(j)
}

// markPreparationStarting is the first of the contract's three writes
// around each spawn ("Preparation processes have a durable owner"): it saves
// preparation_started_at with a null group before D spawns, so a crash
// before onGroup's write leaves an attempt that startup recovery's step 7
// names instead of forgetting. If it cannot be saved, nothing is spawned.
func (c *Coordinator) markPreparationStarting(j *job) bool {
	if err := c.write(func(tx *store.Tx) error {
		if err := c.saveBaseline(j, tx); err != nil {
			return err
		}
		return tx.MarkPreparationStarting(j.attemptID, c.deps.Clock.Now())
	}); err != nil {
		// The baseline rode in the write that failed: save it on its own,
		// so that the storage stays exportable if the terminal write fails
		// too and a crash follows.
		c.saveBaseline(j, nil)
		c.preparationFailed(j, "preparation mark: "+err.Error())
		return false
	}
	j.groupReported = false
	return true
}

// preparationStepEnded runs when a step's done arrives: D calls it only
// after everything the step started has stopped. A step that failed before
// it spawned anything never reported a group, and its "preparation
// starting" mark would otherwise make the next start fail closed (step 7)
// over a process that never existed; so the mark is cleared here. A mark
// whose group was saved stays for recovery's step 2b, as the contract says.
func (c *Coordinator) preparationStepEnded(j *job) {
	if j.groupReported {
		return
	}
	if err := c.write(func(tx *store.Tx) error { return tx.ClearPreparationStarting(j.attemptID) }); err != nil {
		c.traceAttempt(j.attemptID, "preparation mark of %s not cleared: %v", j.attemptID, err)
	}
}

// onGroup saves each preparation process group in the same turn as the
// spawn. The callback may come from another goroutine, so the write is posted.
func (c *Coordinator) onGroup(j *job) func(dadapter.ProcessGroup) {
	return func(g dadapter.ProcessGroup) {
		c.post(func() {
			j.groupReported = true
			c.write(func(tx *store.Tx) error {
				return tx.SetPreparationGroup(j.attemptID, g.PGID, g.StartedAt, g.Identity)
			})
		})
	}
}

// stopping reports whether j's preparation must go no further: a stop or
// the attempt deadline came, or the holder has moved on (a stop that a
// hook ran between two steps already ended it).
func (c *Coordinator) stopping(j *job) bool {
	return j.h.First != "" || j.h.PrepTimedOut || j.h.Phase != holder.Preparing
}

// preparationStopped ends the preparation of a job that was stopped or
// timed out while a step ran; it reports whether it did.
func (c *Coordinator) preparationStopped(j *job) bool {
	if !c.stopping(j) {
		return false
	}
	if j.h.Phase == holder.Preparing {
		c.step(j, holder.Prepared{})
	}
	return true
}

// preparationFailed ends the preparation with a failure; the step has
// already stopped its own subprocesses. A first reason or the deadline,
// if one came, decides the row instead (endOutcome).
func (c *Coordinator) preparationFailed(j *job, diag string) {
	if c.preparationStopped(j) {
		return
	}
	j.outcome = outcome{state: words.Failed, diagnostic: diag}
	c.step(j, holder.Prepared{Err: errors.New(diag)})
}

// abortPreparation aborts the in-flight step. The job waits for that step
// to report before it ends: the step's subprocesses may still be running.
// Between two steps (a stop from a hook, or the launch check's budget)
// nothing is in flight, and the preparation ends now.
func (c *Coordinator) abortPreparation(j *job) {
	if !j.prepBusy {
		c.step(j, holder.Prepared{})
		return
	}
	c.traceAttempt(j.attemptID, "abort preparation %s", j.attemptID)
	if j.prepCancel != nil {
		j.prepCancel()
	}
}

// launch is the holder's Start: the launch check and D's start call, in
// one event with no await between them. The check is the start's first
// half, so a check that ends the attempt reports as a start that failed.
func (c *Coordinator) launch(j *job) {
	c.fp.Hook("runner/before-launch-check")
	if j.h.First != "" {
		c.launchFailed(j, outcome{}) // the hook stopped the job: that stop ends it, with no launch decision
		return
	}
	a, task, present, err := c.read(j)
	if err != nil {
		c.launchFailed(j, outcome{state: words.Failed, diagnostic: "launch check: " + err.Error()})
		return
	}
	if a.FirstReason != "" && j.h.First == "" {
		j.staleCause = a.StaleCause
		c.step(j, holder.Stop{Reason: a.FirstReason})
	}
	if j.h.First != "" {
		c.traceAttempt(j.attemptID, "launch check %s: first reason %s", j.attemptID, j.h.First)
		c.launchFailed(j, outcome{})
		return
	}
	if cause := store.StaleCause(a.Context, present); cause != "" {
		c.traceAttempt(j.attemptID, "launch check %s: not current (%s)", j.attemptID, cause)
		j.staleCause = cause
		c.launchFailed(j, outcome{state: words.Stale, diagnostic: cause})
		return
	}
	now := c.deps.Clock.Now()
	if task.BudgetDeadline != nil && !now.Before(*task.BudgetDeadline) {
		c.traceAttempt(j.attemptID, "launch check %s: task budget spent", j.attemptID)
		c.stop(j, words.ReasonTimeLimit, "", nil)
		c.launchFailed(j, outcome{state: words.Failed, diagnostic: words.TaskTimeLimitReached})
		return
	}
	if !now.Before(a.Deadline) {
		c.traceAttempt(j.attemptID, "launch check %s: deadline passed", j.attemptID)
		c.launchFailed(j, outcome{state: words.Failed, diagnostic: words.TimedOutWhilePreparing})
		return
	}
	in := dadapter.InvocationInput{
		RunnerOwner: c.cfg.Owner, AttemptID: j.attemptID, Phase: a.Phase, Deadline: a.Deadline, Storage: j.storage,
		Clone: j.clone, Tree: j.tree, Profile: profileFor(c.cfg.Profile, j.kind),
		Context: dadapter.InvocationContext{SnapshotID: a.Context.SnapshotID, PlanID: a.Context.PlanID,
			PlanRevision: a.Context.PlanRevision, AssignmentID: a.Context.AssignmentID,
			ReferencedCodeHash: a.Context.ReferencedCodeHash, StateVersion: a.Context.Generation},
	}
	if c.deps.Prompt != nil {
		in.Prompt = c.deps.Prompt(a)
	}
	if c.deps.Output != nil {
		in.Output = c.deps.Output(j.attemptID)
	}
	h, err := c.deps.D.Start(in)
	if err != nil {
		c.traceAttempt(j.attemptID, "d start %s threw: %v", j.attemptID, err)
		c.launchFailed(j, outcome{state: words.Failed, diagnostic: "launch: " + err.Error()})
		return
	}
	c.traceAttempt(j.attemptID, "d started %s", j.attemptID)
	j.handle = h
	h.OnSettled(func(s dadapter.Settlement) {
		c.post(func() { c.settled(j, s) })
	})
	c.step(j, holder.Started{})
}

// launchFailed ends a launch that gave D nothing to run, with o for the
// terminal write (a first reason, if one came, decides instead).
func (c *Coordinator) launchFailed(j *job, o outcome) {
	j.outcome = o
	c.step(j, holder.Started{Err: errNotStarted})
}

var errNotStarted = errors.New("not started")

// markRunning is the holder's SaveStart: pending → running.
func (c *Coordinator) markRunning(j *job) {
	c.fp.Hook("runner/before-mark-running")
	err := c.write(func(tx *store.Tx) error { return tx.MarkRunning(j.attemptID) })
	switch {
	case err == nil:
		c.traceAttempt(j.attemptID, "running %s", j.attemptID)
	case store.RefusalCode(err) == store.CodeFirstReasonSet:
		// A stop landed while preparation finished: a normal stop. If the
		// stop is already held in memory, D was asked to stop with its
		// reason; D is asked once. If the row cannot be read either, the
		// reason is unknown here: D runs on, and settlement's reread of
		// the row (decide) ends it by that reason.
		reason := j.h.First
		if a, rerr := c.deps.Store.Attempt(j.attemptID); rerr == nil && reason == "" {
			reason, j.staleCause = a.FirstReason, a.StaleCause
		}
		c.traceAttempt(j.attemptID, "pending → running refused %s: first reason %s", j.attemptID, reason)
		c.step(j, holder.Stop{Reason: reason})
		err = nil
	default:
		c.traceAttempt(j.attemptID, "pending → running failed %s: %v", j.attemptID, err)
	}
	c.step(j, holder.StartSaved{Err: err})
}

// read reads, in one transaction, what the launch check and settlement
// look at: the attempt row, its task and the task's present context.
func (c *Coordinator) read(j *job) (a store.Attempt, task store.Task, present store.Context, err error) {
	err = c.deps.Store.View(func(tx *store.Tx) (err error) {
		if a, err = tx.Attempt(j.attemptID); err != nil {
			return err
		}
		task, present, err = tx.TaskAndPresent(j.planKey)
		return err
	})
	return
}

// endOutcome is the terminal write of an attempt that ended without D's
// invocation (the "Launch" table): the failure that ended it, unless a
// first reason came (a stop that landed while the host files were being
// removed decides the row, as it would have a moment earlier) or the
// attempt deadline aborted the preparation.
func (c *Coordinator) endOutcome(j *job) outcome {
	o := j.outcome
	if o.state == "" || o.state == words.Failed {
		switch {
		case j.h.First != "":
			o = outcome{state: terminalForReason(j.h.First), diagnostic: reasonDiagnostic(j.h.First, j.staleCause)}
		case j.h.PrepTimedOut:
			o = outcome{state: words.Failed, diagnostic: words.TimedOutWhilePreparing}
		}
	}
	o.staleCause = j.staleCause
	return o
}

// removeHostFiles removes the attempt directory (and the clone in it).
func (c *Coordinator) removeHostFiles(j *job) {
	dir := c.attemptDir(j.attemptID)
	var err error
	c.goWork(func() { err = os.RemoveAll(dir) }, func() {
		if err != nil {
			c.traceAttempt(j.attemptID, "host files of %s not removed: %v", j.attemptID, err)
		} else {
			c.traceAttempt(j.attemptID, "host files removed %s", j.attemptID)
		}
		c.step(j, holder.HostFilesRemoved{Err: err})
	})
}

func terminalForReason(reason words.Reason) words.State {
	switch reason {
	case words.ReasonStale:
		return words.Stale
	case "":
		return words.Failed
	}
	return words.Cancelled
}

// reasonDiagnostic is rule 2's diagnostic for a first reason, so that a row
// that ends without a handle says why, as a settled one does.
func reasonDiagnostic(reason words.Reason, staleCause string) string {
	switch reason {
	case words.ReasonCancelled:
		return words.CancelledByUser
	case words.ReasonShutdown:
		return words.StoppedByShutdown
	case words.ReasonTimeLimit:
		return words.TaskTimeLimitReached
	case words.ReasonStale:
		return staleCause
	}
	return ""
}

// profileFor is the agent profile an attempt of kind runs with. A check
// attempt is credential-free ("The composed deps accept execute and
// credential-free check attempts"): it runs the task's own checks over
// the agent's work, which may have planted code to read them, so it gets
// none of the profile's credentials.
func profileFor(p dadapter.AgentProfile, kind string) dadapter.AgentProfile {
	if kind == words.KindCheck {
		p.Env = nil
	}
	return p
}
