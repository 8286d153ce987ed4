package merge

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/store"
)

// Request is a merge click: the task and the versions the person saw.
type Request struct {
	PlanKey               string
	ActionID              string
	ExpectedStateVersion  int64
	ExpectedReviewVersion int
}

// ActionKind is a merge click's user_actions kind.
const ActionKind = "merge"

// Merge admits a merge click. A replay is answered first, from the saved
// response, which the outcome has updated since ("A replayed merge click
// therefore returns the same attempt's current outcome and never starts a
// second attempt"). Then the pull request is read on the caller's
// goroutine (before admission, so the loop never waits for GitHub): a read
// that does not answer is ErrUnavailable and records nothing; a pull
// request that cannot be merged is a recorded refusal. Then, in one loop
// event, the user action: the guards and beginMergeAttempt in its
// transaction, and after the commit the merge's final check and command.
func (c *Coordinator) Merge(ctx context.Context, r Request) (store.Response, error) {
	if c.closing.Load() {
		return store.Response{}, ErrShuttingDown
	}
	a := store.Action{PlanKey: r.PlanKey, ActionID: r.ActionID, Kind: ActionKind, Request: struct {
		ExpectedStateVersion  int64 `json:"expectedStateVersion"`
		ExpectedReviewVersion int   `json:"expectedReviewVersion"`
	}{r.ExpectedStateVersion, r.ExpectedReviewVersion}}
	if resp, ok, err := c.cfg.Store.SavedAction(a); err != nil {
		return store.Response{}, err
	} else if ok {
		if resp.Outcome == "refused" {
			return resp, &store.Refusal{Code: resp.Code, Message: resp.Message}
		}
		return resp, nil
	}
	repo, number, pr, refusal, err := c.readBeforeAdmission(ctx, r.PlanKey)
	if err != nil {
		return store.Response{}, err
	}
	var resp store.Response
	callErr := c.cfg.Loop.Call(ctx, func() {
		// Counted in before closing is read (see inFlight); counted out
		// again unless a merge was begun.
		c.inFlight.Add(1)
		begun := false
		defer func() {
			if !begun {
				c.inFlight.Add(-1)
				c.maybeIdle()
			}
		}()
		if c.closing.Load() {
			err = ErrShuttingDown
			return
		}
		resp, err = c.cfg.Store.UserAction(a, func(tx *store.Tx) (store.Response, error) {
			if refusal != nil {
				return store.Response{}, refusal
			}
			m, err := tx.AdmitMerge(store.MergeAdmission{PlanKey: r.PlanKey, ID: c.cfg.IDs.UUID(), ActionID: r.ActionID,
				ExpectedStateVersion: r.ExpectedStateVersion, ExpectedReviewVersion: r.ExpectedReviewVersion,
				Repo: repo, Number: number, HeadSHA: pr.HeadSHA})
			if err != nil {
				return store.Response{}, err
			}
			task, err := tx.Task(r.PlanKey)
			if err != nil {
				return store.Response{}, err
			}
			tx.AfterCommit(func() {
				begun = true
				c.start(&job{m: m, stateVersion: task.StateVersion})
			})
			return store.Response{Outcome: "in progress", AttemptID: m.ID}, nil
		})
	})
	if callErr != nil {
		return store.Response{}, callErr
	}
	return resp, err
}

// readBeforeAdmission reads the task's pull request. It returns a refusal
// to record when the pull request cannot be merged, and an error (not
// recorded) when GitHub did not answer.
func (c *Coordinator) readBeforeAdmission(ctx context.Context, planKey string) (repo string, number int, pr codehost.PullRequest, refusal, err error) {
	if c.cfg.Host == nil {
		return "", 0, pr, &store.Refusal{Code: store.CodeIllegal, Message: "no GitHub block is configured: codeboost cannot merge"}, nil
	}
	repo, number, ok := c.cfg.PullRequest(planKey)
	if !ok {
		return "", 0, pr, &store.Refusal{Code: store.CodeIllegal, Message: "this task names no pull request to merge (its github.pullRequest)"}, nil
	}
	pr, err = c.cfg.Host.PullRequest(ctx, repo, number)
	switch {
	case errors.Is(err, codehost.ErrNotFound) || errors.Is(err, codehost.ErrBadInput):
		return repo, number, pr, &store.Refusal{Code: store.CodeNotFound, Message: "the pull request cannot be read: " + err.Error()}, nil
	case err != nil:
		return repo, number, pr, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	case pr.Merged:
		return repo, number, pr, &store.Refusal{Code: store.CodeIllegal, Message: fmt.Sprintf("%s#%d is already merged", repo, number)}, nil
	case pr.State != "open":
		return repo, number, pr, &store.Refusal{Code: store.CodeIllegal, Message: fmt.Sprintf("%s#%d is closed", repo, number)}, nil
	case pr.Draft:
		return repo, number, pr, &store.Refusal{Code: store.CodeIllegal, Message: fmt.Sprintf("%s#%d is a draft", repo, number)}, nil
	case pr.Mergeable == nil:
		return repo, number, pr, nil, fmt.Errorf("%w: GitHub is still working out whether %s#%d can merge", ErrUnavailable, repo, number)
	case !*pr.Mergeable:
		return repo, number, pr, &store.Refusal{Code: store.CodeIllegal, Message: fmt.Sprintf("GitHub cannot merge %s#%d (a conflict or a required check)", repo, number)}, nil
	}
	return repo, number, pr, nil, nil
}
