package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

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

	askIDs   *ids.Seeded // Ask's owner tokens
	trace    []string
	aliases  map[string]string // UUID → name given by the script
	names    map[string]string // name → UUID
	nextName string            // the name the next admitted attempt gets
}

// NewWorld builds a world in dir (a fresh directory of its own).
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
	if err := w.boot(); err != nil {
		return nil, err
	}
	if err := w.Runner.Open(context.Background()); err != nil {
		return nil, err
	}
	return w, nil
}

// boot starts a runner process over the world's database file: the Store,
// the runner owner token (read or created for this file's device and inode),
// and a coordinator that is not open yet.
func (w *World) boot() error {
	st, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: w.IDs, Failpoints: w.FP})
	if err != nil {
		return err
	}
	var fi syscall.Stat_t
	if err := syscall.Stat(w.DBPath, &fi); err != nil {
		st.Close()
		return err
	}
	capability := st.ShutdownCapability()
	var token string
	if err := capability.Update(func(tx *store.Tx) (err error) {
		token, err = tx.RunnerOwnerToken(uint64(fi.Dev), fi.Ino, w.IDs.Token)
		return err
	}); err != nil {
		st.Close()
		return err
	}
	var askToken string
	if err := capability.Update(func(tx *store.Tx) (err error) {
		// Its own seeded source: Ask's token must not shift the IDs
		// every other scenario's trace was written with.
		askToken, err = tx.AskOwnerToken(uint64(fi.Dev), fi.Ino, w.askIDs.Token)
		return err
	}); err != nil {
		st.Close()
		return err
	}
	w.Store, w.Owner, w.AskOwner = st, token, askToken
	root := w.Root()
	if err := os.MkdirAll(root, 0o700); err != nil {
		st.Close()
		return err
	}
	cfg := w.Config
	w.Runner, err = runner.New(runner.Config{
		Slots: cfg.Slots, Kinds: cfg.Kinds, AttemptTimeout: cfg.AttemptTimeout, Budget: cfg.Budget,
		Root: root, Owner: w.Owner, DiagnosticsCap: cfg.DiagnosticsCap,
	}, runner.Deps{
		Store: st, Capability: capability, D: w.D, Clock: w.Clock, Loop: w.Loop, IDs: w.IDs, Failpoints: w.FP,
		Trace:     func(_, line string) { w.Trace(line) },
		StopGroup: func(_ context.Context, g dadapter.ProcessGroup) error { return w.D.StopGroup(g) },
	})
	if err != nil {
		st.Close()
		return err
	}
	w.Merge, err = merge.New(merge.Config{Store: st, Capability: capability, Host: w.GitHub, Loop: w.Loop, IDs: w.IDs,
		PullRequest: w.pullRequest, Failpoints: w.FP, Trace: w.Trace})
	if err != nil {
		st.Close()
		return err
	}
	w.Ask, err = ask.New(ask.Config{Store: st, Capability: capability, D: w.D, Loop: w.Loop, Clock: w.Clock, IDs: w.IDs,
		Owner: askToken, Trace: w.Trace})
	if err != nil {
		st.Close()
		return err
	}
	w.Planner = NewPlanner(w.Trace)
	w.Suggest, err = suggest.New(suggest.Config{Store: st, Capability: capability, Loop: w.Loop, Clock: w.Clock, IDs: w.IDs,
		Provider: w.Planner, Issue: w.issue, Trace: func(line string) { w.Trace("suggest: " + line) }})
	if err != nil {
		st.Close()
		return err
	}
	return nil
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
	w.Loop.die()
	w.Clock.timers = nil
	w.D.ProcessDied()
	w.Store.Close()
	w.Runner, w.Ask, w.Merge = nil, nil, nil
	w.Suggest, w.Planner = nil, nil
}

// Restart starts a new runner process over the same database file and runs
// startup recovery; admission opens only if recovery completes.
func (w *World) Restart() error {
	w.Trace("restart: a new runner process starts")
	w.Loop.Revive()
	if err := w.boot(); err != nil {
		w.Trace("restart failed: " + err.Error())
		return err
	}
	if err := w.Runner.Recover(context.Background()); err != nil {
		return err
	}
	w.Loop.Drain()
	w.exitIfRecoveryStopped()
	return nil
}

// exitIfRecoveryStopped is the caller's half of a recovery that stopped the
// start (steps 2d and 3): the process closes its Store and exits non-zero
// (the simulated world has no single-runner lock to release). The script
// keeps a read handle on the same file, as an inspector would, so it can
// still assert the durable rows.
func (w *World) exitIfRecoveryStopped() {
	select {
	case <-w.Runner.RecoveryDone():
	default:
		return
	}
	if w.Runner.Recovery().Err == nil {
		return
	}
	w.Store.Close()
	w.D.ProcessDied() // the process exits: its D's process-local ownership goes with it
	w.Trace("exit: recovery stopped the start; Store closed, non-zero exit")
	if st, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: w.IDs}); err == nil {
		w.Store = st
	}
}

// Close closes the store.
func (w *World) Close() error { return w.Store.Close() }

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
	line = strings.ReplaceAll(line, w.Owner, "<owner>")
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
