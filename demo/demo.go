// Package demo is `codeboost serve --demo`'s agent: the simulated D
// (dadapter/simd) played by a built-in agent instead of a script, on the
// real clock, so that a new user on a machine with no Docker watches the
// real server, Store and coordinator run attempts through their states.
//
// The agent really takes time: preparation takes half a second, and each
// run takes 6 to 12 seconds, printing what it reads, searches, edits and
// tests to the invocation's live output, and growing a diff over the demo
// repository (Repository, Plan) that the partial-output export returns.
// About one run in four fails its tests (exit 1, the failing test in the
// output, which becomes the diagnostic); the others exit 0 with a result
// that carries a summary and usage (dadapter.Result). Which runs fail, and
// everything they print, follows from the seed and the run's ordinal. A
// Cancel stops a run like a SIGTERM'd container, within half a second,
// with D's first stop reason; the invocation's deadline does the same with
// timeout.
//
// simd is not safe for concurrent use, and neither is this agent: every
// call into it runs on the coordinator's loop. The runner calls D there,
// and each of the agent's timers posts its step to that loop (Options.Loop)
// instead of acting on the clock's goroutine.
//
// It may import dadapter, dadapter/simd, runner (for its Loop and Clock),
// words and the standard library; only the application and the binary may
// import it.
package demo

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/words"
)

// How long the parts of an attempt other than the agent's run take.
const (
	preparationTime = 500 * time.Millisecond // each of storage and clone
	stopGrace       = 500 * time.Millisecond // from a stop to the agent's exit
)

// Options configure an Agent.
type Options struct {
	Loop  runner.Loop  // required: the coordinator's loop; every step of the agent runs on it
	Clock runner.Clock // required: the steps' timers (the real clock in `serve --demo`)
	Seed  uint64       // with each run's ordinal, decides what the run does and how it ends
	// Trace receives the simulated D's lines ("d: start …"). Optional.
	Trace func(line string)
}

// Agent is the demo agent and the simulated D it plays in. Every field is
// owned by the coordinator's loop.
type Agent struct {
	opt   Options
	sim   *simd.D
	count int             // Starts so far: the next run's ordinal is count+1
	runs  map[string]*run // by attempt ID, until its task storage is removed
}

// New returns a demo agent. It panics without a loop or a clock: the demo
// cannot run without them.
func New(opt Options) *Agent {
	if opt.Loop == nil || opt.Clock == nil {
		panic("demo: Options.Loop and Options.Clock are required")
	}
	trace := opt.Trace
	if trace == nil {
		trace = func(string) {}
	}
	sim := simd.NewD(func(id string) string { return id }, trace)
	sim.Now = opt.Clock.Now
	// Preparation is held and finished by the agent's own timer, so that it
	// takes time; every other operation answers at once.
	for _, op := range []string{simd.OpStorage, simd.OpClone} {
		if err := sim.SetPolicy(op, simd.Policy{Mode: "hold"}); err != nil {
			panic(err) // a fixed, valid policy
		}
	}
	return &Agent{opt: opt, sim: sim, runs: map[string]*run{}}
}

// D is the D contract the coordinator runs on in the demo.
func (a *Agent) D() dadapter.D { return agentD{a} }

// after runs fn on the loop once d has passed on the clock.
func (a *Agent) after(d time.Duration, fn func()) runner.Timer {
	return a.opt.Clock.AfterFunc(d, func() { a.opt.Loop.Post(fn) })
}

// finishLater ends a held preparation op after preparationTime. An op
// aborted meanwhile ends then too, reporting the abort, as a helper that
// has stopped its process group does.
func (a *Agent) finishLater(op, attemptID string) {
	a.after(preparationTime, func() {
		a.sim.Finish(op, attemptID, nil) // no held op: the process died, nothing to finish
	})
}

// agentD is the simulated D with the demo agent in its containers.
type agentD struct{ a *Agent }

var _ dadapter.D = agentD{}

func (x agentD) PrepareTaskFilesystems(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	x.a.sim.PrepareTaskFilesystems(ctx, owner, src, onGroup, done)
	x.a.finishLater(simd.OpStorage, owner.AttemptID)
}

func (x agentD) CreateTaskClone(ctx context.Context, parent string, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.Clone, error)) {
	x.a.sim.CreateTaskClone(ctx, parent, src, onGroup, done)
	x.a.finishLater(simd.OpClone, filepath.Base(parent)) // the attempt directory is named after the attempt
}

func (x agentD) RemoveTaskFilesystems(fs dadapter.TaskFilesystems, done func(error)) {
	id := fs.Owner().AttemptID
	x.a.sim.RemoveTaskFilesystems(fs, func(err error) {
		if err == nil {
			delete(x.a.runs, id) // nothing of the run is left to export
		}
		done(err)
	})
}

// ExportTaskDiff returns the changes the run has made so far: a stopped
// run's partial output.
func (x agentD) ExportTaskDiff(ctx context.Context, fs dadapter.TaskFilesystems, maxBytes int, done func(dadapter.ExportResult, error)) {
	id := fs.Owner().AttemptID
	x.a.sim.ExportTaskDiff(ctx, fs, maxBytes, func(_ dadapter.ExportResult, err error) {
		if err != nil {
			done(dadapter.ExportResult{}, err)
			return
		}
		r := dadapter.ExportResult{Diff: []byte(x.a.diff(id))}
		if len(r.Diff) > maxBytes {
			r.Diff, r.Truncated = r.Diff[:maxBytes], true
		}
		done(r, nil)
	})
}

func (x agentD) CheckTaskTree(ctx context.Context, fs dadapter.TaskFilesystems, head string, ops []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	x.a.sim.CheckTaskTree(ctx, fs, head, ops, done)
}

