package sim

import (
	"sort"
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
	queue    []func()
	draining bool

	// The crash-point sweep: the process dies right before event number
	// CrashAt (1-based; 0: never), or when an event panics with Crash.
	CrashAt int
	events  int
	crashed bool
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
		l.queue = append(l.queue, fn)
	}
}

// Call runs fn after everything already queued, then drains. Called from
// inside an event (a scenario hook between two statements), it runs fn at
// once: that is the interleaving the hook exists to express.
func (l *Loop) Call(fn func()) {
	if l.crashed {
		return
	}
	if l.draining {
		fn()
		return
	}
	l.queue = append(l.queue, fn)
	l.Drain()
}

// Go runs work at once and posts then: the script, not the scheduler,
// decides the order.
func (l *Loop) Go(work func(), then func()) {
	if l.crashed {
		return
	}
	work()
	l.Post(then)
}

// Drain runs queued events until none is left.
func (l *Loop) Drain() {
	if l.draining {
		return
	}
	l.draining = true
	defer func() { l.draining = false }()
	for len(l.queue) > 0 && !l.crashed {
		fn := l.queue[0]
		l.queue = l.queue[1:]
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

func (l *Loop) die() {
	l.crashed = true
	l.queue = nil
}

// Revive is the new process's loop: the same FIFO, empty, counting anew.
func (l *Loop) Revive() {
	l.crashed, l.queue, l.events, l.CrashAt = false, nil, 0, 0
}
