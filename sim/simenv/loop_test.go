package simenv

import (
	"context"
	"testing"
)

// TestLoopCallFromInsidePanics: the simulator's loop refuses a Call from
// inside an event as the production loop does, so that no scenario passes on
// an interleaving production cannot produce; only a scenario hook run
// through Interleave may, and says so in its header.
func TestLoopCallFromInsidePanics(t *testing.T) {
	l := &Loop{}
	var recovered any
	l.Post(func() {
		defer func() { recovered = recover() }()
		l.Call(context.Background(), func() {})
	})
	l.Drain()
	if recovered == nil {
		t.Fatal("Call from inside an event did not panic")
	}

	ran := false
	l.Post(func() {
		l.Interleave(func() {
			if err := l.Call(context.Background(), func() { ran = true }); err != nil {
				t.Error(err)
			}
		})
	})
	l.Drain()
	if !ran {
		t.Fatal("a Call inside Interleave did not run at once")
	}
}

// TestLoopHeldCallsKeepTheirOrder: calls queued by other goroutines while
// the loop is held run in the order they were queued, back to back.
func TestLoopHeldCallsKeepTheirOrder(t *testing.T) {
	l := &Loop{}
	l.Hold()
	var order []int
	done := make(chan struct{}, 3)
	for i := range 3 {
		n := l.Queued()
		go func() {
			l.Call(context.Background(), func() { order = append(order, i) })
			done <- struct{}{}
		}()
		l.WaitQueued(n + 1)
	}
	l.Release()
	for range 3 {
		<-done
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("held calls ran as %v", order)
	}
}
