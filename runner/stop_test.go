package runner

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// hintD is goD whose handles, when asked to stop, note whether the stop
// hint of their attempt (stop.go, stopHintName) exists at that moment.
type hintD struct {
	goD
	dir func(attemptID string) string

	mu          sync.Mutex
	hintAtStop  map[string]bool // attempt ID → the hint existed when Cancel came
	cancelCalls int
}

type hintHandle struct {
	*goHandle
	d         *hintD
	attemptID string
}

func (h hintHandle) Cancel(r words.StopReason) {
	_, err := os.Lstat(filepath.Join(h.d.dir(h.attemptID), stopHintName))
	h.d.mu.Lock()
	h.d.hintAtStop[h.attemptID] = err == nil
	h.d.cancelCalls++
	h.d.mu.Unlock()
	h.goHandle.Cancel(r)
}

func (d *hintD) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	h, err := d.goD.Start(in)
	if err != nil {
		return nil, err
	}
	return hintHandle{goHandle: h.(*goHandle), d: d, attemptID: in.AttemptID}, nil
}

// TestUnsavedStopLeavesItsHintBeforeDIsAsked: when a stop's first-reason
// write fails, the stop-requested file is in the attempt directory before
// handle.cancel is called. Rule 1 allows exactly one way to lose a first
// reason: "a crash after a failed reason write and before a successful
// terminal write. Startup recovery then records failed "Interrupted" and
// adds "a stop may have been requested" to the diagnostic." The file is how
// recovery knows; were D asked first, a crash between the two would leave
// an attempt D had stopped because of that stop, and recovery would say
// only "Interrupted". (A scenario cannot crash between two statements of
// one event, so this test looks at the moment D is asked.)
//
// kills: mutant/stop-hint-after-cancel
func TestUnsavedStopLeavesItsHintBeforeDIsAsked(t *testing.T) {
	dir := t.TempDir()
	fps := failpoints.New()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: time.Now, IDs: ids.Random{}, Failpoints: fps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	d := &hintD{goD: goD{handles: map[string]*goHandle{}}, hintAtStop: map[string]bool{}}
	c, err := New(Config{Root: dir, Owner: ids.Random{}.Token(), Slots: 1},
		Deps{Store: st, Capability: st.ShutdownCapability(), D: d, Clock: NewRealClock(), Loop: loop, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	d.dir = c.attemptDir
	c.Open(context.Background())

	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	key := id.Key()
	if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
		t.Fatal(err)
	}
	attemptID, err := c.Admit(context.Background(), AdmitRequest{PlanKey: key, Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := st.Attempt(attemptID)
		if err != nil {
			t.Fatal(err)
		}
		if a.State == words.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt is still %s", a.State)
		}
		time.Sleep(time.Millisecond)
	}

	if err := fps.Enable("store/first-reason-write", "1*return"); err != nil {
		t.Fatal(err)
	}
	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.CancelAttempt(context.Background(), ActionRequest{PlanKey: key, AttemptID: attemptID,
		ExpectedStateVersion: task.StateVersion, ActionID: ids.Random{}.UUID()})
	if err != nil || resp.Outcome != "stopping" {
		t.Fatalf("cancel: %+v, %v; want outcome stopping", resp, err)
	}
	d.mu.Lock()
	calls, hint := d.cancelCalls, d.hintAtStop[attemptID]
	d.mu.Unlock()
	if calls != 1 {
		t.Fatalf("D was asked to stop %d times, want 1", calls)
	}
	if !hint {
		t.Errorf("D was asked to stop before the stop hint was left: a crash right after that call would lose %q", "a stop may have been requested")
	}

	// The handle settles on its own goroutine; let the attempt end before
	// the Store closes.
	for c.SlotsUsed() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if c.SlotsUsed() != 0 {
		t.Fatalf("%d slots still held", c.SlotsUsed())
	}
}
