package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// Parts are what a process runs on that a simulated world replaces: its
// clock, its loop, its ID source, its D, its code host and planning
// provider, its failpoints and where its decisions are traced. With them
// the simulator (package sim) boots the very process serve boots, through
// the same startup and shutdown steps in the same order; only these
// differ. Production leaves Options.Parts nil: the real clock, a goroutine
// loop, random IDs, the configured engine, GitHub from the github block,
// planning through D, and decisions in the log.
type Parts struct {
	Clock runner.Clock
	// Loop is every coordinator's loop. Stop is shutdown step 7's end of
	// it: nothing runs on it afterwards.
	Loop Loop
	IDs  ids.Source
	// RunnerTokens and AskTokens make the runner's and Ask's owner tokens
	// the first time a database is opened (nil: random): a seeded world
	// gets the same tokens on every run.
	RunnerTokens, AskTokens func() string
	D                       dadapter.D
	StopGroup               func(ctx context.Context, g dadapter.ProcessGroup) error
	Failpoints              *failpoints.Set
	// GitHub is the code host merges and planning read; PullRequest names
	// each task's pull request (nil: none has one).
	GitHub      codehost.Host
	PullRequest func(planKey string) (repo string, number int, ok bool)
	// Planner is the planning provider and Issue reads a task's issue
	// before each planning start; nil Planner: planning is off.
	Planner suggest.Provider
	Issue   func(ctx context.Context, planKey string) (string, error)
	// Kinds are the attempt kinds the runner admits (nil: every kind), as
	// the demo's are an option of the process rather than of the runner.
	Kinds []string
	// Trace receives every decision line of every lane, in place of the
	// log.
	Trace func(line string)
}

// Loop is the loop every coordinator of the process shares (runner.Loop),
// with the end shutdown step 7 puts to it.
type Loop interface {
	runner.Loop
	Stop()
}

// clockNow is the Store's clock: the parts' when there are parts (a
// simulated world's virtual time), else the wall clock.
func (a *App) clockNow() func() time.Time {
	if p := a.opt.Parts; p != nil && p.Clock != nil {
		return p.Clock.Now
	}
	return time.Now
}

// ids is the process's ID source.
func (a *App) ids() ids.Source {
	if p := a.opt.Parts; p != nil && p.IDs != nil {
		return p.IDs
	}
	return ids.Random{}
}

// failpoints is the process's failpoint set: nil in production.
func (a *App) failpoints() *failpoints.Set {
	if p := a.opt.Parts; p != nil {
		return p.Failpoints
	}
	return nil
}

// tokens is the source of a new owner token for one lane: the parts' for
// a seeded world, else nil (random).
func (a *App) tokens(askLane bool) func() string {
	p := a.opt.Parts
	switch {
	case p == nil:
		return nil
	case askLane:
		return p.AskTokens
	default:
		return p.RunnerTokens
	}
}

// decision is one decision of startup's own (a requeue's outcome): logged
// at level, and traced with its attributes in a simulated world, where
// the scenario reads the trace rather than the log.
func (a *App) decision(level slog.Level, msg string, args ...any) {
	if p := a.opt.Parts; p != nil && p.Trace != nil {
		for i := 0; i+1 < len(args); i += 2 {
			msg += fmt.Sprintf(" %v=%v", args[i], args[i+1])
		}
		p.Trace(msg)
		return
	}
	a.log.Log(context.Background(), level, msg, args...)
}

// traceLine is one decision of a lane: to the parts' trace in a simulated
// world, else to the log.
func (a *App) traceLine(line string) {
	if p := a.opt.Parts; p != nil && p.Trace != nil {
		p.Trace(line)
		return
	}
	a.log.Info(line)
}

// Lanes are a running process's Store and coordinators, with the owner
// tokens they run under: what a scenario drives as the review server
// would, and inspects.
type Lanes struct {
	Store    *store.Store
	Runner   *runner.Coordinator
	Ask      *ask.Coordinator
	Merge    *merge.Coordinator
	Suggest  *suggest.Coordinator
	Owner    string // the runner owner token
	AskOwner string
}

// Lanes returns what startup has built so far (nil where a step has not
// run yet, or failed).
func (a *App) Lanes() Lanes {
	return Lanes{Store: a.store, Runner: a.runner, Ask: a.ask, Merge: a.merge, Suggest: a.suggest, Owner: a.token, AskOwner: a.askOwner}
}

// Kill is the process killed at an event boundary: no step of shutdown
// runs; what the operating system gives back when a process dies (the
// Store's file handles, the single-runner lock) is given back. The
// simulated world's crash; production has no caller, as no process
// outlives its own death.
func (a *App) Kill() {
	if a.store != nil {
		a.store.Close()
		a.store = nil
	}
	if a.lock != nil {
		a.lock.Release()
		a.lock = nil
	}
}
