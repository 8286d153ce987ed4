package testscript

import (
	"context"
	"time"

	gts "github.com/rogpeppe/go-internal/testscript"
)

// Shutdown, in the contract's steps: the server's (1 to 3, over the review
// server and the coordinators it serves) and the runner's jobs (4).

func init() {
	register(
		Command{Name: "shutdown", Kind: Action, Usage: "shutdown [server|await-gate|await-server]",
			Summary: "without an argument: the process is asked to stop (SIGTERM) and runs serve's shutdown, package app's steps 1 to 8 in production's order (admission closed, the write gate closed, every job stopped; the steps after 4 wait for the jobs to settle and go on once the loop falls idle; after step 8 the process has exited). server: steps 1 and 2 over the review server (stopping set, Ask's and the merge coordinator's admission stopped and the runner's admission closed in one turn, then the drain starts, up to 14.5 s on the virtual clock); await-gate: waits until step 2 has ended and step 3 has aborted the remaining requests, destroyed those reading a body and closed the write gate; await-server: waits for all of that and for step 3's request work (after an advance past the drain limit, await-gate or await-server must come next)",
			Example: "shutdown", Run: cmdShutdown},
		Command{Name: "drained", Kind: Assertion, Usage: "[!] drained",
			Summary: "asserts whether the runner's shutdown has begun and every job has ended (markers may remain)",
			Example: "! drained", Run: cmdDrained},
		Command{Name: "http-drained", Kind: Assertion, Usage: "[!] http-drained",
			Summary: "asserts whether the server's drain (step 2) has ended: no admitted request left, or the drain limit passed",
			Example: "! http-drained", Run: cmdHTTPDrained},
	)
}

func cmdShutdown(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) == 0 {
		if err := w.Shutdown(); err != nil {
			ts.Fatalf("%v", err)
		}
		return
	}
	if len(a.pos) != 1 {
		ts.Fatalf("usage: shutdown [server|await-gate|await-server]")
	}
	switch a.pos[0] {
	case "server":
		srv := s.web(ts)
		// Step 1, in one turn: the server's stopping flag and the
		// coordinator's barrier.
		srv.SetStopping() // with the merge coordinator's closing flag
		w.Ask.StopAdmission()
		w.Loop.Drain() // the events the stops posted (the merge coordinator's idle check)
		if err := w.Runner.CloseAdmission(context.Background()); err != nil {
			ts.Fatalf("%v", err)
		}
		drained := srv.BeginDrain() // step 2
		s.http.drained = drained
		stopped, gated := make(chan struct{}), make(chan struct{})
		s.http.stopped, s.http.gated = stopped, gated
		go func() {
			defer close(stopped)
			<-drained
			srv.AbortRequests() // step 3
			w.Store.CloseWriteGate()
			close(gated)
			srv.AwaitRequestWork()
		}()
	case "await-gate", "await-server":
		if s.http.stopped == nil {
			ts.Fatalf("shutdown %s before shutdown server", a.pos[0])
		}
		c := s.http.stopped
		if a.pos[0] == "await-gate" {
			c = s.http.gated
		}
		select {
		case <-c:
		case <-time.After(hangLimit):
			s.fatal(ts, "the server's steps 2 and 3 did not end (is a request still waiting for its body before the drain limit?)")
		}
	default:
		ts.Fatalf("usage: shutdown [server|await-gate|await-server]")
	}
}

func cmdDrained(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if got := isClosed(s.world(ts).Runner.Drained()); got == neg {
		s.fatal(ts, "drained: %v, want %v", got, !neg)
	}
}

func cmdHTTPDrained(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if s.http.drained == nil {
		ts.Fatalf("http-drained before shutdown server")
	}
	if got := isClosed(s.http.drained); got == neg {
		s.fatal(ts, "the drain has ended: %v, want %v", got, !neg)
	}
}
