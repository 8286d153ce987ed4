package runner

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// A plan run is the contract's ItemExecutor at the runner's interface:
// "start" or "resume" admits the first item inside the user action's
// transaction, and after each item's attempt settles the run admits the next
// one, until every item of the current revision has a completed execute
// attempt. The run owns the review version the action was made against;
// before each later item the Store requires it unchanged and rechecks the
// approvals (store.NextPlanItem), so a choice, approval or note saved while
// an item runs stops the run and the person resumes from fresh state.
//
// A run lives only in memory, like a job: a crash loses it, and startup
// recovery's requeue (or the user's resume) continues the task. Shutdown
// step 5a awaits every run: admission is closed, so a run whose attempt
// settles during shutdown ends without admitting another item, and Drained
// waits for that.
type planRun struct {
	planKey       string
	reviewVersion int
	attemptID     string // the item attempt in flight
	item          int
}

// Start is the user's "start": it runs a task's approved plan from its first
// item (see store.StartPlan for every check).
func (c *Coordinator) Start(ctx context.Context, r ActionRequest) (store.Response, error) {
	return c.runPlan(ctx, r, "start", func(tx *store.Tx) (store.PlanStart, error) {
		return tx.StartPlan(r.PlanKey, r.ExpectedStateVersion, r.ExpectedReviewVersion)
	})
}

// Resume is the user's "resume": it continues a task's plan run at its first
// item with no completed execute attempt at the current revision. When
// recovery left the task to requeue, the admitting transaction claims
// requeue_pending by compare-and-swap: of a resume and I3's requeue (or two
// resumes) exactly one admits.
func (c *Coordinator) Resume(ctx context.Context, r ActionRequest) (store.Response, error) {
	return c.runPlan(ctx, r, "resume", func(tx *store.Tx) (store.PlanStart, error) {
		return tx.ResumePlan(r.PlanKey, r.ExpectedStateVersion, r.ExpectedReviewVersion)
	})
}

// Requeue is lane I3's requeue of a task startup recovery listed (step 6,
// "Hand lane I3 every task …"): the same admission as Resume, made by
// codeboost instead of a person, against the task's state version as it is
// now and the review version its plan run was admitted against
// (store.Task.RunReviewVersion; the present one when none is recorded). The
// run "owns the review version for the whole multi-item run", so a requeue
// goes on only where the cut run's next item would have: a review change
// since refuses it, and the person reviews and resumes. Its admitting transaction claims requeue_pending by the same
// compare-and-swap, so of I3's requeue and a person's "Resume" exactly one
// admits, and the loser is refused. It is recorded as an action of kind
// "requeue" under an ID of its own, like any admission.
func (c *Coordinator) Requeue(ctx context.Context, planKey string) (store.Response, error) {
	task, err := c.deps.Store.Task(planKey)
	if err != nil {
		return store.Response{}, err
	}
	var plan store.Plan
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { plan, err = tx.Plan(planKey); return err }); err != nil {
		return store.Response{}, err
	}
	reviewVersion := plan.ReviewVersion
	if task.RunReviewVersion != nil {
		reviewVersion = *task.RunReviewVersion
	}
	r := ActionRequest{PlanKey: planKey, ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: reviewVersion,
		ActionID: c.deps.IDs.UUID()}
	return c.runPlan(ctx, r, "requeue", func(tx *store.Tx) (store.PlanStart, error) {
		return tx.ResumePlan(r.PlanKey, r.ExpectedStateVersion, r.ExpectedReviewVersion)
	})
}

