package runner

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

func TestGoroutineLoopRunsEventsInOrder(t *testing.T) {
	l := NewGoroutineLoop()
	defer l.Stop()
	var got []int
	for i := 0; i < 100; i++ {
		l.Post(func() { got = append(got, i) })
	}
	var n int
	if err := l.Call(context.Background(), func() { n = len(got) }); err != nil {
		t.Fatal(err)
	}
	if n != 100 {
		t.Fatalf("Call ran before the posted events: %d", n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("event %d ran as %d", i, v)
		}
	}
	done := make(chan struct{})
	l.Go(func() {}, func() { close(done) })
	<-done
}

func TestGoroutineLoopStopDropsLatePosts(t *testing.T) {
	l := NewGoroutineLoop()
	l.Stop()
	l.Post(func() { t.Error("ran after Stop") })
	if err := l.Call(context.Background(), func() { t.Error("Call ran after Stop") }); !errors.Is(err, ErrStopped) {
		t.Fatalf("Call after Stop: %v, want ErrStopped", err)
	}
}

// TestGoroutineLoopFlood floods the production loop from many goroutines
// while its events post to themselves, far past any buffer: a Post from
// inside an event must never block, whatever the queue holds, and every
// event runs exactly once. Run it under -race.
//
// kills: mutant/loop-post-blocks
func TestGoroutineLoopFlood(t *testing.T) {
	l := NewGoroutineLoop()
	defer l.Stop()
	const posters, perPoster, chain = 16, 500, 20
	var ran atomic.Int64
	var selfPost func(depth int)
	selfPost = func(depth int) {
		ran.Add(1)
		if depth < chain {
			// Posts from inside the event, several at once, while the
			// queue is full of the other goroutines' events.
			l.Post(func() { selfPost(depth + 1) })
		}
	}
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perPoster; i++ {
				if i%50 == 0 {
					// Calls from outside mix with the posts.
					if err := l.Call(context.Background(), func() { ran.Add(1) }); err != nil {
						t.Error(err)
					}
					continue
				}
				l.Post(func() { selfPost(1) })
			}
		}()
	}
	flooded := make(chan struct{})
	go func() { wg.Wait(); close(flooded) }()
	select {
	case <-flooded:
	case <-time.After(30 * time.Second):
		t.Fatalf("the posters are still blocked after 30 s (%d events ran): a Post blocked", ran.Load())
	}
	want := int64(posters * (perPoster/50 + (perPoster-perPoster/50)*chain))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ran.Load() < want {
		// A Call is queued behind everything posted so far; when it
		// returns, the events before it have run.
		if err := l.Call(ctx, func() {}); err != nil {
			t.Fatalf("the flood did not drain (%d of %d events ran): %v", ran.Load(), want, err)
		}
	}
	if got := ran.Load(); got != want {
		t.Fatalf("%d events ran, want %d", got, want)
	}
}

// TestGoroutineLoopCallFromInsidePanics: a Call from inside an event would
// wait for itself; it is a programming error, caught at once.
func TestGoroutineLoopCallFromInsidePanics(t *testing.T) {
	l := NewGoroutineLoop()
	defer l.Stop()
	var recovered any
	if err := l.Call(context.Background(), func() {
		defer func() { recovered = recover() }()
		l.Call(context.Background(), func() {})
	}); err != nil {
		t.Fatal(err)
	}
	if recovered == nil {
		t.Fatal("Call from inside an event did not panic")
	}
}

// TestGoroutineLoopCallContext: a Call whose context ends before its event
// starts returns the context's error and its fn never runs; one that started
// is waited for.
func TestGoroutineLoopCallContext(t *testing.T) {
	l := NewGoroutineLoop()
	defer l.Stop()
	block := make(chan struct{})
	busy := make(chan struct{})
	l.Post(func() { close(busy); <-block }) // the loop is busy
	<-busy
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ranLate := make(chan struct{}, 1)
	go func() { done <- l.Call(ctx, func() { ranLate <- struct{}{} }) }()
	// Cancel only once the Call has queued its event: a cancel before
	// that is refused at the door and never reaches the abandoning.
	for queued(l) == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call with a cancelled context: %v", err)
	}
	close(block)
	if err := l.Call(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ranLate:
		t.Fatal("fn ran although its Call gave up first")
	default:
	}
}

// queued is how many events wait in l's queue.
func queued(l *GoroutineLoop) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// goD is a D whose callbacks arrive on goroutines of their own, as the real
// Docker adapter's do.
type goD struct {
	mu      sync.Mutex
	handles map[string]*goHandle
}

type goFS struct {
	dadapter.StorageSeal // a test double of D's own storage
	o                    dadapter.StorageOwner
}

func (f goFS) Owner() dadapter.StorageOwner { return f.o }
func (f goFS) MetadataBaseline() string     { return "b" }
func (f goFS) Base() string                 { return "base" }

type goHandle struct {
	mu      sync.Mutex
	fn      func(dadapter.Settlement)
	settled *dadapter.Settlement
}

func (h *goHandle) OnSettled(fn func(dadapter.Settlement)) {
	h.mu.Lock()
	s := h.settled
	h.fn = fn
	h.mu.Unlock()
	if s != nil {
		go fn(*s)
	}
}

