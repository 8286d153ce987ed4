// Package app is the codeboost application: the contract's startup (decision
// 1's lock, the Store and its migrations under it, the path check, the runner
// owner token, startup recovery, what a person must do, ready) and its
// shutdown steps 1 to 8, each a named method, in the contract's order, kept
// in one place (Run and shutdown). It wires the real parts together: the lock,
// the Store, the runner's coordinator on its goroutine loop, the production D
// and process-group recovery. The review server (serve.go) takes part in
// shutdown through Server and Publisher.
//
// Package cli parses the command line and calls Run; nothing else does.
//
// It may import runner (and runner/lock), store, dadapter and its production
// implementations, and the leaf packages; never sim, testscript or the
// scenarios, which are for tests and the scenario replay only.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/livelog"
	"github.com/codeboost/codeboost/dadapter/procgroup"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// Options configure one run of the application. DB is required; everything
// else has a default.
type Options struct {
	DB    string // the SQLite database file (--db); created if missing
	Root  string // the runner root (--root); "" means <db dir>/codeboost-runner
	Ready string // written once startup has finished (--ready); "" for none
	Check bool   // --check: run startup, then shut down at once instead of serving

	// ReleasePreparation is --release-preparation: instead of serving,
	// release the unknown preparation of this attempt (startup recovery
	// step 7), then exit.
	ReleasePreparation string

	// Log receives the logs: the runner's decisions, the owner token,
	// what recovery left for a person. Nil discards them.
	Log *slog.Logger
	// Stderr receives the messages for a person at the terminal that are
	// not logs: what a second signal does. Nil means os.Stderr.
	Stderr io.Writer

	// Listen is the review server's address ("" for none); Tasks are the
	// tasks it serves, created in the Store on first start; Runner is the
	// runner block of the configuration file.
	Listen string
	Tasks  []TaskConfig
	Runner RunnerConfig
	// Demo runs the demo: the real server, Store and coordinator on the
	// simulated D played by the built-in demo agent (package demo) on the
	// real clock, with the demo's tasks and plan (DemoTasks).
	Demo bool

	// GitHub is the configuration's github block; nil: no code host, and
	// codeboost merges nothing.
	GitHub *GitHubConfig

	// Engine opens the container engine when runner.agent names an image;
	// nil in a build that runs no real agent (serve then refuses such a
	// configuration at startup).
	Engine OpenEngine

	// Server replaces the review server startServer would build (tests of
	// the shutdown order); nil in production.
	Server Server
	// Publisher is the task publisher's part of shutdown (step 2a); nil in
	// this build, which publishes nothing to GitHub yet.
	Publisher Publisher

	// Parts replace what the process runs on, for the simulated world;
	// nil in production (parts.go).
	Parts *Parts
	// LockHome is the directory whose .codeboost/locks holds the
	// single-runner lock; "" is the user's home.
	LockHome string
}

