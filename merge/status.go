package merge

import (
	"context"
	"errors"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/store"
)

// Status is a task's merge as the review screen shows it: its latest merge
// attempt, if any.
type Status struct {
	Attempt *store.MergeAttempt
}

// DisplayStatus is displayStatus and queue polling: the task's latest
// merge attempt, and, when it is still submitting (an outcome GitHub never
// confirmed) or queued and no call of its own is in flight, GitHub read
// again and the outcome it shows recorded. That write is on the request's
// path, through the write gate: after shutdown step 3 it fails with
// ShuttingDownError, which is returned, never swallowed ("F1 makes each of
// those catch blocks rethrow ShuttingDownError first"). A GitHub read that
// fails is not an answer: the attempt is shown as it is.
func (c *Coordinator) DisplayStatus(ctx context.Context, planKey string) (Status, error) {
	m, ok, err := c.latest(planKey)
	if err != nil || !ok {
		return Status{}, err
	}
	if m.Terminal() || c.cfg.Host == nil || m.Repo == "" {
		return Status{Attempt: &m}, nil
	}
	var inFlight bool
	if err := c.cfg.Loop.Call(ctx, func() { inFlight = c.jobs[m.ID] != nil }); err != nil {
		return Status{}, err
	}
	if inFlight {
		return Status{Attempt: &m}, nil
	}
	pr, rerr := c.cfg.Host.PullRequest(ctx, m.Repo, m.Number)
	if rerr != nil {
		c.trace("merge %s: GitHub could not be read for its status: %v", m.ID, rerr)
		return Status{Attempt: &m}, nil
	}
	var obsErr error
	if err := c.cfg.Loop.Call(ctx, func() { obsErr = c.observe(c.cfg.Store.Update, m, pr) }); err != nil {
		return Status{}, err
	}
	if obsErr != nil {
		return Status{}, obsErr
	}
	m, _, err = c.latest(planKey)
	return Status{Attempt: &m}, err
}

func (c *Coordinator) latest(planKey string) (m store.MergeAttempt, ok bool, err error) {
	err = c.cfg.Store.View(func(tx *store.Tx) (err error) {
		m, ok, err = tx.LatestMerge(planKey)
		return err
	})
	return
}

// observe records what GitHub shows of an attempt that is still in
// flight, through update: merged closes the task; closed without a merge
// is removed (requiring a fresh review); an open pull request changes
// nothing (a queued merge waits, a submitting one keeps its ownership).
// The attempt is read again inside the transaction, so an outcome the
// merge's own settlement recorded meanwhile is not written twice.
func (c *Coordinator) observe(update func(func(*store.Tx) error) error, m store.MergeAttempt, pr codehost.PullRequest) error {
	if !pr.Merged && pr.State == "open" {
		return nil
	}
	return update(func(tx *store.Tx) error {
		now, err := tx.MergeAttempt(m.ID)
		if err != nil || now.Terminal() {
			return err
		}
		if pr.Merged {
			c.trace("merge %s: GitHub shows it merged", m.ID)
			return tx.FinishMergeMerged(m.ID)
		}
		c.trace("merge %s: GitHub shows the pull request closed without a merge", m.ID)
		return tx.EndMerge(m.ID, store.MergeRemoved, "the pull request left the merge queue, closed without a merge: review the task again before merging")
	})
}

// Reconcile is the merge coordinator's startup, after the runner's
// recovery: "The next startup checks GitHub again, so a skipped merge
// observation is recovered." Every attempt still submitting or queued is
// read on GitHub: merged closes its task, closed without a merge is
// removed, and a submitting one whose pull request is still open was never
// merged (GitHub's merge is synchronous, and no call of this process is in
// flight), so it fails and can be asked for again. A queued one waits for
// the queue. A read that fails leaves the attempt as it is. It returns the
// first storage error.
func (c *Coordinator) Reconcile(ctx context.Context) error {
	if c.cfg.Host == nil {
		return nil
	}
	var active []store.MergeAttempt
	if err := c.cfg.Store.View(func(tx *store.Tx) (err error) {
		active, err = tx.ActiveMerges()
		return err
	}); err != nil {
		return err
	}
	var errs []error
	for _, m := range active {
		if m.Repo == "" {
			continue // written before the coordinator: nothing to read
		}
		pr, err := c.cfg.Host.PullRequest(ctx, m.Repo, m.Number)
		if err != nil {
			c.trace("startup: merge %s: GitHub could not be read (%v); left %s", m.ID, err, m.State)
			continue
		}
		callErr := c.cfg.Loop.Call(ctx, func() {
			if m.State == store.MergeSubmitting && !pr.Merged && pr.State == "open" {
				c.trace("startup: merge %s was never merged: failed", m.ID)
				err = c.cfg.Store.Update(func(tx *store.Tx) error {
					return tx.EndMerge(m.ID, store.MergeFailed, "codeboost stopped before GitHub confirmed the merge, and it was not merged: merge again")
				})
				return
			}
			err = c.observe(c.cfg.Store.Update, m, pr)
		})
		errs = append(errs, callErr, err)
	}
	return errors.Join(errs...)
}
