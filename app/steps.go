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

// A step runs and returns what the next step waits for (nil: nothing),
// or an error that ends the run.
type step func() (*wait, error)

// wait is what the next step waits for: done closing, or limit (nil:
// none), a timer on the process's clock, whichever comes first.
type wait struct {
	done, limit <-chan struct{}
	stop        func() // stops limit's timer; nil when there is none
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

// block waits until done closes or limit passes.
func (w *wait) block() {
	select {
	case <-w.done:
	case <-w.limit:
	}
}

// on is a wait for done alone.
func on(done <-chan struct{}) *wait { return &wait{done: done} }

// do is a step that waits for nothing.
func do(fn func() error) step {
	return func() (*wait, error) { return nil, fn() }
}

// always is a step that cannot fail.
func always(fn func()) step {
	return func() (*wait, error) { fn(); return nil, nil }
}

// Next runs every step it can: each whose predecessor's wait has ended. It
// reports whether the run is over.
func (s *Steps) Next() bool {
	if s.running || s.done {
		return s.done
	}
	s.running = true
	defer func() { s.running = false }()
	for !s.done {
		if s.waiting != nil {
			if !s.waiting.ended() {
				return false
			}
			s.waiting = nil
		}
		if s.next == len(s.steps) {
			s.done = true
			break
		}
		st := s.steps[s.next]
		s.next++
		w, err := st()
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

// Done reports whether the run is over; Err is then its outcome.
func (s *Steps) Done() bool { return s.done }

// Err is the outcome of a run that is over: the failed step's error, as
// fail returned it, or nil.
func (s *Steps) Err() error { return s.err }

// Wait runs the steps to the end on the calling goroutine, blocking on
// each wait: production's drive.
func (s *Steps) Wait() error {
	for !s.Next() {
		s.waiting.block()
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
