package runner

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Loop runs the coordinator's events one at a time. All coordinator state
// belongs to the goroutine (or, in the simulator, the scenario) that runs
// them; nothing else touches it.
type Loop interface {
	// Post queues fn to run on the loop. Safe from any goroutine.
	Post(fn func())
	// Call runs fn on the loop and returns after it ran.
	Call(fn func())
	// Go runs work off the loop (I/O that takes time) and then posts then.
	// The simulator runs work at once, so its order is the script's.
	Go(work func(), then func())
}

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
type GoroutineLoop struct {
	events chan func()
	done   chan struct{}
}

// NewGoroutineLoop starts the loop goroutine; Stop ends it.
func NewGoroutineLoop() *GoroutineLoop {
	l := &GoroutineLoop{events: make(chan func(), 256), done: make(chan struct{})}
	go func() {
		for {
			select {
			case fn := <-l.events:
				select {
				case <-l.done: // stopped: nothing runs after Stop
					return
				default:
					fn()
				}
			case <-l.done:
				return
			}
		}
	}()
	return l
}

// Post queues fn; after Stop it is dropped, so a late callback cannot block
// forever.
func (l *GoroutineLoop) Post(fn func()) {
	select {
	case <-l.done:
		return
	default:
	}
	select {
	case l.events <- fn:
	case <-l.done:
	}
}

// Call must not be used from the loop goroutine itself.
func (l *GoroutineLoop) Call(fn func()) {
	ran := make(chan struct{})
	l.Post(func() { fn(); close(ran) })
	select {
	case <-ran:
	case <-l.done:
	}
}

func (l *GoroutineLoop) Go(work func(), then func()) {
	go func() { work(); l.Post(then) }()
}

// Stop ends the loop goroutine.
func (l *GoroutineLoop) Stop() { close(l.done) }