// App is one codeboost process's application: what startup has taken or
// opened, and what shutdown gives back. Its methods run on the caller's
// goroutine, one after the other; only the signal watcher runs beside them
// and it reads nothing but starting.
type App struct {
	opt    Options
	log    *slog.Logger // never nil
	stderr io.Writer    // never nil

	starting atomic.Bool // true until startup has finished: a second signal then exits at once

	lock          *lock.Lock            // held from takeLock until releaseLock; nil otherwise
	store         *store.Store          // open from openStore until closeStore; nil otherwise
	capability    store.Capability      // the Store's shutdown capability, for the owner token, recovery and the runner
	engine        Engine                // the real D when an agent is configured; nil otherwise
	token         string                // the runner owner token (after readOwnerToken)
	root          string                // the runner root (after readOwnerToken)
	loop          Loop                  // the coordinators' loop; nil before recoverStartup and after closeStore
	clock         runner.Clock          // the clock, shared by the runner and the review server
	output        *livelog.Hub          // running attempts' live output, from D to the review server
	runner        *runner.Coordinator   // nil before recoverStartup
	d             dadapter.D            // the D the runner and Ask run on (after recoverStartup)
	host          codehost.Host         // the code host merges and planning read (after openMerge); nil for none
	ask           *ask.Coordinator      // the question coordinator; nil before openAsk, or when it could not be built
	askOwner      string                // Ask's owner token (after openAsk)
	askFailed     bool                  // Ask's startup could not begin: questions stay closed
	merge         *merge.Coordinator    // the merge coordinator; nil before openMerge
	suggest       *suggest.Coordinator  // the suggestion coordinator; nil before openSuggest, or when it could not be built
	recovery      runner.RecoveryReport // what startup recovery did and left (after recoverStartup)
	recoveryBegan time.Time             // when startup recovery began (wall time: the duration is for a person)
	recoveryTook  time.Duration         // how long startup recovery took
	server        Server                // the review server's part in shutdown; nil when none
	url           string                // where the review server listens (after startServer)
}

// New checks the options and returns an App that has not started.
func New(opt Options) (*App, error) {
	if opt.DB == "" {
		return nil, errors.New("app: the database path is required")
	}
	a := &App{opt: opt, log: opt.Log, stderr: opt.Stderr, server: opt.Server}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.stderr == nil {
		a.stderr = os.Stderr
	}
	a.starting.Store(true)
	return a, nil
}

// Run is the whole process: startup in the contract's order, then serving
// until SIGINT or SIGTERM (or at once with Check), then shutdown's steps 1
// to 8. With ReleasePreparation it releases that preparation instead of
// recovering and serving. A startup that fails closes the Store and
// releases the lock (shutdown steps 7 and 8, on every exit path after the
// lock was taken) and returns the failure.
func (a *App) Run() error {
	stop, unwatch := a.watchSignals()
	defer unwatch()

	if err := a.Startup().Wait(); err != nil || a.opt.ReleasePreparation != "" {
		return err
	}
	if !a.opt.Check {
		<-stop
	}
	return a.Shutdown().Wait()
}

// Startup is startup's steps in the contract's order, not yet begun: Run
// waits for each in turn; the simulated world drives them from its loop.
// With ReleasePreparation they end after the release instead.
func (a *App) Startup() *Steps {
	s := &Steps{fail: a.abandon, steps: []step{
		do("lock", a.takeLock),              // decision 1, steps 0 to 2 (startup recovery step 1)
		do("store", a.openStore),            // step 2a: the Store and its migrations, under the lock
		do("verify-path", a.verifyPath),     // decision 1, step 4
		do("owner-token", a.readOwnerToken), // step 2a: the runner owner token
	}}
	if id := a.opt.ReleasePreparation; id != "" { // step 7's release, instead of serving
		s.steps = append(s.steps, do("release-preparation", func() error { return a.abandon(a.releasePreparation(id)) }))
		return s
	}
	s.steps = append(s.steps,
		waits("recovery", a.recoverStartup), // steps 2b to 8: startup recovery
		do("recovered", a.recovered),
		do("merge", a.openMerge), // its startup reads GitHub again for merges left in flight
		waits("ask", a.openAsk),  // Ask's startup, after the runner's recovery; a failure leaves questions closed, not the server
		always("ask-opened", a.askOpened),
		always("suggest", a.openSuggest), // the suggestion coordinator, after the runner's recovery (app/suggest.go)
		always("requeue", a.requeue),     // lane I3: the tasks step 6 listed, once every lane has recovered (app/requeue.go)
		do("server", a.startServer),
		do("ready", a.ready),
	)
	return s
}

// abandon ends a run that stopped before serving (a failed startup, or the
// release): nothing was admitted, so only steps 7 and 8 have anything to
// give back. It returns err joined with theirs.
func (a *App) abandon(err error) error {
	a.stopServer()
	return errors.Join(err, a.closeStore(), a.releaseLock())
}