func (h *goHandle) Cancel(r words.StopReason) {
	go h.settle(dadapter.Settlement{StopReason: r, ExitCode: 137})
}

func (h *goHandle) settle(s dadapter.Settlement) {
	h.mu.Lock()
	if h.settled != nil {
		h.mu.Unlock()
		return
	}
	h.settled = &s
	fn := h.fn
	h.mu.Unlock()
	if fn != nil {
		fn(s)
	}
}

func (d *goD) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	h := &goHandle{}
	d.mu.Lock()
	d.handles[in.AttemptID] = h
	d.mu.Unlock()
	return h, nil
}
func (d *goD) PrepareTaskFilesystems(ctx context.Context, o dadapter.StorageOwner, _ dadapter.Source, g func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	go done(goFS{o: o}, nil)
}
func (d *goD) RemoveTaskFilesystems(fs dadapter.TaskFilesystems, done func(error)) { go done(nil) }
func (d *goD) ExportTaskDiff(ctx context.Context, fs dadapter.TaskFilesystems, max int, done func(dadapter.ExportResult, error)) {
	go done(dadapter.ExportResult{Diff: []byte("diff")}, nil)
}
func (d *goD) CheckTaskTree(ctx context.Context, fs dadapter.TaskFilesystems, head string, _ []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	go done(dadapter.TaskTree{Head: head}, nil)
}
func (d *goD) InspectTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	go done(dadapter.ChangeManifest{}, nil)
}
func (d *goD) CommitTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.Bundle, error)) {
	go done(dadapter.Bundle{Commit: "c1"}, nil)
}
func (d *goD) ReleaseTaskCommit(fs dadapter.TaskFilesystems, done func(error)) { go done(nil) }
func (d *goD) CreateTaskClone(ctx context.Context, parent string, _ dadapter.Source, g func(dadapter.ProcessGroup), done func(dadapter.Clone, error)) {
	go done(dadapter.Clone{Dir: parent}, nil)
}
func (d *goD) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{}, errors.New("not here"))
}

// TestProductionWiringUnderRace runs the coordinator on the production loop
// and clock, with D answering from other goroutines and status reads racing
// the loop, so that -race checks the one-owner rule.
func TestProductionWiringUnderRace(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, _ := productionCoordinator(t, 4, d)
	c.Open(context.Background())
	var keys []string
	for _, task := range []string{"a", "b", "c", "d"} {
		id := store.Identity{RepositoryID: "r", TaskID: task, PlanID: "p"}
		if err := st.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"})
		}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, id.Key())
	}
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := words.KindReview
			if i%2 == 1 {
				kind = words.KindExecute
			}
			attemptID, err := c.Admit(context.Background(), AdmitRequest{PlanKey: key, Kind: kind})
			if err != nil {
				t.Error(err)
				return
			}
			for {
				s, err := c.Status(key) // races the loop: reads only the snapshot
				if err != nil {
					t.Error(err)
					return
				}
				if len(s.Attempts) == 1 && s.Attempts[0].State == words.Running {
					break
				}
				time.Sleep(time.Millisecond)
			}
			task, _ := st.Task(key)
			if i < 2 {
				c.CancelAttempt(context.Background(), ActionRequest{PlanKey: key, AttemptID: attemptID, ExpectedStateVersion: task.StateVersion, ActionID: ids.Random{}.UUID()})
			} else {
				d.mu.Lock()
				h := d.handles[attemptID]
				d.mu.Unlock()
				go h.settle(dadapter.Settlement{Output: []byte(`{"ok":true}`)})
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for c.SlotsUsed() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if c.SlotsUsed() != 0 {
		t.Fatalf("%d slots still held", c.SlotsUsed())
	}
	want := []words.State{words.Cancelled, words.Cancelled, words.Completed, words.Completed}
	for i, key := range keys {
		as, _ := st.Attempts(key)
		if len(as) != 1 || as[0].State != want[i] {
			t.Errorf("%s: %+v, want %s", key, as, want[i])
		}
	}
}

// productionCoordinator wires a coordinator as the application does: the
// goroutine loop, the real clock and a Store on a file, with d answering.
// The loop stops and the Store closes when the test ends.
// runningAttempt opens a production coordinator over d with one slot,
// creates a task and admits an attempt of kind, and waits until it runs.
func runningAttempt(t *testing.T, d dadapter.D, kind string) (c *Coordinator, st *store.Store, key, attemptID string) {
	t.Helper()
	c, st, _ = productionCoordinator(t, 1, d)
	if err := c.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	key = createTask(t, st)
	attemptID, err := c.Admit(t.Context(), AdmitRequest{PlanKey: key, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, st, attemptID, words.Running)
	return c, st, key, attemptID
}

func productionCoordinator(t *testing.T, slots int, d dadapter.D) (*Coordinator, *store.Store, *GoroutineLoop) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	c, err := New(Config{Root: dir, Owner: ids.Random{}.Token(), Slots: slots},
		Deps{Store: st, Capability: st.ShutdownCapability(), D: d, Clock: NewRealClock(), Loop: loop, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, loop
}
