package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// releasePreparation is --release-preparation, the person's answer to
// startup recovery step 7 (an attempt marked "preparation starting" with no
// group ID: a child may exist that nobody can identify). The attempt's
// directory is removed and its starting mark cleared only when no process
// has a file open or its working directory inside it; if one has, or the
// check cannot run, it refuses and admission stays closed. A quiet
// directory proves nothing, so the check is never skipped.
func (a *App) releasePreparation(attemptID string) error {
	if !ids.ValidUUID(attemptID) {
		return fmt.Errorf("attempt ID %q is not a lowercase UUID v4", attemptID)
	}
	at, err := a.store.Attempt(attemptID)
	if err != nil {
		return err
	}
	if at.PreparationStartedAt == nil || at.PreparationPGID != nil {
		return fmt.Errorf("attempt %s has no preparation that started without a group ID", attemptID)
	}
	dir := filepath.Join(a.root, a.token, "attempts", attemptID)
	if info, err := os.Lstat(dir); err == nil && !info.IsDir() {
		return fmt.Errorf("%s is not a directory; left alone", dir)
	}
	if pid, err := processUsing(dir); err != nil {
		return fmt.Errorf("cannot check which processes use %s (%v); admission stays closed", dir, err)
	} else if pid != 0 {
		return fmt.Errorf("process %d still has a file open or its working directory in %s; stop it first", pid, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := a.capability.Update(func(tx *store.Tx) error { return tx.ClearPreparationStarting(attemptID) }); err != nil {
		return err
	}
	a.log.Info("released the preparation of "+attemptID, "attempt", attemptID)
	return nil
}

// processUsing returns a process with a file open, or its working
// directory, inside dir (0 for none), reading /proc/*/fd and /proc/*/cwd
// (the contract's check on Linux). It fails when no process at all could
// be inspected, so an unreadable /proc never passes for a quiet directory.
func processUsing(dir string) (int, error) { return processUsingIn("/proc", dir) }

// processUsingIn is processUsing over the process table mounted at proc.
func processUsingIn(proc, dir string) (int, error) {
	entries, err := os.ReadDir(proc)
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
		base := filepath.Join(proc, e.Name())
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
