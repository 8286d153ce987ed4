package suggest

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The planning endpoints that write are user actions: "every planning
// endpoint that writes: plan import, suggestion start, suggestion cancel,
// suggestion apply, draft start, draft cancel and draft apply (#124). Each
// planning request carries an actionId; its user_actions row is inserted
// in the same transaction as the Store call it wraps, and the saved
// response includes the request ID or plan revision it produced." So
// admission and the user's cancel have an action variant here, each one
// loop event whose Store write is store.UserAction's transaction; apply
// needs no coordinator (Apply runs as the runner's review action).

// CodeUnavailable is the refusal code of a planning start without a
// provider: a definite, recorded outcome ("Planning agent not available
// yet", HTTP 409).
const CodeUnavailable = "planning-unavailable"

// CodeGitHubFailed is the refusal code of a planning start whose issue
// read failed: "A start replays its recorded outcome before reading
// GitHub; a GitHub failure is a 502 and is recorded for replay like a
// refusal".
const CodeGitHubFailed = "github-failed"

// Action verbs.
const (
	VerbStart  = "start"
	VerbCancel = "cancel"
	VerbApply  = "apply"
)

// ActionKind is the user_actions kind of a planning endpoint, e.g.
// "plan/suggestion-start" or "plan/draft-apply": one per mode and verb,
// so that one action ID cannot replay across two of them.
func ActionKind(mode, verb string) string { return "plan/" + mode + "-" + verb }

// Unknown is the refusal a route of mode gives an ID that is not one of
// its requests (the other mode's, or another task's): "each kind's routes
// refuse the other's IDs" ("Unknown suggestion request.").
func Unknown(mode string) *store.Refusal {
	if mode == store.ModeDraft {
		return &store.Refusal{Code: store.CodeNotFound, Message: words.UnknownDraftRequest}
	}
	return &store.Refusal{Code: store.CodeNotFound, Message: words.UnknownSuggestionRequest}
}

// Request reads request id for a route of mode on planKey, refusing
// (Unknown) an ID of the other mode or of another plan.
func Request(tx *store.Tx, planKey, mode, id string) (store.PlanRequest, error) {
	r, err := tx.PlanRequest(id)
	if ref, ok := store.IsRefusal(err); ok && ref.Code == store.CodeNotFound {
		return store.PlanRequest{}, Unknown(mode)
	}
	if err != nil {
		return store.PlanRequest{}, err
	}
	if r.Mode != mode || (planKey != "" && r.PlanKey != planKey) {
		return store.PlanRequest{}, Unknown(mode)
	}
	return r, nil
}

// startBody is what a start's action hashes: the plan the caller saw.
type startBody struct {
	ExpectedRevision int    `json:"expectedRevision"`
	ExpectedSnapshot string `json:"expectedSnapshot"`
}

// idBody is what a cancel's action hashes: "For a cancel or apply, the
// recorded request includes the ID of the suggestion or draft it acts on,
// so one actionId cannot replay across two of them."
type idBody struct {
	ID string `json:"id"`
}

// ApplyBody is what an apply's action hashes: the request's ID and the
// caller's expected revision.
type ApplyBody struct {
	ID               string `json:"id"`
	ExpectedRevision int    `json:"expectedRevision"`
}

// StartAction is Start as the user action actionID (POST
// /api/plan/suggestions and /api/plan/drafts), in one loop event: a
// replay returns the saved response and starts nothing; closing answers
// ErrClosing, not recorded (HTTP 503); without a provider the refusal
// NotAvailable is recorded; admission's refusals (a plan whose invocation
// has not settled, a stale caller) are recorded; otherwise the request's
// pending row and the action's row commit in one transaction, the
// provider plans from the bound revision's items (read in that
// transaction, unless req.Items is set), and the saved response names the
// request (AttemptID).
func (c *Coordinator) StartAction(ctx context.Context, actionID string, req StartRequest) (resp store.Response, err error) {
	if c.closing.Load() {
		return store.Response{}, ErrClosing
	}
	a := store.Action{PlanKey: req.PlanKey, ActionID: actionID, Kind: ActionKind(req.Mode, VerbStart),
		Request: startBody{req.ExpectedRevision, req.ExpectedSnapshot}}
	req.Items = copyItems(req.Items)
	if c.cfg.Issue != nil && c.cfg.Provider != nil {
		// Live planning reads the issue before each start, on the
		// caller's goroutine (never the loop's), after a replay is
		// answered: a replay never reads GitHub.
		if saved, ok, err := c.cfg.Store.SavedAction(a); err != nil {
			return store.Response{}, err
		} else if ok {
			if saved.Outcome == "refused" {
				return saved, &store.Refusal{Code: saved.Code, Message: saved.Message}
			}
			return saved, nil
		}
		issue, ierr := c.cfg.Issue(ctx, req.PlanKey)
		if ierr != nil {
			refusal := &store.Refusal{Code: CodeGitHubFailed, Message: "GitHub could not be read for the task's issue: " + ierr.Error()}
			if callErr := c.call(ctx, func() {
				resp, err = c.cfg.Store.UserAction(a, func(*store.Tx) (store.Response, error) { return store.Response{}, refusal })
			}); callErr != nil {
				return store.Response{}, callErr
			}
			return resp, err
		}
		req.Issue = issue
	}
	if callErr := c.call(ctx, func() { resp, err = c.admitAction(ctx, a, req) }); callErr != nil {
		return store.Response{}, callErr
	}
	return resp, err
}

