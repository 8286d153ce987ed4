package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
)

// serve is startup (decision 1's lock, then the Store and its migrations
// under the lock, step 4's check, the owner token), then waiting for
// SIGINT or SIGTERM, then shutdown in order. The lock is released last, on
// every exit path after it was taken, including a failed startup.
//
// The runner is opt-in: without a D adapter configured (the Docker adapter
// arrives with its own issue) there is no coordinator, so startup recovery
// and the runner's shutdown steps have nothing to run here yet.
func serve(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	db := fl.String("db", "", "the SQLite database file (created if missing)")
	root := fl.String("root", "", "the runner root (default: <db dir>/codeboost-runner)")
	ready := fl.String("ready", "", "write this file once startup has finished (for scripts)")
	release := fl.String("release-preparation", "", "release an unknown preparation of this attempt, then exit")
	check := fl.Bool("check", false, "run startup (lock, Store, migrations, checks), then shut down and exit instead of serving")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *db == "" || fl.NArg() != 0 {
		fmt.Fprintln(stderr, "codeboost serve: --db PATH is required")
		return 2
	}
	// Signals are caught from the start: a first Ctrl+C during startup
	// waits for startup to finish (it stays buffered until then).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	l, err := lock.Acquire(*db, lock.Options{Failpoints: Failpoints})
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
	fmt.Fprintf(stdout, "codeboost: serving %s; the runner is not configured\n", l.Path())
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte("ready\n"), 0o600); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if !*check {
		<-sigs
	}
	// A second signal during shutdown does not skip steps.
	go func() {
		for range sigs {
			fmt.Fprintln(stderr, "Still stopping agents…")
		}
	}()
	fmt.Fprintln(stdout, "codeboost: stopping")
	return 0
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
