package app

import "time"

// Steps is one run of startup or of shutdown: the contract's steps in
// their order, each of which may leave something to wait for before the
// next one runs (recovery's end, Ask's startup, the drain, the jobs'
// settlement). Written once, it is driven two ways. Production waits for
// each on the calling goroutine (Wait). The simulated world calls Next
// whenever its loop falls idle, which is when production's goroutine would
// wake, so a scenario runs the same steps in the same order on virtual
// time, and can act (settle a container, answer a request) while a step
// waits.
type Steps struct {
	steps   []step
	next    int
	waiting *wait
	// fail ends a run whose step failed: the rest are skipped and fail's
	// result is the run's (startup's abandon: steps 7 and 8).
	fail    func(error) error
	running bool // Next is on the stack: a nested call does nothing
	done    bool
	err     error
}

// A step is one named step of the run: run returns what the next step
// waits for (nil: nothing), or an error that ends the run.
type step struct {
	name string
	run  func() (*wait, error)
}

// wait is what the next step waits for: done closing, or limit (nil:
// none), a timer on the process's clock, whichever comes first.
type wait struct {
	done, limit <-chan struct{}
	stop        func() // stops limit's timer; nil when there is none
	// external: done is closed by a goroutine of its own (an HTTP
	// handler's), not by the loop: Next does not pass it, Pass does.
	external bool
}

// ended reports, without blocking, whether the wait is over, and stops
// the limit's timer once it is.
func (w *wait) ended() bool {
	select {
	case <-w.done:
	case <-w.limit:
	default:
		return false
	}
	if w.stop != nil {
		w.stop()
	}
	return true
}

// block waits until done closes or limit passes, or, with a positive
// bound, at most that long in real time; it reports whether the wait ended.
func (w *wait) block(bound time.Duration) bool {
	var timeout <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.done:
	case <-w.limit:
	case <-timeout:
		return false
	}
	return true
}

// on is a wait for done alone, closed by the loop's work.
func on(done <-chan struct{}) *wait { return &wait{done: done} }

// external is a wait for done, closed by a goroutine of its own; none if
// done is closed already (nothing was left to wait for when the step ran).
func external(done <-chan struct{}) *wait {
	select {
	case <-done:
		return nil
	default:
		return &wait{done: done, external: true}
	}
}

// do is a step that waits for nothing.
func do(name string, fn func() error) step {
	return step{name, func() (*wait, error) { return nil, fn() }}
}

// always is a step that cannot fail.
func always(name string, fn func()) step {
	return step{name, func() (*wait, error) { fn(); return nil, nil }}
}

// waits is a step that leaves something to wait for.
func waits(name string, fn func() (*wait, error)) step { return step{name, fn} }

// Next runs every step it can without blocking: each whose predecessor's
// wait has ended, unless that wait is external. It reports whether the
// run is over.
//
// The simulated world calls it whenever its loop falls idle. An external
// wait (the drain, closed by the last HTTP handler to return) it passes
// only when its script says so (Pass): when a handler's goroutine closes
// it is the scheduler's choice, and the next step must run at a point of
// the script's, not of the scheduler's.
func (s *Steps) Next() bool { return s.run(false) }

// Pass waits up to bound, in real time, for what the run waits for now,
// external or not, then runs on as Next does. It reports whether the wait
// ended within bound (true when nothing was waited for).
func (s *Steps) Pass(bound time.Duration) bool {
	if s.waiting != nil && !s.waiting.block(bound) {
		return false
	}
	s.run(true)
	return true
}

func (s *Steps) run(passExternal bool) bool {
	if s.running || s.done {
		return s.done
	}
	s.running = true
	defer func() { s.running = false }()
	for !s.done {
		if s.waiting != nil {
			if (s.waiting.external && !passExternal) || !s.waiting.ended() {
				return false
			}
			s.waiting, passExternal = nil, false
		}
		if s.next == len(s.steps) {
			s.done = true
			break
		}
		st := s.steps[s.next]
		s.next++
		w, err := st.run()
		if err != nil {
			if s.fail != nil {
				err = s.fail(err)
			}
			s.done, s.err = true, err
			break
		}
		s.waiting = w
	}
	return true
}

// Passed reports whether the step named name has run (and, if it left
// something to wait for, that wait has been passed).
func (s *Steps) Passed(name string) bool {
	for i := 0; i < s.next; i++ {
		if s.steps[i].name == name {
			return i < s.next-1 || s.waiting == nil
		}
	}
	return false
}

// Done reports whether the run is over; Err is then its outcome.
func (s *Steps) Done() bool { return s.done }

// Err is the outcome of a run that is over: the failed step's error, as
// fail returned it, or nil.
func (s *Steps) Err() error { return s.err }

// Wait runs the steps to the end on the calling goroutine, blocking on
// each wait: production's drive.
func (s *Steps) Wait() error {
	for !s.run(true) {
		s.waiting.block(0)
	}
	return s.err
}

// within is a wait for done, or limit on the process's clock: a step
// that must not hold startup or shutdown back for ever.
func (a *App) within(done <-chan struct{}, limit time.Duration) *wait {
	passed := make(chan struct{})
	t := a.clock.AfterFunc(limit, func() { close(passed) })
	return &wait{done: done, limit: passed, stop: func() { t.Stop() }}
}