// runPlan admits a run's first item as one user action and, once it has
// committed, registers the run in the same turn as the job starts.
func (c *Coordinator) runPlan(ctx context.Context, r ActionRequest, kind string, check func(*store.Tx) (store.PlanStart, error)) (store.Response, error) {
	var item int
	return c.admitAction(ctx, r, kind, func(tx *store.Tx) (store.AdmitRequest, *store.Response, error) {
		if settled, err := c.settleOwed(tx, r.PlanKey); settled != nil || err != nil {
			return store.AdmitRequest{}, settled, err
		}
		if run := c.runs[r.PlanKey]; run != nil {
			return store.AdmitRequest{}, nil, &store.Refusal{Code: store.CodeRunFinishing,
				Message: fmt.Sprintf("an earlier plan run is still finishing item %d", run.item)}
		}
		start, err := check(tx)
		if err != nil {
			return store.AdmitRequest{}, nil, err
		}
		if start.Finished {
			if err := tx.FinishPlanRun(r.PlanKey); err != nil {
				return store.AdmitRequest{}, nil, err
			}
			tx.AfterCommit(func() {
				c.trace("plan run %s ended: every item completed; task in review (finished by %s)", r.PlanKey, kind)
			})
			return store.AdmitRequest{}, &store.Response{Outcome: "finished", Message: "Every item has completed: the task is in review."}, nil
		}
		item = start.Item
		return store.AdmitRequest{PlanKey: r.PlanKey, Kind: words.KindExecute, Item: &item,
			ExpectedStateVersion: start.ExpectedStateVersion, ClaimRequeue: start.ClaimRequeue,
			RunReviewVersion: &r.ExpectedReviewVersion}, nil, nil
	}, func(a store.Attempt) {
		c.runs[r.PlanKey] = &planRun{planKey: r.PlanKey, reviewVersion: r.ExpectedReviewVersion, attemptID: a.ID, item: item}
		c.traceAttempt(a.ID, "plan run %s: item %d as %s", r.PlanKey, item, a.ID)
	})
}

// itemEnded is called in the event that drops the run's job (slot freed, or
// the job became an unresolved marker); the run goes on in an event of its
// own, as it would after its await in the contract's ItemExecutor.
func (c *Coordinator) itemEnded(j *job) {
	run := c.runs[j.planKey]
	if run == nil || run.attemptID != j.attemptID {
		return
	}
	c.post(func() {
		c.continueRun(run)
	})
}

// continueRun admits the run's next item, or ends the run: when the item did
// not complete (failed, cancelled or stale items wait for the person's
// resume), when it became a marker, when admission is closed (shutdown step
// 5a: no run starts another item), when the Store refuses (review changed,
// approvals no longer valid, task closed or cancelling, budget spent), or
// when no item is left.
func (c *Coordinator) continueRun(run *planRun) {
	if c.runs[run.planKey] != run {
		return
	}
	c.fp.Hook("runner/before-run-continues")
	if c.runs[run.planKey] != run {
		return
	}
	end := func(why string) {
		delete(c.runs, run.planKey)
		c.trace("plan run %s ended: %s", run.planKey, why)
	}
	if _, owed := c.owed[run.planKey]; owed {
		// ItemExecutor acts on an owed finding before any next item.
		if err := c.deps.Store.Update(func(tx *store.Tx) error { _, err := c.settleOwed(tx, run.planKey); return err }); err != nil {
			end("a safety finding is owed and could not be saved: " + err.Error())
			return
		}
		end("a safety finding is owed: task needs human")
		return
	}
	a, err := c.deps.Store.Attempt(run.attemptID)
	if err != nil {
		end(err.Error())
		return
	}
	if a.State != words.Completed {
		end(fmt.Sprintf("item %d %s", run.item, a.State))
		return
	}
	release, err := c.reserve(run.planKey, words.KindExecute) // closed during shutdown: no run starts another item
	if err != nil {
		end(err.Error())
		return
	}
	var next store.Admitted
	var finished bool
	err = c.deps.Store.Update(func(tx *store.Tx) error {
		var start store.PlanStart
		var err error
		if start, finished, err = tx.NextPlanItem(run.planKey, run.reviewVersion); err != nil || finished {
			return err
		}
		item := start.Item
		next, err = tx.Admit(c.admitRequest(store.AdmitRequest{PlanKey: run.planKey, Kind: words.KindExecute, Item: &item,
			ExpectedStateVersion: start.ExpectedStateVersion, ClaimRequeue: start.ClaimRequeue}))
		return err
	})
	if err != nil || finished {
		release()
		c.deps.Store.AdmissionRefused(run.planKey, err)
		if err == nil {
			end("every item completed; task in review")
		} else {
			end(err.Error())
		}
		return
	}
	run.attemptID, run.item = next.ID, *next.Item
	c.startJob(next)
	c.traceAttempt(next.ID, "plan run %s: item %d as %s", run.planKey, run.item, next.ID)
}