// takeLock is startup recovery step 1 and decision 1's steps 0 to 2: take
// the single-runner lock for this database before the Store opens, because
// opening runs migrations. If another process holds it, the error is
// exactly "Another codeboost runner is using this database."
func (a *App) takeLock() error {
	l, err := lock.Acquire(a.opt.DB, lock.Options{Home: a.opt.LockHome})
	if err != nil {
		return err
	}
	a.lock = l
	return nil
}

// openStore is step 2a (decision 1's step 3): open the Store under the
// lock, by the lock's canonical path; migrations run here.
func (a *App) openStore() error {
	st, err := store.Open(a.lock.Path(), store.Options{Now: a.clockNow(), IDs: a.ids(), Failpoints: a.failpoints()})
	if err != nil {
		return err
	}
	a.store, a.capability = st, st.ShutdownCapability()
	return nil
}

// verifyPath is decision 1's step 4: the database path still names the
// file identified and locked in step 1 (same device and inode, a regular
// file, one link). On a mismatch startup exits before admission.
func (a *App) verifyPath() error { return a.lock.Verify() }

// readOwnerToken is the rest of step 2a: read the runner owner token for
// the locked file's device and inode, or create it (a copied database gets
// a token of its own). A stored token that is not 32 lowercase hex
// characters is refused before it is used in any path or label. The runner
// root defaults to codeboost-runner next to the database.
func (a *App) readOwnerToken() error {
	if err := a.capability.Update(func(tx *store.Tx) (err error) {
		a.token, err = tx.RunnerOwnerToken(a.lock.Device(), a.lock.Inode(), a.tokens(false))
		return err
	}); err != nil {
		return err
	}
	a.log.Info("runner owner "+a.token, "owner", a.token)
	a.root = a.opt.Root
	if a.root == "" {
		a.root = filepath.Join(filepath.Dir(a.lock.Path()), "codeboost-runner")
	}
	return nil
}

// recoverStartup is startup recovery, steps 2b to 8, run by the coordinator:
// leftover preparation groups stopped after their identity is proven (2b),
// D's owner-scoped recovery (2c, 2d), interrupted attempts finalized in one
// transaction (3), storage and attempt directories removed (4), merged tasks
// reconciled (5), requeues claimed (6), unowned preparation kept for a
// person (7), and admission opened unless a person must act first (8). The
// next step waits for recovery to end (recovered).
//
// D is the Docker engine when an agent is configured (newD), so the legacy
// objects of step 2d and this owner's leftovers are the engine's.
func (a *App) recoverStartup() (*wait, error) {
	if err := os.MkdirAll(a.root, 0o700); err != nil {
		return nil, err
	}
	a.loop, a.clock = runner.NewGoroutineLoop(), runner.NewRealClock()
	if p := a.opt.Parts; p != nil {
		a.loop, a.clock = p.Loop, p.Clock
	}
	a.output = livelog.NewHub(0)
	d, err := a.newD()
	if err != nil {
		return nil, err
	}
	rc := a.opt.Runner
	kinds, why := a.kinds()
	stop := stopGroup
	if p := a.opt.Parts; p != nil {
		stop = p.StopGroup
	}
	c, err := runner.New(runner.Config{Root: a.root, Owner: a.token, Slots: rc.Slots, AttemptTimeout: time.Duration(rc.AttemptTimeout),
		Budget: time.Duration(rc.Budget), DiagnosticsDir: rc.DiagnosticsDir, DiagnosticsCap: rc.DiagnosticsCap,
		Kinds: kinds, KindsWhy: why, Profile: rc.Agent.Profile()}, runner.Deps{
		Store: a.store, Capability: a.capability, D: d, Clock: a.clock, Loop: a.loop, Output: a.output.Sink,
		IDs: a.ids(), Failpoints: a.failpoints(), StopGroup: stop, Trace: a.trace, Repository: a.repository(), Prompt: a.prompt,
	})
	if err != nil {
		return nil, err
	}
	a.runner, a.d = c, d
	a.recoveryBegan = time.Now()
	if err := c.Recover(context.Background()); err != nil {
		return nil, err
	}
	return on(c.RecoveryDone()), nil
}

