package runner

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// User actions are events: the caller hands the action to the loop and
// waits. Each runs inside Store.UserAction, so a replayed action ID returns
// the saved outcome and applies nothing, and a stop's in-memory effect waits
// for the action's commit.

// ActionRequest names the attempt an action acts on and the caller's view.
type ActionRequest struct {
	PlanKey              string
	AttemptID            string // cancel, retry and run again act on one attempt
	ExpectedStateVersion int64
	// ExpectedReviewVersion is start's and resume's view of the review; it
	// is part of the idempotent request and must still match.
	ExpectedReviewVersion int
	ActionID              string
}

func (r ActionRequest) action(kind string) store.Action {
	return store.Action{PlanKey: r.PlanKey, ActionID: r.ActionID, Kind: kind,
		Request: struct {
			AttemptID             string `json:"attemptId"`
			ExpectedStateVersion  int64  `json:"expectedStateVersion"`
			ExpectedReviewVersion int    `json:"expectedReviewVersion,omitempty"`
		}{r.AttemptID, r.ExpectedStateVersion, r.ExpectedReviewVersion}}
}

// checkVersion reads the task in the action's transaction and compares its
// state version with the caller's; the action goes on with that one read.
func checkVersion(tx *store.Tx, planKey string, expected int64) (store.Task, error) {
	task, err := tx.Task(planKey)
	if err != nil {
		return task, err
	}
	if task.StateVersion != expected {
		return task, &store.Refusal{Code: store.CodeStaleVersion, Message: fmt.Sprintf("state version is %d, not %d", task.StateVersion, expected)}
	}
	return task, nil
}

// CancelAttempt stops the current run; the task stays open.
func (c *Coordinator) CancelAttempt(ctx context.Context, r ActionRequest) (resp store.Response, err error) {
	if callErr := c.call(ctx, func() {
		if !c.open {
			err = c.closedErr()
			return
		}
		resp, err = c.deps.Store.UserAction(r.action("cancel-attempt"), func(tx *store.Tx) (store.Response, error) {
			task, err := checkVersion(tx, r.PlanKey, r.ExpectedStateVersion)
			if err != nil {
				return store.Response{}, err
			}
			if task.CurrentAttemptID != r.AttemptID {
				return store.Response{}, &store.Refusal{Code: store.CodeNotCurrentAttempt, Message: "that attempt is not the task's current attempt"}
			}
			j := c.jobs[r.PlanKey]
			if j == nil || j.attemptID != r.AttemptID {
				return store.Response{}, &store.Refusal{Code: store.CodeIllegal, Message: "that attempt is not running in this process"}
			}
			a, err := tx.Attempt(r.AttemptID)
			if err != nil {
				return store.Response{}, err
			}
			if words.Terminal(a.State) {
				// Its terminal write has landed: the job only releases what
				// outlives it (host files, task storage), and nothing is left
				// to stop.
				return store.Response{}, &store.Refusal{Code: store.CodeIllegal, Message: fmt.Sprintf("that attempt has already ended (%s)", a.State)}
			}
			if err := c.noticeStale(j, tx); err != nil {
				return store.Response{}, err
			}
			if !c.stop(j, words.ReasonCancelled, "", tx) {
				reason := j.h.First
				if reason == "" {
					reread, err := tx.Attempt(r.AttemptID)
					if err != nil {
						return store.Response{}, err
					}
					reason = reread.FirstReason // recorded earlier in this same action
				}
				return store.Response{Outcome: "already-stopping", AttemptID: r.AttemptID, Message: "A stop was already requested: " + string(reason)}, nil
			}
			return store.Response{Outcome: "stopping", AttemptID: r.AttemptID, Message: words.LabelStopping}, nil
		})
	}); callErr != nil {
		return store.Response{}, callErr
	}
	return
}

