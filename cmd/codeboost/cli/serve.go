package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/nodocker"
	"github.com/codeboost/codeboost/dadapter/procgroup"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// serve is startup (decision 1's lock, then the Store and its migrations
// under the lock, step 4's check, the owner token, startup recovery), then
// waiting for SIGINT or SIGTERM, then shutdown in order. The lock is
// released last, on every exit path after it was taken, including a failed
// startup.
//
// The coordinator runs against dadapter/nodocker until the Docker adapter
// lands: recovery, admission and shutdown are the real ones, and every
// attempt fails at its first preparation step with a clear message.
func serve(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	db := fl.String("db", "", "the SQLite database file (created if missing)")
	root := fl.String("root", "", "the runner root (default: <db dir>/codeboost-runner)")
	ready := fl.String("ready", "", "write this file once startup has finished (for scripts)")
	release := fl.String("release-preparation", "", "release an unknown preparation of this attempt, then exit")
	check := fl.Bool("check", false, "run startup (lock, Store, migrations, checks, recovery), then shut down and exit instead of serving")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *db == "" || fl.NArg() != 0 {
		fmt.Fprintln(stderr, "codeboost serve: --db PATH is required")
		return 2
	}
	// Signals are caught from the start. A first Ctrl+C during startup
	// waits for startup to finish; a second stops the process at once,
	// which the next start's recovery treats like a crash.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	var startup atomic.Bool
	startup.Store(true)
	go func() {
		<-sigs
		close(stop)
		for range sigs {
			if startup.Load() {
				fmt.Fprintln(stderr, "codeboost: stopped during startup")
				os.Exit(130)
			}
			fmt.Fprintln(stderr, words.StillStopping)
		}
	}()

	l, err := lock.Acquire(*db, lock.Options{})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer l.Release() // step 8, after the Store is closed (deferred later, runs first)
	st, err := store.Open(l.Path(), store.Options{Now: time.Now, IDs: ids.Random{}, Failpoints: Failpoints})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer st.Close() // step 7
	if err := l.Verify(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	capability := st.ShutdownCapability()
	var token string
	if err := capability.Update(func(tx *store.Tx) (err error) {
		token, err = tx.RunnerOwnerToken(l.Device(), l.Inode(), nil)
		return err
	}); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "codeboost: runner owner %s\n", token)
	if *root == "" {
		*root = filepath.Join(filepath.Dir(l.Path()), "codeboost-runner")
	}
	if *release != "" {
		if err := releasePreparation(st, capability, *root, token, *release); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "released the preparation of %s\n", *release)
		return 0
	}
	c, loop, err := newCoordinator(st, capability, *root, token, stdout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer loop.Stop()
	c.Recover()
	<-c.RecoveryDone()
	report := c.Recovery()
	printRecovery(stdout, report)
	if report.Err != nil {
		fmt.Fprintln(stderr, report.Err)
		return 1
	}
	startup.Store(false)
	fmt.Fprintf(stdout, "codeboost: serving %s (no Docker adapter in this build: attempts cannot start)\n", l.Path())
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte("ready\n"), 0o600); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if !*check {
		<-stop
	}
	// Shutdown: admission closes and every job is stopped (steps 1 and 4);
	// the write gate closes (step 3: there are no HTTP requests to drain
	// yet); every job ends through the holder order and every plan run is
	// awaited (steps 5 and 5a); the Store closes and the lock is released
	// by the deferred calls above (steps 7 and 8). A second signal does not
	// skip steps.
	fmt.Fprintln(stdout, "codeboost: stopping")
	c.BeginShutdown()
	st.CloseWriteGate()
	if duringShutdown != nil {
		duringShutdown()
	}
	<-c.Drained()
	return 0
}

// duringShutdown, when a test sets it, runs after shutdown began and before
// it is awaited: without a Docker adapter no job can keep shutdown busy, so
// the test holds it open here to send a second signal. Nil in the binary.
var duringShutdown func()

