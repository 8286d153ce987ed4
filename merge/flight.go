package merge

import (
	"errors"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/store"
)

// A merge in flight: the final check (the pull request read again), the
// irreversible boundary, the merge command, and its settlement. Each
// GitHub call runs off the loop (Loop.Go) and reports back as an event.
// Every write here is the coordinator's settlement of its own calls, so it
// goes through the shutdown capability and lands after step 3 too; the
// saved response of the click follows it in the same transaction.

func (c *Coordinator) start(j *job) {
	c.jobs[j.m.ID] = j
	c.trace("admitted merge %s, submitting: the final check of %s#%d", j.m.ID, j.m.Repo, j.m.Number)
	var pr codehost.PullRequest
	var err error
	c.cfg.Loop.Go(func() {
		ctx, cancel := c.hostCtx()
		defer cancel()
		pr, err = c.cfg.Host.PullRequest(ctx, j.m.Repo, j.m.Number)
	}, func() { c.finalCheck(j, pr, err) })
}

// finalCheck is the irreversible boundary: after the final await, the
// task's state version, the plan's review version and the closing flag
// are read again, and any change stops the merge ("an approval or choice
// edit made during the final GitHub check blocks the merge").
func (c *Coordinator) finalCheck(j *job, pr codehost.PullRequest, err error) {
	c.cfg.Failpoints.Hook("merge/before-final-reread")
	switch {
	case err != nil:
		c.end(j, store.MergeFailed, "GitHub could not be read for the final check ("+err.Error()+"); nothing was merged: merge again")
		return
	case pr.Merged:
		c.merged(j, "merged on GitHub before codeboost asked")
		return
	case pr.State != "open":
		c.end(j, store.MergeRemoved, "the pull request was closed before the merge")
		return
	case pr.HeadSHA != j.m.HeadSHA:
		c.end(j, store.MergeFailed, "the pull request's head moved since the merge was asked for: review it again, then merge")
		return
	}
	var task store.Task
	var plan store.Plan
	rerr := c.cfg.Store.View(func(tx *store.Tx) (err error) {
		if task, err = tx.Task(j.m.PlanKey); err != nil {
			return err
		}
		plan, err = tx.Plan(j.m.PlanKey)
		return err
	})
	switch {
	case rerr != nil:
		c.end(j, store.MergeFailed, "the task could not be read again before the merge: "+rerr.Error())
		return
	case c.closing.Load():
		c.end(j, store.MergeFailed, "codeboost began shutting down before the merge was sent; nothing was merged: merge again")
		return
	case task.StateVersion != j.stateVersion || plan.ReviewVersion != j.m.ReviewVersion:
		c.end(j, store.MergeFailed, "the review changed during the final check; nothing was merged: look at it again, then merge")
		return
	}
	c.trace("merge %s: the merge command is sent at %s", j.m.ID, j.m.HeadSHA)
	var res codehost.MergeResult
	c.cfg.Loop.Go(func() {
		ctx, cancel := c.hostCtx()
		defer cancel()
		res, err = c.cfg.Host.Merge(ctx, j.m.Repo, j.m.Number, j.m.HeadSHA)
	}, func() { c.settle(j, res, err) })
}

// settle records the merge command's outcome: merged closes the task;
// queued waits for GitHub's queue; a definite refusal fails the attempt;
// an unknown outcome keeps it submitting (ownership kept: GitHub is read
// again by the next status poll and by the next start).
func (c *Coordinator) settle(j *job, res codehost.MergeResult, err error) {
	var unknown *codehost.UnknownOutcomeError
	switch {
	case err == nil && res.Merged:
		c.merged(j, "merged at "+res.SHA)
	case err == nil && res.Queued:
		c.end(j, store.MergeQueued, "")
	case errors.As(err, &unknown) || (err != nil && !codehost.Definite(err)):
		c.trace("merge %s: the outcome is unknown (%v); kept submitting until GitHub says", j.m.ID, err)
		c.done(j)
	case err != nil:
		c.end(j, store.MergeFailed, "GitHub refused the merge: "+err.Error())
	default:
		c.trace("merge %s: GitHub answered neither merged nor queued; kept submitting", j.m.ID)
		c.done(j)
	}
}

func (c *Coordinator) merged(j *job, why string) {
	if err := c.cfg.Capability.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(j.m.ID) }); err != nil {
		c.trace("merge %s: the merged outcome could not be saved (%v); the next start reads GitHub again", j.m.ID, err)
	} else {
		c.trace("merge %s merged: %s", j.m.ID, why)
	}
	c.done(j)
}

func (c *Coordinator) end(j *job, state, reason string) {
	if err := c.cfg.Capability.Update(func(tx *store.Tx) error { return tx.EndMerge(j.m.ID, state, reason) }); err != nil {
		c.trace("merge %s: %s could not be saved (%v)", j.m.ID, state, err)
	} else if reason != "" {
		c.trace("merge %s %s: %s", j.m.ID, state, reason)
	} else {
		c.trace("merge %s %s", j.m.ID, state)
	}
	c.done(j)
}

func (c *Coordinator) done(j *job) {
	delete(c.jobs, j.m.ID)
	c.inFlight.Add(-1)
	c.maybeIdle()
}