// InspectTaskChanges lists the files the run's diff changes: the demo
// agent only edits tracked files, so its manifest holds nothing else.
func (x agentD) InspectTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	id := fs.Owner().AttemptID
	x.a.sim.InspectTaskChanges(ctx, fs, func(_ dadapter.ChangeManifest, err error) {
		if err != nil {
			done(dadapter.ChangeManifest{}, err)
			return
		}
		var m dadapter.ChangeManifest
		for _, line := range strings.Split(x.a.diff(id), "\n") {
			if p, ok := strings.CutPrefix(line, "+++ b/"); ok {
				m.Changes = append(m.Changes, dadapter.Change{Path: p, Kind: dadapter.ChangeModified})
			}
		}
		done(m, nil)
	})
}

// CommitTaskChanges takes a completed run's changes as a bundle: its data
// is the run's diff (there is no repository to bundle), its commit ID a
// hash of that diff.
func (x agentD) CommitTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.Bundle, error)) {
	id := fs.Owner().AttemptID
	x.a.sim.CommitTaskChanges(ctx, fs, func(b dadapter.Bundle, err error) {
		if err != nil {
			done(dadapter.Bundle{}, err)
			return
		}
		diff := x.a.diff(id)
		sum := sha1.Sum([]byte(fmt.Sprintf("%d\x00%s\x00%s", x.a.opt.Seed, id, diff)))
		done(dadapter.Bundle{Commit: hex.EncodeToString(sum[:]), Data: []byte(diff), Leaves: b.Leaves, LeavesCut: b.LeavesCut}, nil)
	})
}

func (x agentD) ReleaseTaskCommit(fs dadapter.TaskFilesystems, done func(error)) {
	x.a.sim.ReleaseTaskCommit(fs, done)
}

func (x agentD) RecoverLeftovers(ctx context.Context, runnerOwner string, done func(dadapter.RecoveryReport, error)) {
	x.a.sim.RecoverLeftovers(ctx, runnerOwner, done)
}

// Start starts the attempt's run: the agent's first step comes after a
// pause, like a container's start.
func (x agentD) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	a := x.a
	if _, err := a.sim.Start(in); err != nil {
		return nil, err
	}
	a.count++
	r := &run{a: a, h: a.sim.Handle(in.AttemptID), s: newScript(a.opt.Seed, a.count), question: in.Phase == words.PhaseQuestions}
	a.runs[in.AttemptID] = r
	if !in.Deadline.IsZero() { // D enforces the deadline; F runs no second timer
		r.limit = a.after(in.Deadline.Sub(a.opt.Clock.Now()), func() {
			if r.stopping || r.h.HasSettled() {
				return
			}
			r.h.StopOnItsOwn(words.StopTimeout)
			r.stop()
		})
	}
	r.schedule()
	return r, nil
}

// diff is the attempt's changes so far ("" when it made none, or has no run).
func (a *Agent) diff(attemptID string) string {
	r := a.runs[attemptID]
	if r == nil || r.edits == 0 {
		return ""
	}
	return r.s.item.diff(r.edits)
}

// run is one invocation of the agent: its handle in the simulated D and
// where its script has got to. Owned by the loop.
type run struct {
	a        *Agent
	h        *simd.Handle
	s        script
	next     int          // steps run so far
	edits    int          // the item's hunks made so far
	timer    runner.Timer // the next step, or the exit after a stop
	limit    runner.Timer // the deadline; nil without one
	stopping bool         // a stop (Cancel or the deadline) is under way
	question bool         // a question attempt (Ask): it answers, and never fails its tests
}

// OnSettled is the simulated handle's.
func (r *run) OnSettled(fn func(dadapter.Settlement)) { r.h.OnSettled(fn) }

// Cancel is a SIGTERM: D records its first stop reason, and the agent
// exits after stopGrace instead of going on with its script.
func (r *run) Cancel(reason words.StopReason) {
	r.h.Cancel(reason)
	r.stop()
}

// stop ends the script and has the agent exit after stopGrace; the
// settlement carries D's first stop reason. A timer that fired before the
// stop may still have its step queued on the loop: every step checks
// stopping first.
func (r *run) stop() {
	if r.stopping || r.h.HasSettled() {
		return
	}
	r.stopping = true
	r.timer.Stop()
	r.timer = r.a.after(stopGrace, func() {
		r.h.Emit([]byte("received SIGTERM: stopping\n"))
		r.settle(dadapter.Settlement{ExitCode: 143, Diagnostic: "the agent was stopped with SIGTERM"})
	})
}

// schedule sets the timer for the next step, or for the agent's exit after
// the last one.
func (r *run) schedule() {
	wait := r.s.settleAfter
	if r.next < len(r.s.steps) {
		wait = r.s.steps[r.next].after
	}
	r.timer = r.a.after(wait, r.step)
}

// step runs the script's next step, or ends the run after the last one.
func (r *run) step() {
	if r.stopping || r.h.HasSettled() {
		return
	}
	if r.next == len(r.s.steps) {
		switch {
		case r.question:
			r.settle(dadapter.Settlement{ExitCode: 0, Output: r.s.answer()})
		case r.s.fail:
			r.settle(dadapter.Settlement{ExitCode: 1, Output: r.s.failureOutput()})
		default:
			r.settle(dadapter.Settlement{ExitCode: 0, Output: r.s.result()})
		}
		return
	}
	st := r.s.steps[r.next]
	r.next++
	r.edits = st.edits
	r.h.Emit([]byte(strings.Join(st.lines, "\n") + "\n"))
	r.schedule()
}

// settle ends the run: the simulated D closes the live output, then
// settles.
func (r *run) settle(s dadapter.Settlement) {
	if r.limit != nil {
		r.limit.Stop()
	}
	r.h.Settle(s)
}
