package runner

import (
	"context"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The coordinator's part of the contract's "Shutdown" order, which package
// app runs: the server sets its stopping flag and the coordinator closes
// admission in the same turn (step 1, CloseAdmission); it drains requests and closes the Store's write gate
// (steps 2 and 3); StopJobs then gives every job the first reason shutdown
// unless it had one, and asks D to stop or aborts preparation (step 4);
// each job then ends through the ordinary holder order (step 5: export,
// terminal write, storage removal, slot freed). Drained reports when
// no job is left; there is no timer of F's own (decision 4): D's forced-kill
// escalation bounds settlement. Closing the Store and releasing the lock
// (steps 7 and 8) belong to the caller.

// write is the coordinator's own durable write. It passes the closed write
// gate: settlement and close code hold the shutdown capability, so a job can
// still end after step 3. Request-path writes (user actions, context
// changes, admission) go through the gated Store instead.
func (c *Coordinator) write(fn func(*store.Tx) error) error {
	return c.deps.Capability.Update(fn)
}

// CloseAdmission is shutdown step 1, one synchronous turn: turn (the
// server's stopping flag, the other lanes' admission stopped) runs first,
// then the coordinator's barrier, in the same event, so that no admission
// on the loop falls between them. From this event on, admission is refused
// with ErrShuttingDown, and the coordinator never opens again. Jobs run on
// until StopJobs (step 4), so that a request the server drains in step 2
// still meets its job as it was.
func (c *Coordinator) CloseAdmission(ctx context.Context, turn func()) error {
	return c.call(ctx, func() {
		if turn != nil {
			turn()
		}
		c.closeAdmission()
	})
}

func (c *Coordinator) closeAdmission() {
	if c.closing {
		return
	}
	c.open, c.closing = false, true
	c.trace("shutdown: admission closed")
}

// StopJobs is shutdown step 4: every pending and running job gets the first
// reason shutdown unless it has one (a job already stopping keeps its
// reason), and D's Cancel or its preparation's abort. It closes admission
// first if step 1 has not. It does not wait; see Drained.
func (c *Coordinator) StopJobs(ctx context.Context) error {
	return c.call(ctx, func() {
		c.closeAdmission()
		c.stopJobs()
	})
}

func (c *Coordinator) stopJobs() {
	for _, key := range c.sortedJobKeys() {
		j := c.jobs[key]
		if j.h.Phase >= holder.Settled {
			continue // already on its way out through the holder order
		}
		if !c.stop(j, words.ReasonShutdown, "", nil) {
			c.traceAttempt(j.attemptID, "shutdown: %s keeps first reason %s", j.attemptID, j.h.First)
		}
	}
}

// Drained is closed once shutdown has begun and no job and no plan run is
// left (steps 4, 5 and 5a). Markers may remain: each holds its slot until
// startup recovery.
func (c *Coordinator) Drained() <-chan struct{} { return c.drained }

func (c *Coordinator) sortedJobKeys() []string {
	keys := make([]string, 0, len(c.jobs))
	for k := range c.jobs {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// noteDrained closes Drained when shutdown has begun and no job is left.
func (c *Coordinator) noteDrained() {
	if c.closing && len(c.jobs) == 0 && len(c.runs) == 0 && !c.drainedClosed {
		c.drainedClosed = true
		c.trace("shutdown: every job ended (%d unresolved)", len(c.markers))
		close(c.drained)
	}
}
