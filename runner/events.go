package runner

import (
	"context"
	"time"
)

// Every event of the coordinator enters the loop through one of these, and
// each publishes the status snapshot when the event ends, so that no event
// can forget to (Status reads only the snapshot). Nothing else in runner
// touches deps.Loop or schedules a timer (TestEventsEnterThroughTheWrapper).

// event wraps fn as one event: fn, then the snapshot.
func (c *Coordinator) event(fn func()) func() {
	return func() {
		fn()
		c.publish()
	}
}

// post queues fn as an event. It never blocks, from the loop or elsewhere.
func (c *Coordinator) post(fn func()) { c.deps.Loop.Post(c.event(fn)) }

// call runs fn as an event and waits for it: ErrStopped once the loop has
// stopped, ctx's error if ctx ended before fn started. Only callers outside
// the loop may use it (user actions, startup, shutdown).
func (c *Coordinator) call(ctx context.Context, fn func()) error {
	return c.deps.Loop.Call(ctx, c.event(fn))
}

// goWork runs work off the loop (I/O that takes time), then then as an event.
func (c *Coordinator) goWork(work, then func()) { c.deps.Loop.Go(work, c.event(then)) }

// afterFunc runs fn as an event once d has passed on the coordinator's clock.
func (c *Coordinator) afterFunc(d time.Duration, fn func()) Timer {
	return c.deps.Clock.AfterFunc(d, func() { c.post(fn) })
}
