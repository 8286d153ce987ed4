// Package merge is the merge coordinator: a task's merge attempts
// (submitting, queued, merged, removed, failed) with their own guards,
// outside the runner's retry and state machine ("Merge attempts keep their
// own states and guards in MergeCoordinator, including requiresFreshReview
// after removed. F's retry rule never applies to them").
//
// It shares the runner's Store, write gate, loop and shutdown order, and
// talks to GitHub only through codehost.Host. Its rules, from the
// contract:
//
//   - beginMergeAttempt runs in the merge click's user-action transaction,
//     whose saved response ("in progress") the recorded outcome updates;
//     a replay returns the same attempt's outcome and begins nothing.
//   - "Irreversible actions. … re-read the task's state version, the
//     plan's review_version … and the coordinator's closing flag after the
//     final await. Stop if any of them changed."
//   - Only a confirmed merged outcome closes the task (feedback-event rule
//     2); submitted, queued or ambiguous outcomes keep the attempt in
//     flight, and GitHub is read again later.
//   - displayStatus and queue polling rethrow ShuttingDownError: a
//     reconciliation write after shutdown step 3 answers 503, never a 200
//     that swallowed it.
//   - Shutdown step 1 sets closing (no merge command is sent after it);
//     step 3 awaits the merges in flight ("await request-owned work (the
//     merge coordinator)").
package merge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
)

// Config is the merge coordinator's parts.
type Config struct {
	Store      *store.Store
	Capability store.Capability // the settlement of a merge's own calls, past the closed write gate
	// Host is GitHub; nil: no GitHub block is configured, and every merge
	// is refused saying so.
	Host codehost.Host
	Loop runner.Loop
	IDs  ids.Source
	// PullRequest names a task's pull request (by plan key), the one its
	// merge merges; ok false: the task names none.
	PullRequest func(planKey string) (repo string, number int, ok bool)
	// Timeout bounds each GitHub call of a merge in flight (default 30 s).
	Timeout    time.Duration
	Failpoints *failpoints.Set // nil in production
	Trace      func(line string)
}

// Coordinator is the merge coordinator. Fields below the line belong to
// the loop.
type Coordinator struct {
	cfg Config

	// closing is step 1's flag, set from any goroutine: no merge is
	// admitted and no merge command is sent after it.
	closing atomic.Bool
	// inFlight counts the merges being admitted or in flight. Shutdown's
	// step 3 reads it from its own goroutine, never the loop's: admission
	// counts itself in before it reads closing, and AwaitIdle sets closing
	// before it reads the count (both sequentially consistent), so either
	// the admission sees closing or step 3 sees the merge.
	inFlight atomic.Int64
	idle     chan struct{} // closed once closing and no merge is in flight
	idleOnce sync.Once

	// owned by the loop
	jobs map[string]*job // merges whose GitHub calls are in flight, by attempt ID
}

// job is one admitted merge while its GitHub calls run.
type job struct {
	m            store.MergeAttempt
	stateVersion int64 // the task's state version right after admission
}

// ErrShuttingDown answers a merge once shutdown began.
var ErrShuttingDown = runner.ErrShuttingDown

// ErrUnavailable wraps a GitHub read before admission that did not answer
// (or a pull request whose mergeability GitHub is still computing): the
// click applied nothing for a passing reason and is not recorded, so the
// screen may resend it (HTTP 503).
var ErrUnavailable = errors.New("GitHub did not answer the merge's checks; try again")

// New checks the configuration.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Loop == nil || cfg.IDs == nil {
		return nil, errors.New("merge: Store, Loop and IDs are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.PullRequest == nil {
		cfg.PullRequest = func(string) (string, int, bool) { return "", 0, false }
	}
	return &Coordinator{cfg: cfg, jobs: map[string]*job{}, idle: make(chan struct{})}, nil
}

func (c *Coordinator) trace(format string, args ...any) {
	if c.cfg.Trace != nil {
		c.cfg.Trace("merge: " + fmt.Sprintf(format, args...))
	}
}

// hostCtx bounds one GitHub call of a merge in flight. The bound is the
// real clock's: it only keeps a hung GitHub from holding shutdown's step 3
// forever, and the simulated host answers at once.
func (c *Coordinator) hostCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.cfg.Timeout)
}

// Stop is shutdown step 1's half for merges, in the same turn as the
// server's stopping flag: no merge is admitted and no merge command is
// sent from now on. It never blocks.
func (c *Coordinator) Stop() {
	if c.closing.CompareAndSwap(false, true) {
		c.trace("closing")
	}
}

// Idle is closed once Stop has run and no merge is in flight.
func (c *Coordinator) Idle() <-chan struct{} { return c.idle }

// AwaitIdle is step 3's "await request-owned work (the merge
// coordinator)": it stops the coordinator (if step 1 has not) and returns
// Idle, closed at once when no merge is in flight, else by the last one's
// settlement. It runs on the shutdown's goroutine and never waits for the
// loop.
func (c *Coordinator) AwaitIdle(ctx context.Context) (<-chan struct{}, error) {
	c.Stop()
	if c.inFlight.Load() == 0 {
		c.idleOnce.Do(func() { close(c.idle) })
	}
	return c.idle, nil
}

// maybeIdle is the settlement's half, on the loop: the last merge in
// flight after Stop closes Idle.
func (c *Coordinator) maybeIdle() {
	if !c.closing.Load() || c.inFlight.Load() > 0 {
		return
	}
	c.idleOnce.Do(func() {
		c.trace("idle: the last merge in flight ended")
		close(c.idle)
	})
}
