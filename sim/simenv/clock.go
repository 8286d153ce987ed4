package simenv

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/codeboost/codeboost/runner"
)

// Epoch is where every world's clock starts.
var Epoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// Clock is virtual time. Timers fire only inside Advance, in order of due
// time and then of creation, each followed by a drain of the loop.
// benbjohnson/clock's Mock is unfit for replay: it sleeps 1 ms of real time
// after each Add and runs AfterFunc callbacks on new goroutines.
type Clock struct {
	now    time.Time
	seq    int
	timers []*timer
	loop   *Loop
}

type timer struct {
	c   *Clock
	at  time.Time
	seq int
	fn  func()
}

// NewClock returns a clock at Epoch whose timers drain loop after firing.
func NewClock(loop *Loop) *Clock { return &Clock{now: Epoch, loop: loop} }

func (c *Clock) Now() time.Time { return c.now }

func (c *Clock) AfterFunc(d time.Duration, fn func()) runner.Timer {
	c.seq++
	t := &timer{c: c, at: c.now.Add(d), seq: c.seq, fn: fn}
	c.timers = append(c.timers, t)
	return t
}

func (t *timer) Stop() bool {
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// DropTimers forgets every pending timer: they were the dead process's.
func (c *Clock) DropTimers() { c.timers = nil }

// Advance moves time forward by d, firing every timer that falls due.
func (c *Clock) Advance(d time.Duration) {
	target := c.now.Add(d)
	for {
		sort.SliceStable(c.timers, func(i, j int) bool {
			if !c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].at.Before(c.timers[j].at)
			}
			return c.timers[i].seq < c.timers[j].seq
		})
		if len(c.timers) == 0 || c.timers[0].at.After(target) {
			break
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		if t.at.After(c.now) {
			c.now = t.at
		}
		t.fn()
		c.loop.Drain()
	}
	c.now = target
}

// Loop is the simulator's runner.Loop: a FIFO drained by the scenario.
type Loop struct {
	// mu guards queue and held: while held, handler goroutines of a
	// scenario queue Calls beside the scenario's own goroutine (Hold).
	mu       sync.Mutex
	queued   sync.Cond // signalled on every append while held
	queue    []func()
	held     bool
	draining bool

	interleaving int // > 0 while a scenario hook runs inside an event

	// Off-loop work: working is the Go item whose work runs now (nil
	// between), answers the answers HoldAnswer kept back, in order.
	working *goItem
	answers []func()

	// The crash-point sweep: the process dies right before event number
	// CrashAt (1-based; 0: never), or when an event panics with Crash.
	CrashAt int
	events  int
	crashed bool

	// Idle is the process's main goroutine (startup's and shutdown's
	// steps, package sim's World.proceed): it runs whenever the queue is empty, as
	// production's wakes when what it waits for has happened. It reports
	// whether it ran a step.
	Idle func() bool
}

// Crash is the panic value that kills the simulated process mid-event (a
// Store write that never commits).
type Crash struct{}

// Crashed reports whether the process died; nothing runs after that.
func (l *Loop) Crashed() bool { return l.crashed }

// Events counts the events run so far.
func (l *Loop) Events() int { return l.events }

func (l *Loop) Post(fn func()) {
	if !l.crashed {
		l.push(fn)
	}
}

func (l *Loop) push(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(l.queue, fn)
	if l.queued.L != nil {
		l.queued.Broadcast()
	}
}

func (l *Loop) pop() (func(), bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil, false
	}
	fn := l.queue[0]
	l.queue = l.queue[1:]
	return fn, true
}

// Hold stands for a production loop that is busy while HTTP handlers call
// it: until Release, a Call made from another goroutine queues its event and
// waits instead of draining. A scenario starts one handler goroutine per
// call and waits (WaitQueued) until each has queued before starting the
// next, so the queue's order is the script's; Release then delivers them
// back to back, with nothing between them (two admissions in the same tick).
func (l *Loop) Hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = true
	l.queued.L = &l.mu
}

// WaitQueued blocks until the queue holds n events.
func (l *Loop) WaitQueued(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.queue) < n {
		l.queued.Wait()
	}
}

// Queued counts the events waiting in the queue.
func (l *Loop) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// Release ends Hold and drains, delivering the held Calls in order.
func (l *Loop) Release() {
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
	l.Drain()
}

