// Package ask is the question coordinator (Ask): two question slots, each
// question a saved note and one read-only question attempt of D that
// answers it. It shares the runner's Store, its write gate, its loop and
// its shutdown order, and owns the rest: its table (store.Question), its
// owner token (Ask's objects carry it, so the runner's recovery never sees
// them and Ask's never touches the runner's) and its recovery scope.
//
// The contract's words it follows: "two question slots
// (runner/questions.ts)"; shutdown step 1, "The question coordinator also
// stops admission in this turn (questions.stopAdmission()): a question
// admitted before shutdown still saves its note, but starts no agent and
// gets a retryable "Server stopped" answer (markStopped)"; step 3, the
// shutdown capability goes to "questions' finishAnswer"; step 6, "await
// the question and suggestion coordinators' close()"; and "Ask's owner".
//
// Every decision runs as an event on the loop it is given, the runner's
// own in production and the simulator's in scenarios, so the Store keeps
// one writer and a scenario decides the order of everything.
package ask

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Slots is the number of questions answered at once ("Existing limits
// stay: two question slots").
const Slots = 2

// Config is the question coordinator's parts.
type Config struct {
	Store      *store.Store
	Capability store.Capability // settlement and close writes, past the closed write gate
	D          dadapter.D       // nil: no agent is configured, and every question says so
	Loop       runner.Loop
	Clock      runner.Clock
	IDs        ids.Source
	// Owner is Ask's owner token (store.Tx.AskOwnerToken), never the
	// runner's.
	Owner string
	// Timeout is each question's deadline, which D enforces (default 10
	// minutes).
	Timeout time.Duration
	Profile dadapter.AgentProfile
	// Repository names the user's repository of a task (by plan key), as
	// the runner's; nil or "" leaves it empty (the simulated D).
	Repository func(planKey string) string
	// Prompt composes what the agent is asked; nil sends the question's
	// text as it is.
	Prompt func(q store.Question) string
	// Trace receives one line per decision (scenarios and logs); optional.
	Trace func(line string)
}

// Coordinator is Ask. The fields below the line belong to the loop.
type Coordinator struct {
	cfg Config

	// stopped is step 1's flag: set at once from any goroutine
	// (StopAdmission), read by admission's event, so that no question
	// admitted after it starts an agent.
	stopped atomic.Bool

	// owned by the loop
	open       bool                 // Ask's recovery has run and admission is open
	closing    bool                 // Close has begun: every question in flight is aborted
	recovery   error                // why Ask stayed closed at Open, or nil
	unreleased bool                 // D could not remove something: closed until restart
	slots      int                  // held slots: in flight, under a marker, or storage not removed
	markers    map[string]string    // question ID → why its slot is held until restart (words.ResultNotSaved)
	inFlight   map[string]*question // by question ID, until its terminal write and removal
	closed     chan struct{}        // closed once closing and nothing is in flight
	opened     chan struct{}        // closed once Open's recovery has ended
}

// ErrShuttingDown answers a question asked once Close has begun.
var ErrShuttingDown = runner.ErrShuttingDown

// New checks the configuration.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Loop == nil || cfg.Clock == nil || cfg.IDs == nil {
		return nil, errors.New("ask: Store, Loop, Clock and IDs are required")
	}
	if !ids.ValidToken(cfg.Owner) {
		return nil, fmt.Errorf("ask: owner token %q is not 32 lowercase hex", cfg.Owner)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	return &Coordinator{cfg: cfg, inFlight: map[string]*question{}, markers: map[string]string{}, closed: make(chan struct{}), opened: make(chan struct{})}, nil
}

func (c *Coordinator) trace(format string, args ...any) {
	if c.cfg.Trace != nil {
		c.cfg.Trace("ask: " + fmt.Sprintf(format, args...))
	}
}

// post runs fn as an event after the current one.
func (c *Coordinator) post(fn func()) { c.cfg.Loop.Post(fn) }

// Open is Ask's startup, after the runner's recovery: every question an
// earlier process left pending or running is failed (asking again can
// help), then D's recovery for Ask's owner removes that process's
// question containers and storage, and only then does admission open.
// "Unlike the runner, Ask does not refuse because of no-runner-label
// objects": the report's unowned objects are not Ask's business. A
// recovery that fails leaves Ask closed, with the reason every question
// is then refused with; the review server runs on.
func (c *Coordinator) Open(ctx context.Context) error {
	return c.cfg.Loop.Call(ctx, func() { c.recover(c.opened) })
}

// Opened is closed once Open's recovery has ended; OpenErr then says
// whether Ask stayed closed.
func (c *Coordinator) Opened() <-chan struct{} { return c.opened }

// OpenErr is why Ask stayed closed at Open, or nil; call it after Opened.
func (c *Coordinator) OpenErr(ctx context.Context) (err error) {
	if callErr := c.cfg.Loop.Call(ctx, func() { err = c.recovery }); callErr != nil {
		return callErr
	}
	return err
}

func (c *Coordinator) recover(done chan struct{}) {
	var left []string
	err := c.cfg.Capability.Update(func(tx *store.Tx) (err error) {
		left, err = tx.FailLeftoverQuestions(words.QuestionLeftover)
		return err
	})
	if err != nil {
		c.recovered(fmt.Errorf("ask: fail the questions an earlier process left: %w", err), done)
		return
	}
	for _, id := range left {
		c.trace("question %s left by an earlier process: failed", id)
	}
	if c.cfg.D == nil {
		c.recovered(nil, done)
		return
	}
	c.cfg.D.RecoverLeftovers(context.Background(), c.cfg.Owner, func(rep dadapter.RecoveryReport, err error) {
		c.post(func() {
			if err != nil {
				c.recovered(fmt.Errorf("ask: recover leftovers: %w", err), done)
				return
			}
			c.removeRecovered(rep.Storage, done)
		})
	})
}

// removeRecovered removes, one after the other, each leftover storage
// whose question and allocation IDs match one question row of this
// database; any other is reported and left alone.
func (c *Coordinator) removeRecovered(left []dadapter.RecoveredStorage, done chan struct{}) {
	if len(left) == 0 {
		c.recovered(nil, done)
		return
	}
	h, rest := left[0], left[1:]
	o := h.Owner()
	var q store.Question
	err := c.cfg.Store.View(func(tx *store.Tx) (err error) {
		q, err = tx.Question(o.AttemptID)
		return err
	})
	if err != nil || q.AllocationID != o.AllocationID {
		c.trace("leftover storage %s of question %s matches no question of this database: left alone", o.AllocationID, o.AttemptID)
		c.removeRecovered(rest, done)
		return
	}
	c.cfg.D.RemoveTaskFilesystems(h, func(err error) {
		c.post(func() {
			if err != nil {
				c.recovered(fmt.Errorf("ask: remove the leftover storage of question %s: %w", o.AttemptID, err), done)
				return
			}
			c.trace("leftover storage of question %s removed", o.AttemptID)
			c.removeRecovered(rest, done)
		})
	})
}

func (c *Coordinator) recovered(err error, done chan struct{}) {
	c.recovery = err
	c.open = err == nil && !c.closing
	if err != nil {
		c.trace("recovery failed, questions stay closed: %v", err)
	} else {
		c.trace("recovery done; open")
	}
	close(done)
}
