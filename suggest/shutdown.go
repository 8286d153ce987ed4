package suggest

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Close is shutdown's step for planning: "close() flips admission to
// closing before aborting invocations and waits for all providers to
// settle. It does not close storage." Admission refuses from the moment
// Close is called (synchronously, before its event runs); the event then
// asks every invocation to stop with the first reason shutdown unless it
// has one ("At shutdown E3 aborts every request").
//
// Close does not block: it returns a channel that closes once every
// provider has settled and its request was settled, or once the shutdown
// grace has passed, whichever is first, so that the app's shutdown step
// awaits it (with its own context) while the loop keeps delivering
// settlements. A provider that has not settled within the grace is
// abandoned: "one that has not settled within 20 seconds … is ended by
// abandoning planning's worker". Its request is failed with ServerStopped
// through the capability, and its later outcome, if any, is ignored. The
// loop must keep running until the channel closes. Calling Close again
// returns the same channel.
func (c *Coordinator) Close() <-chan struct{} {
	c.closing.Store(true)
	c.post(c.abortAll)
	return c.done
}

// abortAll is Close's event.
func (c *Coordinator) abortAll() {
	if c.closed {
		return
	}
	c.closed = true
	live := c.live()
	c.trace("shutdown: admission closed; aborting %d", len(live))
	for _, inv := range live {
		c.stop(inv, words.ReasonShutdown, ServerStopped)
	}
	if len(live) > 0 {
		c.grace = c.afterFunc(c.cfg.ShutdownGrace, c.abandon)
	}
	c.maybeDrained()
}

// abandon is the grace's event: every provider still running is
// abandoned, and its request settled as the shutdown's.
func (c *Coordinator) abandon() {
	c.grace = nil
	for _, inv := range c.live() {
		c.trace("shutdown: %s did not settle within %s; abandoned", inv.id, c.cfg.ShutdownGrace)
		diag := fmt.Sprintf("the planning agent did not stop within %s of shutdown; it was abandoned", c.cfg.ShutdownGrace)
		reason := inv.stopReason
		state := stopState(inv.h.First)
		if inv.h.First == "" { // cannot happen after abortAll; kept total
			reason, state = ServerStopped, stopState(words.ReasonShutdown)
		}
		inv.terminal = func() settlement { return c.settleStopped(inv, state, reason, diag) }
		c.step(inv, holder.Abandon{})
	}
	c.maybeDrained()
}

// maybeDrained closes Close's channel once Close ran and no provider is
// left to wait for.
func (c *Coordinator) maybeDrained() {
	if !c.closed || c.drained || len(c.live()) > 0 {
		return
	}
	if c.grace != nil {
		c.grace.Stop()
		c.grace = nil
	}
	c.drained = true
	c.trace("shutdown: every provider settled")
	close(c.done)
}

// FailLeftovers is startup's step for planning: "every request an earlier
// process left pending is failed ('The server stopped before this request
// finished. Ask again.'): its provider ran in that process's planning
// worker, so nothing can complete it." It runs before the first Start
// and refuses once this coordinator has admitted a request, whose row it
// would fail. It returns how many it failed. The write is startup
// recovery's, so it goes through the capability.
func (c *Coordinator) FailLeftovers(ctx context.Context) (int, error) {
	var n int
	var err error
	if callErr := c.call(ctx, func() {
		if len(c.active) > 0 || c.seq > 0 {
			err = fmt.Errorf("suggest: FailLeftovers runs at startup, before any request; this coordinator has admitted %d", c.seq)
			return
		}
		err = c.write(func(tx *store.Tx) (err error) { n, err = tx.FailLeftoverPlanRequests(ServerStopped); return err })
		if err == nil {
			c.trace("startup: failed %d planning requests an earlier process left pending", n)
		}
	}); callErr != nil {
		return 0, callErr
	}
	return n, err
}
