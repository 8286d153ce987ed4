package suggest_test

import (
	"errors"
	"testing"

	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// This file holds the tests of the order of two steps that the swap-steps
// mutants of the planning coordinator showed no test checked.

// postHookLoop is the simulator's loop with a hook run right after the
// next Post: it stands for the production loop goroutine running the
// posted event at once, and for another goroutine's call arriving right
// after it, before the poster's next statement (a legal interleaving of
// runner.GoroutineLoop: Post only queues, and the loop goroutine may run
// the event before the poster resumes).
type postHookLoop struct {
	*sim.Loop
	hook func()
}

func (l *postHookLoop) Post(fn func()) {
	l.Loop.Post(fn)
	if h := l.hook; h != nil {
		l.hook = nil
		h()
	}
}

// TestCloseRefusesBeforeItsEventRuns: "close() flips admission to closing
// before aborting invocations"; "Admission refuses from the moment Close
// is called (synchronously, before its event runs)". Close sets closing
// before it posts abortAll. Were it posted first, the loop could run
// abortAll (which aborts every live invocation and, with none, closes
// Close's channel) and then a start arriving before the flag is set would
// be admitted: a provider started after shutdown had aborted everything,
// which no abort ever reaches.
//
// Kills the sweep's suggest/shutdown.go:Coordinator.Close:swap-steps:bb7de7ed.
func TestCloseRefusesBeforeItsEventRuns(t *testing.T) {
	var loop *postHookLoop
	w := newWorld(t, func(cfg *suggest.Config) {
		loop = &postHookLoop{Loop: cfg.Loop.(*sim.Loop)}
		cfg.Loop = loop
	})
	var startErr error
	hooked := false
	loop.hook = func() {
		hooked = true
		loop.Loop.Drain() // the loop runs Close's event now
		_, startErr = w.tryStart(w.key, store.ModeSuggestion)
	}
	done := w.c.Close()
	if !hooked {
		t.Fatal("Close posted nothing")
	}
	if !errors.Is(startErr, suggest.ErrClosing) {
		t.Errorf("a start right after Close's event ran: %v; want ErrClosing", startErr)
	}
	if len(w.prov.inputs) != 0 || len(requestsOf(w, w.key)) != 0 {
		t.Errorf("a start after Close reached the provider (%d starts) or the Store (%d requests)",
			len(w.prov.inputs), len(requestsOf(w, w.key)))
	}
	w.loop.Drain()
	<-done
}