// recovered takes recovery's report once it has ended (Recover runs
// recovery's first event only; D's recovery and every phase after it end
// later), tells a person what it left, and fails startup if it stopped.
func (a *App) recovered() error {
	a.recovery = a.runner.Recovery()
	a.recoveryTook = time.Since(a.recoveryBegan)
	a.reportForPerson()
	return a.recovery.Err
}

// stopGroup is step 2b's signal to a leftover preparation group, through
// procgroup: its identity is proven again before SIGTERM and before SIGKILL.
func stopGroup(ctx context.Context, g dadapter.ProcessGroup) error {
	return procgroup.StopGroup(ctx, g, procgroup.Options{})
}

// trace logs one runner decision. The runner writes <owner> where its
// simulator trace would otherwise carry a token; the log names the token.
func (a *App) trace(attemptID, line string) {
	if p := a.opt.Parts; p != nil && p.Trace != nil {
		p.Trace(line)
		return
	}
	if attemptID == "" {
		a.log.Info(line)
		return
	}
	a.log.Info(line, "attempt", attemptID)
}

// reportForPerson tells a person what startup recovery left for them:
// objects of an older build to remove by hand (step 2d), unknown
// preparations to release (step 7: each attempt and its directory), storage
// and entries recovery would not touch, refused attempt IDs, and whether
// admission stays closed until they act.
func (a *App) reportForPerson() {
	r := a.recovery
	for _, cmd := range r.LegacyCommands {
		a.log.Warn("remove this object by hand: " + cmd)
	}
	for _, u := range r.UnownedPreparation {
		id := strings.Fields(u)[0]
		a.log.Warn("unknown preparation "+u+": stop its processes, then run codeboost serve --db "+shellQuote(a.lock.Path())+" --release-preparation "+id,
			"attempt", id)
	}
	for _, u := range r.UnownedObjects {
		a.log.Warn("left alone: " + u)
	}
	for _, u := range r.UnmatchedStorage {
		a.log.Warn("task storage of "+u+" matches no attempt; left alone", "attempt", u)
	}
	for _, u := range r.UnknownEntries {
		a.log.Warn("unknown entry " + u + " under the attempts directory; left alone")
	}
	for _, u := range r.UnsafeAttempts {
		a.log.Warn(fmt.Sprintf("stored attempt ID %q is not safe to use; refused", u))
	}
	if r.Err == nil && !r.Opened() {
		a.log.Warn("admission stays closed until the above is handled")
	}
}

// ready ends startup: from here a second signal no longer stops the process
// at once. It says the runner is serving and writes the --ready file.
func (a *App) ready() error {
	a.starting.Store(false)
	switch {
	case a.opt.Demo:
		a.log.Info(fmt.Sprintf("demo: open %s (the simulated D played by the demo agent; database %s)", a.url, a.lock.Path()))
	case a.url != "":
		a.log.Info(fmt.Sprintf("serving %s at %s (%s)", a.lock.Path(), a.url, a.agentWords()))
	default:
		a.log.Info(fmt.Sprintf("serving %s (%s)", a.lock.Path(), a.agentWords()))
	}
	if a.opt.Ready != "" {
		return os.WriteFile(a.opt.Ready, []byte("ready\n"), 0o600)
	}
	return nil
}

// shellQuote quotes p for a POSIX shell when it holds anything but the
// characters a path usually has, so that a command printed for a person can
// be pasted as it is.
func shellQuote(p string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%", r)
	}
	if p != "" && strings.IndexFunc(p, func(r rune) bool { return !safe(r) }) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
