package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// Config sets up a world.
type Config struct {
	Seed           uint64
	Slots          int
	AttemptTimeout time.Duration
	Budget         time.Duration
	DiagnosticsCap int64
	Kinds          []string
}

// World is one scenario's universe: its own clock, loop, IDs, failpoints, D,
// SQLite file and runner.
type World struct {
	Dir    string
	DBPath string
	Clock  *Clock
	Loop   *Loop
	IDs    *ids.Seeded
	FP     *failpoints.Set
	D      *simd.D
	Store  *store.Store
	Runner *runner.Coordinator
	Owner  string
	// Ask is the question coordinator of the running process, on the
	// same loop and Store as the runner, under its own owner token. It is
	// built with the process; Open (the ask-open command) is its startup.
	Ask      *ask.Coordinator
	AskOwner string
	// Suggest is the suggestion coordinator of the running process, on
	// the same loop and Store, planning through Planner, the simulated
	// provider the script settles by hand. Both are the process's.
	Suggest *suggest.Coordinator
	Planner *Planner
	// Merge is the merge coordinator of the running process; GitHub the
	// simulated code host it merges on, which outlives a crash (it is not
	// the process's). TaskPRs names each task's pull request.
	Merge   *merge.Coordinator
	GitHub  *GitHub
	TaskPRs map[string]PRRef
	// TaskIssues names each task's issue, read before each planning start.
	TaskIssues map[string]PRRef
	Config     Config
	// Server is the review server the script built for the running
	// process (nil: none), which shutdown's steps reach through
	// serverSlot.
	Server app.Server
	// PlanningOff starts the next process without the planning provider,
	// as serve starts without a github block.
	PlanningOff bool

	askIDs   *ids.Seeded // Ask's owner tokens
	app      *app.App    // the running process; nil after a crash
	steps    *app.Steps  // its startup or shutdown, as far as it has run
	exited   bool        // the process exited: its startup stopped, or its shutdown ended
	stopping bool        // steps is its shutdown
	trace    []string
	aliases  map[string]string // UUID → name given by the script
	names    map[string]string // name → UUID
	nextName string            // the name the next admitted attempt gets
}