// Call runs fn after everything already queued, then drains, as the
// production loop would. Called from inside an event it panics, as the
// production loop does (the loop would wait for itself), unless a scenario
// hook runs it through Interleave.
func (l *Loop) Call(ctx context.Context, fn func()) error {
	if l.crashed {
		return runner.ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held {
		ran := make(chan struct{})
		l.push(func() {
			defer close(ran)
			fn()
		})
		<-ran
		return nil
	}
	if l.draining {
		if l.interleaving == 0 {
			panic("sim: Loop.Call from inside an event: the production loop would wait for itself (post instead, or run a scenario hook through Interleave)")
		}
		fn()
		return nil
	}
	l.push(fn)
	l.Drain()
	return nil
}

// Interleave runs hook, a scenario command reached between two statements
// of one event (a runner/before-… failpoint hook), and lets a Call inside it
// run at once, in the middle of that event. It is the one exception to the
// re-entry rule: production delivers a user action only between events, so
// every scenario that uses it says in its header which production
// interleaving the hook stands for, or that none exists and the guard it
// exercises is defence in depth.
func (l *Loop) Interleave(hook func()) {
	l.interleaving++
	defer func() { l.interleaving-- }()
	hook()
}

// Go queues work as an event of its own, and work posts then when it has
// run: off-loop work is a separate step, as on the production loop, so
// the events queued before it run first (another attempt's terminal
// write between an export's save and its own, say: F-316). Events still
// run one at a time, in queue order: the script, not the scheduler,
// decides the order; HoldAnswer is how it keeps one answer back.
func (l *Loop) Go(work func(), then func()) {
	if l.crashed {
		return
	}
	l.Post(func() {
		item := &goItem{}
		l.working = item
		defer func() { l.working = nil }()
		work()
		if item.held {
			l.answers = append(l.answers, then)
			return
		}
		l.Post(then)
	})
}

// goItem is one Go call's state while its work runs.
type goItem struct{ held bool }

// HoldAnswer keeps the answer of the off-loop work that runs now (a
// scenario hook reached inside it) out of the queue until
// ReleaseAnswers: on the production loop a goroutine may finish its work
// and be slow to post, and everything else runs meanwhile (F-316: a saved
// partial output whose terminal write waits).
func (l *Loop) HoldAnswer() error {
	if l.working == nil {
		return errors.New("no off-loop work is running: hold-answer is for a hook inside one")
	}
	l.working.held = true
	return nil
}

// ReleaseAnswers queues the held answers, in the order their work ran,
// and drains; it returns how many there were.
func (l *Loop) ReleaseAnswers() int {
	answers := l.answers
	l.answers = nil
	for _, then := range answers {
		l.Post(then)
	}
	l.Drain()
	return len(answers)
}

// Drain runs queued events until none is left.
func (l *Loop) Drain() {
	if l.draining {
		return
	}
	l.draining = true
	defer func() { l.draining = false }()
	for !l.crashed {
		fn, ok := l.pop()
		if !ok && l.idle() {
			continue
		}
		if !ok {
			return
		}
		l.events++
		if l.events == l.CrashAt {
			l.die()
			return
		}
		l.run(fn)
	}
}

// run runs one event; a Crash panic kills the process there.
func (l *Loop) run(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(Crash); !ok {
				panic(r)
			}
			l.die()
		}
	}()
	fn()
}

// Die is the process killed: nothing queued or held back runs, and
// nothing posted from now on is kept, until Revive.
func (l *Loop) Die() { l.die() }

func (l *Loop) die() {
	l.crashed, l.answers = true, nil
	l.mu.Lock()
	l.queue = nil
	l.mu.Unlock()
}

// idle runs Idle, the process's main goroutine, outside any event (it may
// Call the loop, as production's does), and reports whether it queued or
// ran anything, so that the drain goes on.
func (l *Loop) idle() bool {
	if l.Idle == nil || l.crashed {
		return false
	}
	l.draining = false
	defer func() { l.draining = true }()
	return l.Idle() || l.Queued() > 0
}

// Stop is shutdown step 7's end of the loop: the process is over and
// nothing runs on it until a new process Revives it.
func (l *Loop) Stop() { l.die() }

// Revive is the new process's loop: the same FIFO, empty, counting anew.
func (l *Loop) Revive() {
	l.mu.Lock()
	l.queue = nil
	l.mu.Unlock()
	l.crashed, l.events, l.CrashAt = false, 0, 0
}
