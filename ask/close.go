package ask

import (
	"context"
	"slices"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/words"
)

// Close is shutdown step 6's close() for questions: admission stops (if
// step 1 has not stopped it), every question in flight is aborted (its
// storage allocation, or D's Cancel("shutdown")), and the returned
// channel closes once each has settled, written its "Server stopped"
// answer through the shutdown capability and had its storage removed.
// There is no timer of Ask's own: D's settlement is bounded (decision 4).
func (c *Coordinator) Close(ctx context.Context) (<-chan struct{}, error) {
	c.StopAdmission()
	if err := c.cfg.Loop.Call(ctx, c.close); err != nil {
		return nil, err
	}
	return c.closed, nil
}

func (c *Coordinator) close() {
	if c.closing {
		return
	}
	c.closing, c.open = true, false
	c.trace("close: %d questions in flight", len(c.inFlight))
	for _, id := range sortedKeys(c.inFlight) {
		c.step(c.inFlight[id], holder.Stop{Reason: words.ReasonShutdown})
	}
	c.maybeClosed()
}

// maybeClosed closes the close channel once closing and nothing is in
// flight.
func (c *Coordinator) maybeClosed() {
	if !c.closing || len(c.inFlight) > 0 {
		return
	}
	select {
	case <-c.closed:
	default:
		c.trace("closed")
		close(c.closed)
	}
}

func sortedKeys(m map[string]*question) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
