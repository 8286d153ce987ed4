package suggest

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
)

// ErrClosing is Start's answer once Close has begun: "closing rejects new
// starts synchronously". It is the Store's ErrShuttingDown
// (errors.Is), so the server answers it as it answers any write during
// shutdown (HTTP 503, not recorded, the UI may resend).
var ErrClosing = fmt.Errorf("%w: planning is closing", store.ErrShuttingDown)

// ErrNotAvailable is Start's answer when no provider is configured.
var ErrNotAvailable = errors.New(NotAvailable)

// StartRequest is a caller's planning request.
type StartRequest struct {
	PlanKey string
	Mode    string // store.ModeSuggestion or store.ModeDraft
	// ExpectedRevision and ExpectedSnapshot are the plan the caller saw:
	// "The caller supplies the snapshot ID that owns its repository data;
	// admission compares that complete identity before the Store
	// atomically allocates the request."
	ExpectedRevision int
	ExpectedSnapshot string
	Items            []store.PlanItem // what the provider plans from; copied at once
	// Issue is the task's issue as GitHub gave it before the start (live
	// planning reads it each time; empty without one).
	Issue string
	// OnSettled, when set, is called once on the coordinator's loop with
	// the request's outcome, after its terminal write (or after it could
	// not be saved). It must not block.
	OnSettled func(Result)
}

// Start is admission and launch (beginSuggestions), in one loop event:
// closing refuses (ErrClosing); a plan whose invocation has not settled
// refuses ("There is one active invocation per plan identity. A new start
// (including a retry) cannot replace it, regardless of elapsed time,
// cancellation, or persisted state."); then the Store allocates the
// pending request, refusing a stale caller; then the provider starts with
// a copy of the input, and the budget's timer is armed. It returns the
// request's ID once the provider started.
//
// A provider that fails to start ends the request failed with its
// reason, and Start still returns the ID with no error: the request
// exists, and its outcome (OnSettled, the durable row) says why it ended.
// Refusals are *store.Refusal; a closed write gate is ErrShuttingDown.
func (c *Coordinator) Start(ctx context.Context, req StartRequest) (requestID string, err error) {
	if c.closing.Load() {
		return "", ErrClosing
	}
	if c.cfg.Provider == nil {
		return "", ErrNotAvailable
	}
	req.Items = copyItems(req.Items) // "Input containers are copied": before anything can read them
	if callErr := c.call(ctx, func() { requestID, err = c.admit(ctx, req) }); callErr != nil {
		return "", callErr
	}
	return requestID, err
}

// admit is Start's event.
func (c *Coordinator) admit(ctx context.Context, req StartRequest) (string, error) {
	if err := c.admissible(req.PlanKey); err != nil {
		return "", err
	}
	id := c.cfg.IDs.UUID()
	var row store.PlanRequest
	if err := c.cfg.Store.Update(func(tx *store.Tx) (err error) {
		row, err = tx.BeginPlanRequest(req.PlanKey, req.Mode, id, req.ExpectedRevision, req.ExpectedSnapshot)
		return err
	}); err != nil {
		return "", err
	}
	c.launch(ctx, row, req)
	return id, nil
}

// admissible is admission's in-memory half, run in the admitting event:
// closing refuses, and so does a plan whose invocation has not settled.
func (c *Coordinator) admissible(planKey string) error {
	if c.closing.Load() {
		return ErrClosing
	}
	if held := c.active[planKey]; held != nil {
		if held.unresolved() {
			return &store.Refusal{Code: store.CodeActiveAttempt,
				Message: fmt.Sprintf("planning request %s: %s", held.id, resultNotSaved)}
		}
		return &store.Refusal{Code: store.CodeActiveAttempt,
			Message: fmt.Sprintf("planning request %s for this plan has not finished; wait for it to stop", held.id)}
	}
	return nil
}

// launch is admission's second half, in the same event, once the Store
// has allocated row: the invocation takes the plan's slot and its holder
// begins, which starts the provider with a copy of the input
// (startProvider).
func (c *Coordinator) launch(ctx context.Context, row store.PlanRequest, req StartRequest) {
	id := row.ID
	c.seq++
	inv := &invocation{seq: c.seq, id: id, planKey: row.PlanKey, mode: row.Mode, revision: row.Revision,
		snapshot: row.SnapshotID, onSettled: req.OnSettled, startCtx: ctx}
	inv.input = Input{RequestID: id, PlanKey: row.PlanKey, Mode: row.Mode, Revision: row.Revision, NextRevision: row.Revision + 1,
		SnapshotID: row.SnapshotID, Items: req.Items, Issue: req.Issue, Deadline: c.cfg.Clock.Now().Add(c.cfg.Budget)}
	c.active[inv.planKey], c.byID[id] = inv, inv
	c.trace("start %s: %s of %s at revision %d, snapshot %s", id, inv.mode, inv.planKey, inv.revision, inv.snapshot)
	h, effs := holder.New(policy)
	inv.h = h
	c.do(inv, effs)
}

// startProvider is the holder's start: the provider gets the input, then
// the budget's timer is armed.
func (c *Coordinator) startProvider(inv *invocation) {
	ctx, in := inv.startCtx, inv.input
	inv.startCtx, inv.input = nil, Input{}
	h, err := c.cfg.Provider.Start(ctx, in)
	if err == nil && h == nil {
		err = errNoHandle
	}
	if err != nil {
		// "pending may cancel before launch": nothing runs, so the
		// request ends here, through the same settlement as any other.
		if err != errNoHandle {
			c.trace("start %s: the provider did not start: %s", inv.id, short(err.Error()))
		}
		reason := err.Error()
		inv.terminal = func() settlement { return c.settleStopped(inv, store.RequestFailed, notStarted+reason, reason) }
		c.step(inv, holder.Started{Err: err})
		return
	}
	inv.handle = h
	c.step(inv, holder.Started{})
	inv.timer = c.afterFunc(c.cfg.Budget, func() { c.timeout(inv) })
	h.OnSettled(func(o Outcome) { c.post(func() { c.settled(inv, o) }) })
}

var errNoHandle = errors.New("no handle")