// NewWorld builds a world in dir (a fresh directory of its own) and
// starts its first process, through the same startup serve runs.
func NewWorld(dir string, cfg Config, fp *failpoints.Set) (*World, error) {
	if fp == nil {
		fp = failpoints.New()
	}
	w := &World{Dir: dir, DBPath: filepath.Join(dir, "codeboost.db"), Loop: &Loop{}, IDs: ids.NewSeeded(cfg.Seed), askIDs: ids.NewSeeded(cfg.Seed ^ 0xa5a5),
		FP: fp, Config: cfg, aliases: map[string]string{}, names: map[string]string{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w.Clock = NewClock(w.Loop)
	w.GitHub, w.TaskPRs, w.TaskIssues = NewGitHub(w.Trace), map[string]PRRef{}, map[string]PRRef{}
	w.D = simd.NewD(w.Name, w.Trace)
	w.D.Now = w.Clock.Now
	w.Loop.Idle = w.proceed
	if err := w.boot(); err != nil {
		return nil, err
	}
	return w, nil
}

// boot starts a process over the world's database file: package app's
// startup, step by step as production runs it (the lock, the Store, the
// owner tokens, the runner's recovery, merges, Ask, suggestions, the
// requeue), on the world's parts. It drives startup as far as it goes
// without the script: a step that waits (a held D operation in recovery,
// say) resumes whenever the loop next falls idle.
func (w *World) boot() error {
	root := w.Root()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	cfg := w.Config
	w.Planner = NewPlanner(w.Trace)
	var planner suggest.Provider = w.Planner
	if w.PlanningOff {
		planner = nil
	}
	a, err := app.New(app.Options{DB: w.DBPath, Root: root, LockHome: w.Dir, Server: serverSlot{w},
		Runner: app.RunnerConfig{Slots: cfg.Slots, AttemptTimeout: app.Duration(cfg.AttemptTimeout), Budget: app.Duration(cfg.Budget),
			DiagnosticsCap: cfg.DiagnosticsCap},
		Parts: &app.Parts{Clock: w.Clock, Loop: w.Loop, IDs: w.IDs, RunnerTokens: w.IDs.Token,
			// Its own seeded source: Ask's token must not shift the IDs
			// every other scenario's trace was written with.
			AskTokens: w.askIDs.Token,
			D:         w.D, StopGroup: func(_ context.Context, g dadapter.ProcessGroup) error { return w.D.StopGroup(g) },
			Failpoints: w.FP, GitHub: w.GitHub, PullRequest: w.pullRequest, Planner: planner, Issue: w.issue,
			Kinds: cfg.Kinds, Trace: w.Trace}})
	if err != nil {
		return err
	}
	w.app, w.steps, w.exited, w.stopping, w.Server = a, a.Startup(), false, false, nil
	w.Loop.Drain()
	if w.steps.Done() && w.steps.Err() != nil && w.Runner == nil {
		return w.steps.Err() // it stopped before recovery: nothing was started
	}
	return nil
}

// proceed is the process's main goroutine, which production wakes when
// what a startup or shutdown step waits for has happened: the world runs
// it whenever its loop falls idle. It reports whether a step ran.
func (w *World) proceed() bool {
	if w.app == nil || w.steps == nil || w.steps.Done() {
		return false
	}
	before := w.Loop.Events()
	w.steps.Next()
	w.lanes()
	switch {
	case w.stopping && w.steps.Done() && !w.exited:
		w.exited = true
		w.Trace("exit: shutdown ended; Store closed, lock released")
		w.readHandle()
	case w.steps.Done() && w.steps.Err() != nil && w.Runner != nil && !w.exited:
		w.exit()
	}
	return w.Loop.Events() != before || w.steps.Done()
}

// lanes takes the process's Store and coordinators as startup builds
// them.
func (w *World) lanes() {
	l := w.app.Lanes()
	if l.Store != nil {
		w.Store = l.Store
	}
	w.Runner, w.Ask, w.Merge, w.Suggest = l.Runner, l.Ask, l.Merge, l.Suggest
	w.learnOwners()
}

// learnOwners takes the owner tokens startup has read, for the trace to
// name them.
func (w *World) learnOwners() {
	l := w.app.Lanes()
	if l.Owner != "" {
		w.Owner = l.Owner
	}
	if l.AskOwner != "" {
		w.AskOwner = l.AskOwner
	}
}

// Root is the runner root: <dir>/codeboost-runner, next to the database, the
// same default `codeboost serve --db` uses, so a real process given only
// the database path recovers the very same directories.
func (w *World) Root() string { return filepath.Join(w.Dir, "codeboost-runner") }

// Crash kills the runner process at an event boundary: no shutdown code
// runs, in-memory jobs, markers, timers and queued events vanish, and the
// SQLite file stays as the last commit left it. What outlives a process
// outlives it here too: D's containers, task storage and labels.
func (w *World) Crash() {
	w.Trace("crash: the runner process is killed")
	w.Loop.Die()
	w.Clock.DropTimers()
	w.D.ProcessDied()
	if w.app != nil {
		w.app.Kill()
	}
	w.Store.Close()
	w.app, w.steps = nil, nil
	w.Runner, w.Ask, w.Merge = nil, nil, nil
	w.Suggest, w.Planner = nil, nil
}

// Restart starts a new runner process over the same database file and runs
// its startup; admission opens only if recovery completes.
func (w *World) Restart() error {
	w.Trace("restart: a new runner process starts")
	if w.app != nil { // the last process ended without a crash: it exited, and its lock went with it
		w.app.Kill()
	}
	w.Loop.Revive()
	if err := w.boot(); err != nil {
		w.Trace("restart failed: " + err.Error())
		return err
	}
	return nil
}

// Shutdown begins serve's shutdown of the running process: package app's
// steps 1 to 8 in production's order. They run as far as they can now and
// go on whenever the loop falls idle (once the jobs have settled, say);
// after step 8 the process has exited, and the script keeps a read handle
// on the database, as after a stopped start.
func (w *World) Shutdown() error {
	if w.app == nil || w.steps == nil || !w.steps.Done() || w.steps.Err() != nil || w.stopping {
		return errors.New("shutdown: no process has finished its startup and not yet begun to stop")
	}
	w.Trace("shutdown: the process is asked to stop (SIGTERM)")
	w.steps, w.stopping = w.app.Shutdown(), true
	w.Loop.Drain()
	return nil
}

// AwaitShutdown passes the shutdown's waits, each up to bound in real
// time, until the step named step (package app's names: "2 drain", "3
// write gate", "3 merges", …) has run: the script's word that what an
// HTTP handler's goroutine closes (the drain's end, the aborted requests'
// return) has happened, so that the next step runs at this point of the
// script.
func (w *World) AwaitShutdown(step string, bound time.Duration) error {
	if !w.stopping || w.steps == nil {
		return errors.New("the process is not shutting down")
	}
	for !w.steps.Passed(step) {
		if w.steps.Done() {
			return fmt.Errorf("shutdown ended without step %q", step)
		}
		if !w.steps.Pass(bound) {
			return fmt.Errorf("shutdown still waits before step %q after %v", step, bound)
		}
		w.Loop.Drain()
	}
	return nil
}

// Stopping reports whether the process's shutdown has begun.
func (w *World) Stopping() bool { return w.stopping }

// ShutdownPassed reports whether the process's shutdown has passed the
// step named step (package app's names).
func (w *World) ShutdownPassed(step string) bool {
	return w.stopping && w.steps != nil && w.steps.Passed(step)
}

// exit is the end of a process whose startup stopped (recovery's steps 2d
// and 3): startup has closed its Store and released its lock, and it exits
// non-zero. The script keeps a read handle on the same file, as an
// inspector would, so it can still assert the durable rows.
func (w *World) exit() {
	w.exited = true
	w.D.ProcessDied() // the process exits: its D's process-local ownership goes with it
	w.Trace("exit: recovery stopped the start; Store closed, non-zero exit")
	w.readHandle()
}

// readHandle opens the script's own handle on the database of a process
// that has exited, as an inspector would.
func (w *World) readHandle() {
	if st, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: w.IDs}); err == nil {
		w.Store = st
	}
}

