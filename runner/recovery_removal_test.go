package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestRecoveryStopsWhenALeftoverDirectoryCannotBeRemoved walks startup
// recovery's removals of this runner's leftover directories, each one made
// impossible to remove in turn (an immutable file inside it: the runner runs
// as root here, so a mode would not stop it). "Startup recovery", step 4:
// every directory under <runner root>/<runner owner token>/attempts/ of a
// known attempt is checked "and remove[d]", and that comes before step 8,
// "Open the coordinator"; "Production wiring": "Any failure closes the Store,
// releases the lock and exits with its message." So a removal that fails
// stops the start with an error naming the directory, and admission stays
// closed; once the directory can be removed, the next start removes it and
// opens.
func TestRecoveryStopsWhenALeftoverDirectoryCannotBeRemoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dir     func(root string, a store.Attempt) string
		wantErr string
	}{
		{"attempt directory", func(root string, a store.Attempt) string { return filepath.Join(root, "attempts", a.ID) },
			"removing attempt directory"},
		{"staging directory", func(root string, a store.Attempt) string { return filepath.Join(root, "staging", a.AllocationID) },
			"removing staging directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := noLeftoversD{&goD{handles: map[string]*goHandle{}}}
			c, st, a := crashWhileRunning(t, d, words.KindReview)
			dir := tc.dir(filepath.Join(c.cfg.Root, c.cfg.Owner), a)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			locked := filepath.Join(dir, "locked")
			if err := os.WriteFile(locked, []byte("cannot be removed"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := setImmutable(locked, true); err != nil {
				t.Skipf("cannot make a file immutable here: %v", err)
			}
			t.Cleanup(func() { setImmutable(locked, false) })

			r := restartRecovery(t, c, st, d)
			if r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) || !strings.Contains(r.Err.Error(), dir) {
				t.Errorf("recovery error %v, want %q of %s", r.Err, tc.wantErr, dir)
			}
			if r.Opened() {
				t.Error("admission opened over a leftover directory that was not removed")
			}
			if _, err := os.Stat(locked); err != nil {
				t.Errorf("the locked file: %v", err)
			}

			// Once it can be removed, the next start removes it and opens.
			if err := setImmutable(locked, false); err != nil {
				t.Fatal(err)
			}
			if r := restartRecovery(t, c, st, d); r.Err != nil || !r.Opened() {
				t.Fatalf("the next recovery: error %v, opened %v", r.Err, r.Opened())
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after the next recovery: %v, want it removed", dir, err)
			}
		})
	}
}

// crashWhileRunning admits one attempt of kind on a coordinator whose D is
// d, waits until its row is running, and stops the coordinator's loop: the
// process dies with the attempt running. It returns the coordinator, its
// Store and the attempt's row.
func crashWhileRunning(t *testing.T, d dadapter.D, kind string) (*Coordinator, *store.Store, store.Attempt) {
	t.Helper()
	c, st, loop := productionCoordinator(t, 1, d)
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	attemptID, err := c.Admit(context.Background(), AdmitRequest{PlanKey: createTask(t, st), Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	a := awaitState(t, st, attemptID, words.Running)
	loop.Stop()
	return c, st, a
}

// restartRecovery runs startup recovery in a new coordinator of c's
// configuration over st (a new process over the same database and root).
func restartRecovery(t *testing.T, c *Coordinator, st *store.Store, d dadapter.D) RecoveryReport {
	t.Helper()
	loop := NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	c2, err := New(c.cfg, Deps{Store: st, Capability: c.deps.Capability, D: d, Clock: NewRealClock(), Loop: loop, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c2.RecoveryDone():
	case <-time.After(30 * time.Second):
		t.Fatal("recovery did not end")
	}
	return c2.Recovery()
}

// awaitState waits until the attempt's row is in state.
func awaitState(t *testing.T, st *store.Store, attemptID string, state words.State) store.Attempt {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := st.Attempt(attemptID)
		if err == nil && a.State == state {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s: %+v, %v; want %s", attemptID, a, err, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// setImmutable sets or clears a file's immutable attribute (FS_IMMUTABLE_FL,
// as chattr +i does): not even root may remove an immutable file.
func setImmutable(path string, on bool) error {
	const (
		getFlags  = 0x80086601 // FS_IOC_GETFLAGS
		setFlags  = 0x40086602 // FS_IOC_SETFLAGS
		immutable = 0x10       // FS_IMMUTABLE_FL
	)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var flags int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), getFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
		return e
	}
	if on {
		flags |= immutable
	} else {
		flags &^= immutable
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), setFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
		return e
	}
	return nil
}
