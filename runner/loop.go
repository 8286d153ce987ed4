package runner

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Loop runs the coordinator's events one at a time. All coordinator state
// belongs to the goroutine (or, in the simulator, the scenario) that runs
// them; nothing else touches it.
//
// Two rules keep every implementation honest, so that no scenario can pass on
// an interleaving production cannot produce: Post never blocks, from any
// goroutine, the loop's own included; and Call from inside an event is a
// programming error that panics in every implementation.
type Loop interface {
	// Post queues fn to run on the loop after the events already queued.
	// It never blocks. After Stop it drops fn.
	Post(fn func())
	// Call runs fn on the loop and returns once it ran. It returns
	// ErrStopped if the loop stopped first, or ctx's error if ctx ended
	// before fn started (fn then never runs). Calling it from inside an
	// event panics: the loop would wait for itself.
	Call(ctx context.Context, fn func()) error
	// Go runs work off the loop (I/O that takes time) and then posts then.
	// The simulator runs work at once, so its order is the script's.
	Go(work func(), then func())
}

// ErrStopped is Call's answer once the loop has stopped: fn did not run.
var ErrStopped = errors.New("runner: the coordinator's loop has stopped")

// Clock is the runner's narrow view of time: now, and a timer whose callback
// the clock implementation delivers. The runner posts every callback to its
// loop, so a timer is just another event.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, fn func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface{ Stop() bool }

// RealClock is the production Clock, backed by benbjohnson/clock.
type RealClock struct{ c clock.Clock }

// NewRealClock returns wall-clock time.
func NewRealClock() RealClock { return RealClock{c: clock.New()} }

func (r RealClock) Now() time.Time { return r.c.Now() }

func (r RealClock) AfterFunc(d time.Duration, fn func()) Timer { return r.c.AfterFunc(d, fn) }

// GoroutineLoop is the production Loop: one goroutine owns the coordinator.
//
// Its queue is an unbounded FIFO rather than a buffered channel. A bounded
// queue would make Post block when full, and a Post from inside an event (a
// plan run admitting its next item, a callback that posts) would then wait
// for the very goroutine that is blocked in it. Every event in the queue is
// owed to something already bounded (one settlement per job, one timer per
// deadline, one Call per waiting caller), so the queue needs no bound of its
// own. One FIFO for every poster also gives the order the simulator's loop
// gives: an event posted from inside an event runs after those queued before
// it.
type GoroutineLoop struct {
	mu     sync.Mutex
	queue  []func() // guarded by mu
	wake   chan struct{}
	done   chan struct{} // closed by Stop
	stop   sync.Once
	loopID atomic.Uint64 // the loop goroutine's ID, for Call's re-entry check
}

// NewGoroutineLoop starts the loop goroutine; Stop ends it.
func NewGoroutineLoop() *GoroutineLoop {
	l := &GoroutineLoop{wake: make(chan struct{}, 1), done: make(chan struct{})}
	started := make(chan struct{})
	go l.run(started)
	<-started
	return l
}

func (l *GoroutineLoop) run(started chan<- struct{}) {
	l.loopID.Store(goroutineID())
	close(started)
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
		for {
			l.mu.Lock()
			if len(l.queue) == 0 {
				l.mu.Unlock()
				break
			}
			fn := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.mu.Unlock()
			select {
			case <-l.done: // stopped: nothing runs after Stop
				return
			default:
			}
			fn()
		}
	}
}

// Post queues fn and returns at once.
func (l *GoroutineLoop) Post(fn func()) { l.post(fn) }

func (l *GoroutineLoop) post(fn func()) bool {
	select {
	case <-l.done:
		return false
	default:
	}
	l.mu.Lock()
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
	return true
}

// Call runs fn on the loop goroutine and waits for it.
func (l *GoroutineLoop) Call(ctx context.Context, fn func()) error {
	if l.OnLoop() {
		panic("runner: Loop.Call from inside an event: the loop would wait for itself (post instead)")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	const queued, running, abandoned = 0, 1, 2
	var state atomic.Int32
	ran := make(chan struct{})
	if !l.post(func() {
		if !state.CompareAndSwap(queued, running) {
			return // the caller gave up before fn started
		}
		defer close(ran)
		fn()
	}) {
		return ErrStopped
	}
	giveUp := func(err error) error {
		if state.CompareAndSwap(queued, abandoned) {
			return err
		}
		<-ran // fn is running: its results are the caller's, so wait for them
		return nil
	}
	select {
	case <-ran:
		return nil
	case <-ctx.Done():
		return giveUp(ctx.Err())
	case <-l.done:
		return giveUp(ErrStopped)
	}
}

func (l *GoroutineLoop) Go(work func(), then func()) {
	go func() { work(); l.Post(then) }()
}

// Stop ends the loop goroutine after the event it is running, if any.
// Events still queued never run.
func (l *GoroutineLoop) Stop() { l.stop.Do(func() { close(l.done) }) }

// OnLoop reports whether the caller runs on the loop goroutine.
func (l *GoroutineLoop) OnLoop() bool { return goroutineID() == l.loopID.Load() }

// goroutineID parses the current goroutine's ID from its stack header, as
// golang.org/x/net/http2's curGoroutineID does for the same kind of
// ownership check. Only Call pays for it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("runner: cannot read the goroutine ID: " + err.Error())
	}
	return id
}
