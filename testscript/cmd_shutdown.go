package testscript

import (
	"context"
	"os"
	"time"

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
	w.Runner.BeginShutdown(context.Background())
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

func init() {
	register(Command{Name: "await-file", Usage: "await-file PATH",
		Summary: "waits, up to 20 s of real time, until a real process has written PATH (its ready file); only for real-process cases, which cannot use virtual time",
		Example: "await-file $WORK/a.ready", Run: cmdAwaitFile})
}

func cmdAwaitFile(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: await-file PATH")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within 20 s", path)
}