// newCoordinator builds the production runner: the real Store, loop and
// clock, random IDs, process-group recovery through procgroup, and no
// Docker adapter yet.
func newCoordinator(st *store.Store, capability store.Capability, root, token string, log io.Writer) (*runner.Coordinator, *runner.GoroutineLoop, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, nil, err
	}
	loop := runner.NewGoroutineLoop()
	c, err := runner.New(runner.Config{Root: root, Owner: token}, runner.Deps{
		Store: st, Capability: capability, D: nodocker.D{}, Clock: runner.NewRealClock(), Loop: loop, IDs: ids.Random{},
		Failpoints: Failpoints,
		StopGroup: func(ctx context.Context, g dadapter.ProcessGroup) error {
			return procgroup.StopGroup(ctx, g, procgroup.Options{})
		},
		Trace: func(line string) {
			if strings.HasPrefix(line, "recovery:") || strings.HasPrefix(line, "shutdown:") {
				fmt.Fprintf(log, "codeboost: %s\n", line)
			}
		},
	})
	if err != nil {
		loop.Stop()
		return nil, nil, err
	}
	return c, loop, nil
}

// printRecovery tells a person what startup recovery left for them.
func printRecovery(w io.Writer, r runner.RecoveryReport) {
	for _, cmd := range r.LegacyCommands {
		fmt.Fprintf(w, "codeboost: remove this object by hand: %s\n", cmd)
	}
	for _, u := range r.UnownedPreparation {
		fmt.Fprintf(w, "codeboost: unknown preparation %s: stop its processes, then run codeboost serve --db DB --release-preparation %s\n",
			u, strings.Fields(u)[0])
	}
	for _, u := range r.UnmatchedStorage {
		fmt.Fprintf(w, "codeboost: task storage of %s matches no attempt; left alone\n", u)
	}
	for _, u := range r.UnknownEntries {
		fmt.Fprintf(w, "codeboost: unknown entry %s under the attempts directory; left alone\n", u)
	}
	for _, u := range r.UnsafeAttempts {
		fmt.Fprintf(w, "codeboost: stored attempt ID %q is not safe to use; refused\n", u)
	}
	if r.Err == nil && !r.Opened() {
		fmt.Fprintln(w, "codeboost: admission stays closed until the above is handled")
	}
}

// releasePreparation is --release-preparation: the attempt's directory is
// removed and its starting mark cleared only when no process has a file
// open or its working directory inside it; if one has, or the check cannot
// run, it refuses and admission stays closed.
func releasePreparation(st *store.Store, capability store.Capability, root, token, attemptID string) error {
	if !ids.ValidUUID(attemptID) {
		return fmt.Errorf("attempt ID %q is not a lowercase UUID v4", attemptID)
	}
	a, err := st.Attempt(attemptID)
	if err != nil {
		return err
	}
	if a.PreparationStartedAt == nil || a.PreparationPGID != nil {
		return fmt.Errorf("attempt %s has no preparation that started without a group ID", attemptID)
	}
	dir := filepath.Join(root, token, "attempts", attemptID)
	if info, err := os.Lstat(dir); err == nil && !info.IsDir() {
		return fmt.Errorf("%s is not a directory; left alone", dir)
	}
	check := processUsing
	if Failpoints.Fire("mutant/release-skips-process-check") {
		check = func(string) (int, error) { return 0, nil } // deliberately wrong: a quiet directory is trusted
	}
	if pid, err := check(dir); err != nil {
		return fmt.Errorf("cannot check which processes use %s (%v); admission stays closed", dir, err)
	} else if pid != 0 {
		return fmt.Errorf("process %d still has a file open or its working directory in %s; stop it first", pid, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return capability.Update(func(tx *store.Tx) error { return tx.ClearPreparationStarting(attemptID) })
}

// processUsing returns a process with a file open, or its working
// directory, inside dir (0 for none), reading /proc/*/fd and /proc/*/cwd.
func processUsing(dir string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	inside := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	self := os.Getpid()
	checked := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		if cwd, err := os.Readlink(filepath.Join(base, "cwd")); err == nil {
			checked++
			if inside(cwd) {
				return pid, nil
			}
		}
		fds, err := os.ReadDir(filepath.Join(base, "fd"))
		if err != nil {
			continue // the process ended, or is not ours to read
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil && inside(target) {
				return pid, nil
			}
		}
	}
	if checked == 0 {
		return 0, errors.New("no process could be inspected")
	}
	return 0, nil
}
