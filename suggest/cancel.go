package suggest

import (
	"context"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Cancel is POST /api/plan/suggestions/:id/cancel (and the draft route),
// one event:
//
//   - pending, with a handle in this process: the request is cancelled on
//     disk at once and the provider is asked to stop. This is the
//     contract's exception for read-only lifecycles: "E3 suggestions
//     (requests table) write cancelled to disk when the stop is requested,
//     before the provider settles", which is safe because "E3's
//     coordinator still blocks a new start until the provider settles":
//     the plan's slot stays held until then.
//   - pending with no handle, left by a crashed process: the Store's
//     cancel ("If the request is pending but F holds no handle, F calls
//     Store.cancelSuggestions"). Nothing can complete it: its provider
//     ran in that process's worker.
//   - ready: the Store's cancel dismisses it ("because no invocation is
//     running"); any other state is returned unchanged.
//
// reason is the durable reason ("" is words.CancelledByUser). The write
// is the user's, so it goes through the gated Store: after shutdown's
// step 3 it answers ErrShuttingDown and changes nothing.
func (c *Coordinator) Cancel(ctx context.Context, requestID, reason string) (store.PlanRequest, error) {
	if reason == "" {
		reason = words.CancelledByUser
	}
	var row store.PlanRequest
	var err error
	if callErr := c.call(ctx, func() { row, err = c.cancel(requestID, reason) }); callErr != nil {
		return store.PlanRequest{}, callErr
	}
	return row, err
}

func (c *Coordinator) cancel(requestID, reason string) (row store.PlanRequest, err error) {
	var inv *invocation
	if err = c.cfg.Store.Update(func(tx *store.Tx) (err error) {
		row, inv, err = c.cancelIn(tx, requestID, reason)
		return err
	}); err != nil {
		return row, err
	}
	c.cancelled(requestID, inv, row, reason)
	return row, nil
}

// cancelIn is the cancel's write, in tx: the request this process holds a
// handle for is settled cancelled at its captured binding; any other goes
// through the Store's cancel. It returns the invocation whose provider
// must be asked to stop once tx commits, or nil.
func (c *Coordinator) cancelIn(tx *store.Tx, requestID, reason string) (store.PlanRequest, *invocation, error) {
	inv := c.byID[requestID]
	if inv == nil || inv.handle == nil {
		row, err := tx.CancelPlanRequest(requestID)
		return row, nil, err
	}
	row, err := tx.SettlePlanRequest(inv.id, inv.revision, inv.snapshot, store.RequestCancelled, reason)
	return row, inv, err
}

// cancelled is the cancel's effect after its write committed: the held
// handle's cancel is called ("pending: handle.cancel(reason) on the
// SuggestionHandle"); the slot stays held until the provider settles.
func (c *Coordinator) cancelled(requestID string, inv *invocation, row store.PlanRequest, reason string) {
	if inv == nil {
		c.trace("cancel %s: no handle in this process; %s", requestID, row.State)
		return
	}
	c.stop(inv, words.ReasonCancelled, reason)
}

// timeout is the budget's event: "Timeouts request abort but do not
// settle early." The request stays pending and its slot held until the
// provider settles.
func (c *Coordinator) timeout(inv *invocation) {
	inv.timer = nil
	if c.byID[inv.id] != inv || inv.handle == nil {
		return
	}
	c.stop(inv, words.ReasonTimeLimit, timedOut(c.cfg.Budget))
}

// stop records the first stop reason, unless one is recorded, and asks the
// provider to stop (the holder's Cancel). It does not wait.
func (c *Coordinator) stop(inv *invocation, r words.Reason, reason string) {
	if first := inv.h.First; first != "" {
		c.trace("%s %s: keeps first reason %s", stopWord(r), inv.id, stopWord(first))
		return
	}
	inv.stopReason = reason
	c.trace("%s %s: abort requested", stopWord(r), inv.id)
	c.step(inv, holder.Stop{Reason: r})
}
