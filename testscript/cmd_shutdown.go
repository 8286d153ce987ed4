package testscript

import (
	gts "github.com/rogpeppe/go-internal/testscript"
)

func init() {
	register(
		Command{Name: "shutdown", Usage: "shutdown [gate]",
			Summary: "begins the runner's shutdown: admission closes and every job gets first reason shutdown unless it has one (steps 1 and 4); with gate, the Store's write gate closes first (step 3), so only the coordinator's own writes still land",
			Example: "shutdown gate", Run: cmdShutdown},
		Command{Name: "drained", Usage: "[!] drained",
			Summary: "asserts whether shutdown has begun and every job has ended (markers may remain)",
			Example: "! drained", Run: cmdDrained},
	)
}

func cmdShutdown(ts *gts.TestScript, neg bool, args []string) {
	w := get(ts).world(ts)
	if len(args) == 1 && args[0] == "gate" {
		w.Store.CloseWriteGate()
	} else if len(args) != 0 {
		ts.Fatalf("usage: shutdown [gate]")
	}
	w.Runner.BeginShutdown()
	w.Loop.Drain()
}

func cmdDrained(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	var got bool
	select {
	case <-s.world(ts).Runner.Drained():
		got = true
	default:
	}
	if got == neg {
		s.fatal(ts, "drained: %v, want %v", got, !neg)
	}
}