func (c *Coordinator) admitAction(ctx context.Context, a store.Action, req StartRequest) (store.Response, error) {
	if c.closing.Load() {
		return store.Response{}, ErrClosing
	}
	var row store.PlanRequest
	resp, err := c.cfg.Store.UserAction(a, func(tx *store.Tx) (store.Response, error) {
		if c.cfg.Provider == nil {
			return store.Response{}, &store.Refusal{Code: CodeUnavailable, Message: NotAvailable}
		}
		if err := c.admissible(req.PlanKey); err != nil {
			return store.Response{}, err
		}
		var err error
		row, err = tx.BeginPlanRequest(req.PlanKey, req.Mode, c.cfg.IDs.UUID(), req.ExpectedRevision, req.ExpectedSnapshot)
		if err != nil {
			return store.Response{}, err
		}
		if req.Items == nil {
			if req.Items, err = tx.PlanItems(row.PlanKey, row.Revision); err != nil {
				return store.Response{}, err
			}
		}
		return store.Response{AttemptID: row.ID,
			Message: fmt.Sprintf("planning request %s: %s of revision %d", row.ID, row.Mode, row.Revision)}, nil
	})
	if err != nil || resp.Replayed {
		return resp, err
	}
	c.launch(ctx, row, req)
	return resp, nil
}

// CancelAction is Cancel as the user action actionID (POST
// /api/plan/suggestions/:id/cancel and the draft route), in one loop
// event: the request must be of mode and of planKey's plan (else
// Unknown, recorded); a replay returns the saved response and stops
// nothing. The cancel's write and the action's row commit together; the
// held handle's cancel is called after the commit.
func (c *Coordinator) CancelAction(ctx context.Context, planKey, actionID, mode, requestID string) (resp store.Response, err error) {
	a := store.Action{PlanKey: planKey, ActionID: actionID, Kind: ActionKind(mode, VerbCancel), Request: idBody{requestID}}
	if callErr := c.call(ctx, func() { resp, err = c.cancelAction(a, mode, requestID) }); callErr != nil {
		return store.Response{}, callErr
	}
	return resp, err
}

func (c *Coordinator) cancelAction(a store.Action, mode, requestID string) (store.Response, error) {
	var inv *invocation
	var row store.PlanRequest
	resp, err := c.cfg.Store.UserAction(a, func(tx *store.Tx) (store.Response, error) {
		if _, err := Request(tx, a.PlanKey, mode, requestID); err != nil {
			return store.Response{}, err
		}
		var err error
		if row, inv, err = c.cancelIn(tx, requestID, words.CancelledByUser); err != nil {
			return store.Response{}, err
		}
		return store.Response{AttemptID: requestID, Message: fmt.Sprintf("planning request %s is %s", requestID, row.State)}, nil
	})
	if err != nil || resp.Replayed {
		return resp, err
	}
	c.cancelled(requestID, inv, row, words.CancelledByUser)
	return resp, nil
}

// Apply is the Store half of POST /api/plan/suggestions/:id/apply and
// /api/plan/drafts/:id/apply (Store.applySuggestion, Store.applyDraft),
// run inside the apply's user action: the request must be of mode and of
// planKey's plan (else Unknown), ready and bound to the current revision
// and snapshot, with expectedRevision the plan's; its reply becomes the
// next revision. The saved response names the request and the revision
// it produced ("plan revision N").
func Apply(tx *store.Tx, planKey, mode, requestID string, expectedRevision int) (store.Response, error) {
	if _, err := Request(tx, planKey, mode, requestID); err != nil {
		return store.Response{}, err
	}
	rev, err := tx.ConsumePlanRequest(requestID, expectedRevision)
	if err != nil {
		return store.Response{}, err
	}
	return store.Response{AttemptID: requestID, Message: fmt.Sprintf("plan revision %d", rev)}, nil
}

// ApplyAction names Apply's user action.
func ApplyAction(planKey, actionID, mode, requestID string, expectedRevision int) store.Action {
	return store.Action{PlanKey: planKey, ActionID: actionID, Kind: ActionKind(mode, VerbApply),
		Request: ApplyBody{requestID, expectedRevision}}
}
