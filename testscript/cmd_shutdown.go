package testscript

import (
	"github.com/codeboost/codeboost/web"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Shutdown, in the contract's steps: the server's (1 to 3, over the review
// server and the coordinators it serves) and the runner's jobs (4).

func init() {
	register(
		Command{Name: "shutdown", Kind: Action, Usage: "shutdown [server|await-gate|await-server]",
			Summary: "without an argument, or with server (which first builds the process's review server if the script has not): the process is asked to stop (SIGTERM) and runs serve's shutdown, package app's steps 1 to 8 in production's order: step 1 in one turn (the server's stopping flag, Ask's and the merge coordinator's admission stopped, the runner's admission closed), then step 2's drain, up to 14.5 s on the virtual clock; the steps after a wait on the loop's work (the jobs settling, questions closing) go on once the loop falls idle, and after step 8 the process has exited. What an HTTP handler's goroutine ends is passed only at the script's word: await-gate waits (in real time) until step 2's drain has ended and step 3 has aborted the remaining requests, destroyed those reading a body and closed the write gate; await-server until the aborted requests have returned and the merges in flight ended too (after an advance past the drain limit, await-gate or await-server must come next)",
			Example: "shutdown server", Run: cmdShutdown},
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
	if len(a.pos) > 1 {
		ts.Fatalf("usage: shutdown [server|await-gate|await-server]")
	}
	step := ""
	if len(a.pos) == 1 {
		step = a.pos[0]
	}
	switch step {
	case "", "server":
		if step == "server" {
			s.web(ts) // the process's review server, built if the script has not yet
		}
		if err := w.Shutdown(); err != nil {
			ts.Fatalf("%v", err)
		}
	case "await-gate", "await-server":
		until := map[string]string{"await-gate": "3 write gate", "await-server": "3 merges"}[step]
		if err := w.AwaitShutdown(until, hangLimit); err != nil {
			s.fatal(ts, "shutdown %s: %v (is a request still waiting for its body before the drain limit?)", step, err)
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
	srv := s.world(ts).Server
	if srv == nil {
		ts.Fatalf("http-drained without a review server")
	}
	ended, begun := srv.(*web.Server).DrainEnded()
	if !begun {
		ts.Fatalf("http-drained before shutdown server")
	}
	if ended == neg {
		s.fatal(ts, "the drain has ended: %v, want %v", ended, !neg)
	}
}

// assertShutdownPassed asserts whether the process's shutdown has passed
// the step named step (package app's names).
func (s *scenario) assertShutdownPassed(ts *gts.TestScript, neg bool, step, what string) {
	w := s.world(ts)
	if !w.Stopping() {
		ts.Fatalf("%s: the process is not shutting down", what)
	}
	if got := w.ShutdownPassed(step); got == neg {
		s.fatal(ts, "%s: %v, want %v", what, got, !neg)
	}
}
