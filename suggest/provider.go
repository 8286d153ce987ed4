package suggest

import (
	"context"
	"time"

	"github.com/codeboost/codeboost/store"
)

// Provider runs the planning agent: in production, D's planning phase in
// planning's own worker (#117). Its calls report back through callbacks,
// as D's do (dadapter.Handle), so the simulator decides when a result
// arrives.
type Provider interface {
	// Start launches one invocation for in. It is called from the
	// coordinator's loop and must not wait for the agent: ctx bounds the
	// start alone, never the invocation. An error means nothing was
	// started and no handle will ever settle.
	Start(ctx context.Context, in Input) (Handle, error)
}

// Handle is a started invocation.
type Handle interface {
	// OnSettled registers fn, called once with the outcome after
	// everything the invocation started has stopped ("promise settles
	// after final termination"). If the handle has already settled, fn is
	// called at once. fn never blocks: it posts to the coordinator's loop.
	OnSettled(fn func(Outcome))
	// Cancel asks the invocation to stop with reason ("timeout",
	// "shutdown" or "cancelled"). It does not wait, and a second Cancel
	// does not replace the first reason.
	Cancel(reason string)
}

// Outcome is how an invocation settled: its reply, or the error that
// ended it.
type Outcome struct {
	Reply []byte // the agent's reply: cards, or a draft's whole plan
	Err   error  // non-nil: the invocation failed or was aborted
}

// Input is what the provider is asked, all of it captured before the
// invocation and copied: "Input containers are copied", so nothing the
// caller does to its own data after Start reaches the provider.
type Input struct {
	RequestID string // the Store's request; the provider never names another
	PlanKey   string
	Mode      string // store.ModeSuggestion or store.ModeDraft
	Revision  int    // the plan revision the request is bound to
	// NextRevision is Revision+1, the revision the reply would become
	// once applied: "The request lane D sees carries revision n+1, the
	// revision the draft would become; the Store binds it to n".
	NextRevision int
	SnapshotID   string
	Items        []store.PlanItem // the caller's plan items, deep-copied
	Issue        string           // the task's issue text, read from GitHub before the start
	// Deadline is when the coordinator's budget runs out: "E3's
	// suggestion timer and the request share one ten-minute budget".
	Deadline time.Time
}

// copyItems deep-copies the caller's items (the specs are byte slices).
func copyItems(items []store.PlanItem) []store.PlanItem {
	if items == nil {
		return nil
	}
	out := make([]store.PlanItem, len(items))
	for i, it := range items {
		if it.Spec != nil {
			it.Spec = append([]byte(nil), it.Spec...)
		}
		out[i] = it
	}
	return out
}