// CancelTask closes the task, or with an active attempt records first reason
// cancelled and cancel_requested in one transaction ("Stopping, then
// cancelling"); the attempt's terminal write then closes the task.
func (c *Coordinator) CancelTask(ctx context.Context, r ActionRequest) (resp store.Response, err error) {
	if callErr := c.call(ctx, func() {
		if !c.open {
			err = c.closedErr()
			return
		}
		resp, err = c.deps.Store.UserAction(r.action("cancel-task"), func(tx *store.Tx) (store.Response, error) {
			if _, err := checkVersion(tx, r.PlanKey, r.ExpectedStateVersion); err != nil {
				return store.Response{}, err
			}
			j := c.jobs[r.PlanKey]
			if j != nil {
				if err := c.noticeStale(j, tx); err != nil {
					return store.Response{}, err
				}
			}
			if j != nil && j.h.First != "" {
				// The first reason is already held (maybe unsaved): keep
				// it; only cancel_requested is new.
				outcome, attemptID, err := tx.CancelTask(r.PlanKey, r.ActionID, false)
				return cancelTaskResponse(outcome, attemptID), err
			}
			outcome, attemptID, err := tx.CancelTask(r.PlanKey, r.ActionID, true)
			if err != nil {
				return store.Response{}, err
			}
			if j != nil && attemptID == j.attemptID {
				tx.AfterCommit(func() { c.applyStop(j, words.ReasonCancelled, "", true) })
			}
			return cancelTaskResponse(outcome, attemptID), nil
		})
	}); callErr != nil {
		return store.Response{}, callErr
	}
	return
}

// noticeStale is detected staleness inside a stop's user action: when the
// active attempt's captured context is no longer current because of a change
// made by another transaction that the runner had not yet seen, that change
// came first, so first reason stale is recorded in tx before the action's own
// stop. Both stops are then in one action and the first (stale) wins, even
// before the commit (rule 1); the cancel's stop that follows loses. Without
// it the row would end cancelled with a context that is not current, which
// can be neither retried nor run again. This holds for a job that D has
// already settled too: until its terminal write the row is running, a cancel
// still records its first reason on it, and that reason decides the row
// (redecide). A failed read is the action's storage error: the action then
// records nothing and its resend checks again, so a stop never wins over a
// context change it could not see.
func (c *Coordinator) noticeStale(j *job, tx *store.Tx) error {
	if j.h.First != "" {
		return nil // the first reason wins (stop would refuse the stale one)
	}
	a, err := tx.Attempt(j.attemptID)
	if err != nil {
		return err
	}
	if a.FirstReason != "" || words.Terminal(a.State) {
		return nil
	}
	present, err := tx.PresentContext(j.planKey)
	if err != nil {
		return err
	}
	if cause := store.StaleCause(a.Context, present); cause != "" {
		c.traceAttempt(j.attemptID, "context changed for %s: %s (noticed by a user action)", j.attemptID, cause)
		c.stop(j, words.ReasonStale, cause, tx)
	}
	return nil
}

func cancelTaskResponse(outcome, attemptID string) store.Response {
	if outcome == store.CancelTaskStopping {
		return store.Response{Outcome: outcome, AttemptID: attemptID, Message: words.StoppingThenCancel}
	}
	return store.Response{Outcome: outcome, Message: "Task cancelled"}
}

// Retry admits a new attempt for a failed or cancelled one whose context is
// still current (every check of "Retry").
func (c *Coordinator) Retry(ctx context.Context, r ActionRequest) (resp store.Response, err error) {
	return c.again(ctx, r, "retry", func(tx *store.Tx) (store.Attempt, *store.Context, error) {
		a, err := tx.CheckRetry(r.PlanKey, r.AttemptID, r.ExpectedStateVersion)
		return a, &a.Context, err
	})
}

// RunAgain is "Run again on the current code" for a stale attempt: a new
// request that captures a fresh context.
func (c *Coordinator) RunAgain(ctx context.Context, r ActionRequest) (resp store.Response, err error) {
	return c.again(ctx, r, "run-again", func(tx *store.Tx) (store.Attempt, *store.Context, error) {
		a, err := tx.CheckRunAgain(r.PlanKey, r.AttemptID, r.ExpectedStateVersion)
		return a, nil, err
	})
}

func (c *Coordinator) again(ctx context.Context, r ActionRequest, kind string, check func(*store.Tx) (store.Attempt, *store.Context, error)) (store.Response, error) {
	return c.admitAction(ctx, r, kind, func(tx *store.Tx) (store.AdmitRequest, *store.Response, error) {
		last, captured, err := check(tx)
		if err != nil {
			return store.AdmitRequest{}, nil, err
		}
		return store.AdmitRequest{PlanKey: r.PlanKey, Kind: last.Kind, Item: last.Item, Captured: captured,
			ExpectedStateVersion: r.ExpectedStateVersion}, nil, nil
	}, nil)
}

