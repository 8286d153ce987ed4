package suggest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Defaults of the contract's two planning timers.
const (
	// DefaultBudget is PLANNING_BUDGET_MS: "E3's suggestion timer and the
	// request share one ten-minute budget".
	DefaultBudget = 10 * time.Minute
	// DefaultShutdownGrace is PLANNING_SHUTDOWN_GRACE_MS: "At shutdown E3
	// aborts every request; one that has not settled within 20 seconds
	// (PLANNING_SHUTDOWN_GRACE_MS, as Ask) is ended by abandoning
	// planning's worker."
	DefaultShutdownGrace = 20 * time.Second
)

// IDSource makes request IDs (ids.Source is one): lowercase UUID v4, from
// a seeded source in the simulator so that a trace repeats.
type IDSource interface{ UUID() string }

// Config is what a Coordinator is built from.
type Config struct {
	Store *store.Store // the only durable writer; required
	// Capability is the shutdown capability: settlement writes go through
	// it, so a request still settles after the write gate closes.
	Capability store.Capability
	Loop       runner.Loop  // owns every field of the coordinator; required
	Clock      runner.Clock // the budget and the shutdown grace; required
	IDs        IDSource     // request IDs; required
	// Provider runs the planning agent; nil: Start answers NotAvailable.
	Provider Provider
	// Issue reads the task's issue before each start of live planning
	// (nil: none is read). It runs on the caller's goroutine; its failure
	// is the start's recorded refusal CodeGitHubFailed.
	Issue         func(ctx context.Context, planKey string) (string, error)
	Budget        time.Duration     // 0: DefaultBudget
	ShutdownGrace time.Duration     // 0: DefaultShutdownGrace
	Trace         func(line string) // nil: no trace; called on the loop
}

// Coordinator is the suggestion coordinator. Its methods may be called
// from any goroutine but the loop's own: each hands its work to the loop
// as one event and waits for it (Close does not wait; see Close).
type Coordinator struct {
	cfg Config

	// closing is "open → closing; closing rejects new starts
	// synchronously": set by Close before anything else, read by Start
	// before it reaches the loop and again inside its admission event.
	closing atomic.Bool

	// Owned by the loop.
	active  map[string]*invocation // plan key → its one invocation, until the provider settles
	byID    map[string]*invocation // request ID → the same invocations: the handle map
	seq     int                    // admission order, for deterministic iteration
	closed  bool                   // Close's abort event ran
	grace   runner.Timer           // the shutdown grace, while Close waits; nil otherwise
	done    chan struct{}          // closed once Close has nothing left to wait for
	drained bool                   // done is closed
}

// invocation is one admitted request, from its admission until its
// provider settles ("Coordinator until provider settles"), held by the one
// attempt holder (package holder) with the suggestion coordinator's
// policy. Owned by the loop.
type invocation struct {
	seq       int
	id        string
	planKey   string
	mode      string
	revision  int
	snapshot  string
	h         holder.Holder
	input     Input             // what the provider starts with
	startCtx  context.Context   // admission's, for the provider's start
	handle    Handle            // nil until the provider started, and after its holder ended
	timer     runner.Timer      // the budget; nil once stopped
	terminal  func() settlement // the terminal write as last decided
	onSettled func(Result)      // the caller's; nil: nobody listens
	// stopReason is the first stop's durable reason; the holder keeps the
	// first reason itself ("First timeout/cancellation/shutdown reason wins
	// over a later generic provider abort").
	stopReason string
}

// unresolved says its terminal write failed: an unresolved marker holds
// the plan's slot until restart.
func (inv *invocation) unresolved() bool { return inv.h.Phase == holder.Held }

// stopWord is the word a first reason goes by in traces and to the
// provider: timeout, cancelled or shutdown.
func stopWord(r words.Reason) string { return string(holder.StopReasonFor(r)) }

// New builds the coordinator. Construct one per runner and Store.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Loop == nil || cfg.Clock == nil || cfg.IDs == nil {
		return nil, errors.New("suggest: Config.Store, Loop, Clock and IDs are required")
	}
	if cfg.Budget == 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.Budget < 0 || cfg.ShutdownGrace < 0 {
		return nil, fmt.Errorf("suggest: negative budget %s or shutdown grace %s", cfg.Budget, cfg.ShutdownGrace)
	}
	return &Coordinator{
		cfg:    cfg,
		active: map[string]*invocation{},
		byID:   map[string]*invocation{},
		done:   make(chan struct{}),
	}, nil
}

// Every event enters the loop through these three, and nothing else in
// the package touches Config.Loop or Config.Clock's timers.

// post queues fn as an event; it never blocks, from the loop or elsewhere.
func (c *Coordinator) post(fn func()) { c.cfg.Loop.Post(fn) }

// call runs fn as an event and waits for it. Only callers outside the
// loop may use it.
func (c *Coordinator) call(ctx context.Context, fn func()) error { return c.cfg.Loop.Call(ctx, fn) }

// afterFunc runs fn as an event once d has passed on the clock.
func (c *Coordinator) afterFunc(d time.Duration, fn func()) runner.Timer {
	return c.cfg.Clock.AfterFunc(d, func() { c.post(fn) })
}

// write is a settlement write: it passes the closed write gate.
// Admission and user actions go through the gated Store instead.
func (c *Coordinator) write(fn func(*store.Tx) error) error { return c.cfg.Capability.Update(fn) }

func (c *Coordinator) trace(format string, args ...any) {
	if c.cfg.Trace != nil {
		c.cfg.Trace(fmt.Sprintf(format, args...))
	}
}

// live lists the invocations whose provider has not settled, in admission
// order: the ones Close waits for.
func (c *Coordinator) live() []*invocation {
	var out []*invocation
	for _, inv := range c.byID {
		if inv.handle != nil {
			out = append(out, inv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// release frees the plan's slot and forgets the handle: the provider has
// settled and the terminal write succeeded ("Handles are removed from the
// map only after their outcome settles").
func (c *Coordinator) release(inv *invocation) {
	c.forget(inv)
	if c.active[inv.planKey] == inv {
		delete(c.active, inv.planKey)
	}
	c.maybeDrained()
}

// forget stops the budget's timer and drops the invocation's handle: its
// holder has ended, freed (release) or held under its marker (hold), so no
// later event acts on it.
func (c *Coordinator) forget(inv *invocation) {
	if inv.timer != nil {
		inv.timer.Stop()
		inv.timer = nil
	}
	inv.handle = nil
	delete(c.byID, inv.id)
}
