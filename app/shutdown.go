package app

import (
	"context"
	"errors"
)

// Server is the HTTP server's part in the contract's shutdown order. The
// server of issue 8 implements it and is passed as Options.Server; this
// build has none, so these steps have no request to wait for.
type Server interface {
	// SetStopping is step 1's server half, in the same turn as the
	// coordinator's barrier: new API requests get HTTP 503 ("The review
	// server is shutting down."), on a new connection or a kept-alive one,
	// until step 3 closes the listener (issue 19); admitted requests are
	// drained, not rejected.
	SetStopping()
	// BeginDrain is step 2: it returns a channel closed once the admitted
	// requests have ended or the drain limit (at most 14.5 s, below the
	// 15 s request timeout) has passed.
	BeginDrain() <-chan struct{}
	// AbortRequests is step 3's first half, before the write gate closes:
	// stop accepting connections, close the idle ones, abort the signals
	// of the remaining requests and destroy those still reading a body.
	AbortRequests()
	// RequestsEnded is step 3's last half, after the write gate closed:
	// a channel closed once every aborted request has returned (the
	// merge coordinator's work is awaited next, awaitMerges).
	RequestsEnded() <-chan struct{}
	// Close is step 6: await server closure, and the question and
	// suggestion coordinators' close.
	Close()
}

// Publisher is the task publisher's part (publishes and PR closes, #103
// and #111) in the shutdown order. This build publishes nothing to GitHub.
type Publisher interface {
	// Abort is called in step 1's turn: every publish and PR close in
	// progress is aborted, and later ones are refused.
	Abort()
	// Await is step 2a: the aborted publishes end, and their last records
	// land before the write gate closes.
	Await()
}

// Shutdown is the contract's shutdown order, steps 1 to 8, once startup
// has finished, not yet begun: Run waits for each in turn; the simulated
// world drives them from its loop. Every step runs: a second signal
// meanwhile skips nothing (see watchSignals), and there is no timer of the
// runner's own (decision 4). Its outcome is what closing the Store and
// releasing the lock reported.
func (a *App) Shutdown() *Steps {
	var errStore error
	return &Steps{steps: []step{
		always("1 close admission", a.closeAdmission),
		waits("2 drain", a.drainRequests),
		waits("2a publishes", a.awaitPublishes),
		waits("3 write gate", a.closeWriteGate),
		waits("3 request work", a.awaitRequests),
		waits("3 merges", a.awaitMerges),
		waits("4 jobs", a.stopJobs), // then 4, 5 and 5a: every job ended
		waits("6 server", a.awaitServer),
		waits("6 questions", a.closeAsk),
		waits("6 suggestions", a.closeSuggest),
		always("7 store", func() { errStore = a.closeStore() }),
		do("8 lock", func() error { return errors.Join(errStore, a.releaseLock()) }),
	}}
}

// closeAdmission is step 1: set stopping on the server, stop Ask's
// admission (questions.stopAdmission()) and make the coordinator reject
// admission, in one synchronous turn (a single event on the loop every
// coordinator shares, so no admission falls between them), before any
// active-work list is copied; new runner work then fails with
// runner.ErrShuttingDown.
// The publisher is aborted in this turn too (step 2a). Jobs run on until
// step 4, so that a request drained in step 2 still meets its job as it was.
func (a *App) closeAdmission() {
	a.log.Info("stopping")
	if err := a.runner.CloseAdmission(context.Background(), func() {
		if a.server != nil {
			a.server.SetStopping() // with the merge coordinator's closing flag
		}
		a.stopMerge()
		a.stopAsk()
		if a.opt.Publisher != nil {
			a.opt.Publisher.Abort()
		}
	}); err != nil {
		a.log.Error("shutdown: admission could not be closed", "err", err)
	}
}

// drainRequests is step 2: wait for the admitted HTTP requests up to the
// drain limit. The server still accepts connections meanwhile, to answer
// each new request 503 (step 1's rule) rather than refuse it unanswered;
// step 3 closes the listener. A process without a server (no listen
// address, or a --check run) has nothing to drain.
func (a *App) drainRequests() (*wait, error) {
	if a.server == nil {
		return nil, nil
	}
	return external(a.server.BeginDrain()), nil
}

// awaitPublishes is step 2a: await every publish and PR close aborted in
// step 1, at the end of the drain and before the write gate closes, so that
// a publish's last records land. A publish stopped this way is owed and the
// next start publishes it again. Nothing publishes in this build.
func (a *App) awaitPublishes() (*wait, error) {
	if a.opt.Publisher != nil {
		a.opt.Publisher.Await()
	}
	return nil, nil
}

// closeWriteGate is step 3: abort the requests left after the drain, then
// close the Store's write gate (from here every Store write fails unless
// it holds the shutdown capability, as the runner's settlement does).
// Request-owned work is awaited next: the server's requests
// (awaitRequests), then the merge coordinator's (awaitMerges).
func (a *App) closeWriteGate() (*wait, error) {
	if a.server != nil {
		a.server.AbortRequests()
	}
	a.store.CloseWriteGate()
	return nil, nil
}

// awaitRequests is step 3's "await request-owned work": every request the
// server aborted returns (a write that reaches the gate now answers 503).
func (a *App) awaitRequests() (*wait, error) {
	if a.server == nil {
		return nil, nil
	}
	return external(a.server.RequestsEnded()), nil
}

// stopJobs is step 4: for every pending and running attempt with an
// in-memory job, the first reason shutdown unless one is set, then D's
// cancel (running) or the preparation's abort (pending). The next step
// waits for the end of steps 4, 5 and 5a, which the coordinator reports
// together (runner.Coordinator.Drained): every stopped job settles (4),
// ends through the task-storage holder order — export, terminal write
// from its first reason, storage removal, slot freed (5) — and every plan
// run in progress is awaited (5a). There is no timer of F's own: D's
// forced-kill escalation bounds settlement (decision 4).
func (a *App) stopJobs() (*wait, error) {
	a.failpoints().Hook("app/before-stop-jobs")
	if err := a.runner.StopJobs(context.Background()); err != nil {
		a.log.Error("shutdown: jobs could not be stopped", "err", err)
		return nil, nil
	}
	return on(a.runner.Drained()), nil
}

// awaitServer is step 6's first part: await server closure. The question
// and suggestion coordinators' close follow (closeAsk, closeSuggest).
func (a *App) awaitServer() (*wait, error) {
	if a.server != nil {
		a.server.Close()
	}
	return nil, nil
}

// closeStore is step 7: the coordinator's loop stops (nothing is left to
// run on it), then the Store closes. It is also the first of the two steps
// a failed startup runs.
func (a *App) closeStore() error {
	if a.loop != nil {
		a.loop.Stop()
		a.loop = nil
	}
	if a.engine != nil { // every handle has settled: step 4 awaited them
		a.engine.Close()
		a.engine = nil
	}
	if a.store == nil {
		return nil
	}
	err := a.store.Close()
	a.store = nil
	return err
}

// releaseLock is step 8: release the single-runner lock (decision 1), on
// every exit path after it was taken, including a failed startup. The OS
// lock goes with the lock connection; the lock file stays.
func (a *App) releaseLock() error {
	if a.lock == nil {
		return nil
	}
	err := a.lock.Release()
	a.lock = nil
	return err
}