// admitAction runs a user action whose transaction ends in one admission.
// plan runs the action's own checks and names what to admit (with the state
// version admission must see); the slot is reserved in this same event, the
// admission joins the action's transaction, the job starts only after the
// commit (admitted, when given, runs right after it in that same turn), and a
// rolled-back action frees its reservation before the event ends. A refusal
// for a spent budget gets its move to needs human from Store.UserAction, in
// the transaction that records the refusal, so a refusal that could not be
// recorded (the caller gets the storage error) moves nothing, and a replay
// applies nothing. plan may instead settle the action with a response of
// its own and admit nothing (start and resume acting on an owed finding):
// its writes commit with that response.
func (c *Coordinator) admitAction(ctx context.Context, r ActionRequest, kind string, plan func(*store.Tx) (store.AdmitRequest, *store.Response, error), admitted func(store.Attempt)) (resp store.Response, err error) {
	if callErr := c.call(ctx, func() {
		if !c.open {
			err = c.closedErr()
			return
		}
		var release func()
		resp, err = c.deps.Store.UserAction(r.action(kind), func(tx *store.Tx) (store.Response, error) {
			req, settled, err := plan(tx)
			if err != nil {
				return store.Response{}, err
			}
			if settled != nil {
				return *settled, nil
			}
			if release, err = c.reserve(r.PlanKey, req.Kind); err != nil {
				return store.Response{}, err
			}
			a, err := tx.Admit(c.admitRequest(req))
			if err != nil {
				return store.Response{}, err
			}
			tx.AfterCommit(func() {
				release = nil
				c.startJob(a)
				if admitted != nil {
					admitted(a.Attempt)
				}
			})
			return store.Response{Outcome: "admitted", AttemptID: a.ID}, nil
		})
		if release != nil {
			release() // the action rolled back: free the reservation in this same event
		}
	}); callErr != nil {
		return store.Response{}, callErr
	}
	return
}

// ChangeContext runs a context-changing write (a new plan revision, snapshot,
// assignment or referenced code) and, when it makes the task's active
// attempt non-current, records first reason stale on it (detected staleness).
func (c *Coordinator) ChangeContext(ctx context.Context, planKey string, change func(tx *store.Tx) error) (err error) {
	if callErr := c.call(ctx, func() {
		if err = c.deps.Store.Update(change); err != nil {
			return
		}
		c.noticeContextChange(planKey)
	}); callErr != nil {
		return callErr
	}
	return
}

// ReviewAction runs a review or plan user action (a note, a choice, an
// approval, a rejection, a plan import) as an event, through
// Store.UserAction, so that the Store keeps one writer and a replay applies
// nothing. It is not admission: a request the HTTP server admitted before
// shutdown still saves its action while it drains, and the Store's write
// gate refuses it after step 3. When the action changed the task's context
// (a rejection or an import makes a new plan revision), the active attempt
// is stopped as stale, as ChangeContext does.
func (c *Coordinator) ReviewAction(ctx context.Context, a store.Action, fn func(tx *store.Tx) (store.Response, error)) (resp store.Response, err error) {
	if callErr := c.call(ctx, func() {
		resp, err = c.deps.Store.UserAction(a, fn)
		if err == nil && !resp.Replayed {
			c.noticeContextChange(a.PlanKey)
		}
	}); callErr != nil {
		return store.Response{}, callErr
	}
	return
}

// noticeContextChange records first reason stale on the task's active
// attempt when a committed write left its captured context no longer
// current (detected staleness).
func (c *Coordinator) noticeContextChange(planKey string) {
	j := c.jobs[planKey]
	if j == nil || j.settled != nil {
		return
	}
	a, aerr := c.deps.Store.Attempt(j.attemptID)
	present, perr := c.deps.Store.PresentContext(planKey)
	if aerr != nil || perr != nil {
		return
	}
	if cause := store.StaleCause(a.Context, present); cause != "" {
		c.traceAttempt(j.attemptID, "context changed for %s: %s", j.attemptID, cause)
		c.stop(j, words.ReasonStale, cause, nil)
	}
}