// Close ends the world: the running process, if any, dies as Crash's does
// (its lock goes with it), and the Store the script holds closes.
func (w *World) Close() error {
	if w.app != nil {
		w.app.Kill()
	}
	return w.Store.Close()
}

// Name gives a known ID its script name (else the ID itself).
func (w *World) Name(id string) string {
	if n, ok := w.aliases[id]; ok {
		return n
	}
	return id
}

// Alias names an ID for the trace and for later commands.
func (w *World) Alias(id, name string) error {
	if prev, ok := w.names[name]; ok && prev != id {
		return fmt.Errorf("name %s is already used for another attempt", name)
	}
	w.aliases[id], w.names[name] = name, id
	return nil
}

// NameNext gives the next admitted attempt a name.
func (w *World) NameNext(name string) error {
	if _, ok := w.names[name]; ok {
		return fmt.Errorf("name %s is already used", name)
	}
	w.nextName = name
	return nil
}

// ID resolves a script name to its ID.
func (w *World) ID(name string) (string, error) {
	if id, ok := w.names[name]; ok {
		return id, nil
	}
	return "", fmt.Errorf("no attempt is named %s", name)
}

var uuidInLine = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)

// Trace appends one line, with known IDs replaced by their names, the
// world's directory (a fresh temporary one on every run, named by paths in
// errors) by <world>, the runner owner token by <owner>, and the virtual
// time in front.
func (w *World) Trace(line string) {
	if w.nextName != "" && (strings.HasPrefix(line, "admitted ") || strings.HasPrefix(line, "ask: admitted ") ||
		strings.HasPrefix(line, "suggest: start ") || strings.HasPrefix(line, "merge: admitted ")) {
		if id := uuidInLine.FindString(line); id != "" && w.aliases[id] == "" {
			w.Alias(id, w.nextName)
			w.nextName = ""
		}
	}
	line = uuidInLine.ReplaceAllStringFunc(line, w.Name)
	if w.Dir != "" {
		line = strings.ReplaceAll(line, w.Dir, "<world>")
	}
	if (w.Owner == "" || w.AskOwner == "") && w.app != nil {
		w.learnOwners() // startup traces before proceed has taken its lanes
	}
	if w.Owner != "" {
		line = strings.ReplaceAll(line, w.Owner, "<owner>")
	}
	if w.AskOwner != "" {
		line = strings.ReplaceAll(line, w.AskOwner, "<ask-owner>")
	}
	w.trace = append(w.trace, fmt.Sprintf("%s %s", w.Clock.Now().Sub(Epoch), line))
}

// Lines returns the trace so far.
func (w *World) Lines() []string { return append([]string(nil), w.trace...) }

// PRRef is a task's pull request on the simulated GitHub.
type PRRef struct {
	Repo   string
	Number int
}

// issue is live planning's read of a task's issue before each start: the
// task's issue on the simulated GitHub, when the script named one
// (TaskIssues), else none.
func (w *World) issue(ctx context.Context, planKey string) (string, error) {
	r, ok := w.TaskIssues[planKey]
	if !ok {
		return "", nil
	}
	is, err := w.GitHub.Issue(ctx, r.Repo, r.Number)
	if err != nil {
		return "", err
	}
	return is.Title + "\n\n" + is.Body, nil
}

// pullRequest is the merge coordinator's view of TaskPRs.
func (w *World) pullRequest(planKey string) (string, int, bool) {
	r, ok := w.TaskPRs[planKey]
	return r.Repo, r.Number, ok
}

// serverSlot is the world's review server as the process's shutdown sees
// it: whichever one the script built for this process (after startup, as
// scenarios add tasks), or none, whose steps have nothing to do.
type serverSlot struct{ w *World }

func (s serverSlot) SetStopping() {
	if srv := s.w.Server; srv != nil {
		srv.SetStopping()
	}
}

func (s serverSlot) BeginDrain() <-chan struct{} {
	if srv := s.w.Server; srv != nil {
		return srv.BeginDrain()
	}
	return closed()
}

func (s serverSlot) AbortRequests() {
	if srv := s.w.Server; srv != nil {
		srv.AbortRequests()
	}
}

func (s serverSlot) RequestsEnded() <-chan struct{} {
	if srv := s.w.Server; srv != nil {
		return srv.RequestsEnded()
	}
	return closed()
}

func (s serverSlot) Close() {
	if srv := s.w.Server; srv != nil {
		srv.Close()
	}
}

// closed is a channel that is already closed: a wait with nothing to wait
// for.
func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
