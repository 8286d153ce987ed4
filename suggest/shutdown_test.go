package suggest_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestCloseWaitsForEveryProvider: close() "flips admission to closing
// before aborting invocations and waits for all providers to settle. It
// does not close storage." The settlements pass the closed write gate
// through the capability.
func TestCloseWaitsForEveryProvider(t *testing.T) {
	w := newWorld(t)
	a, ha := w.start(w.key, store.ModeSuggestion)
	b, hb := w.start(w.other, store.ModeDraft)
	w.st.CloseWriteGate() // shutdown step 3 comes before planning's close
	done := w.c.Close()
	w.loop.Drain()
	if !reflect.DeepEqual(ha.cancels, []string{"shutdown"}) || !reflect.DeepEqual(hb.cancels, []string{"shutdown"}) {
		t.Fatalf("cancels %v, %v", ha.cancels, hb.cancels)
	}
	w.fail(ha, "context canceled")
	if closed(done) {
		t.Fatal("Close finished with a provider still running")
	}
	w.reply(hb, draft) // a reply after the abort loses to the first reason
	if !closed(done) {
		t.Fatal("Close still waits after every provider settled")
	}
	w.want(a, words.Failed, store.RequestFailed, suggest.ServerStopped)
	w.want(b, words.Failed, store.RequestFailed, suggest.ServerStopped)
	if w.c.Close() != done || !closed(w.c.Close()) {
		t.Fatal("a second Close does not return the same, closed channel")
	}
	if _, err := w.c.Cancel(context.Background(), a, ""); !errors.Is(err, store.ErrShuttingDown) {
		t.Fatalf("a user's cancel after the gate closed: %v", err)
	}
	w.plan(w.key) // the Store is still open
}

// TestCloseAbandonsAnUnsettledProviderAfterTheGrace: "one that has not
// settled within 20 seconds (PLANNING_SHUTDOWN_GRACE_MS, as Ask) is ended
// by abandoning planning's worker"; its later outcome is ignored.
func TestCloseAbandonsAnUnsettledProviderAfterTheGrace(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	done := w.c.Close()
	w.loop.Drain()
	w.advance(suggest.DefaultShutdownGrace - time.Millisecond)
	if closed(done) {
		t.Fatal("abandoned before the grace ran out")
	}
	w.noResult(id)
	w.advance(time.Millisecond)
	if !closed(done) {
		t.Fatal("Close still waits after the grace")
	}
	r := w.want(id, words.Failed, store.RequestFailed, suggest.ServerStopped)
	if !strings.Contains(r.Diagnostic, "did not stop within 20s") {
		t.Fatalf("diagnostic %q", r.Diagnostic)
	}
	before := w.row(id)
	w.reply(h, cards) // the abandoned worker's late answer
	if after := w.row(id); !reflect.DeepEqual(after, before) || len(w.results[id]) != 1 {
		t.Fatalf("a late outcome after abandonment changed something: %+v", after)
	}
	if last := w.trace[len(w.trace)-1]; !strings.Contains(last, "abandoned at shutdown; ignored") {
		t.Fatalf("last trace line %q", last)
	}
}

// TestCloseWithNothingRunning: nothing to wait for, no timer left.
func TestCloseWithNothingRunning(t *testing.T) {
	w := newWorld(t)
	done := w.c.Close()
	w.loop.Drain()
	if !closed(done) {
		t.Fatal("Close waits with nothing running")
	}
}

// TestFailLeftovers is startup's step: "every request an earlier process
// left pending is failed"; ready results stay; it refuses once this
// process has admitted a request of its own.
func TestFailLeftovers(t *testing.T) {
	w := newWorld(t)
	ready, h := w.start(w.other, store.ModeSuggestion)
	w.reply(h, cards)
	left, _ := w.start(w.key, store.ModeSuggestion)
	w.crash()
	w.boot()
	n, err := w.c.FailLeftovers(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("FailLeftovers: %d, %v", n, err)
	}
	if row := w.row(left); row.State != store.RequestFailed || row.Reason != suggest.ServerStopped {
		t.Fatalf("leftover: %+v", row)
	}
	if w.row(ready).State != store.RequestReady {
		t.Fatal("a ready result was failed")
	}
	w.start(w.key, store.ModeSuggestion)
	if _, err := w.c.FailLeftovers(context.Background()); err == nil {
		t.Fatal("FailLeftovers after a start would fail this process's own request")
	}
}

// TestDurableOutcomesSurviveAStoreReopen: "Restart therefore preserves
// both the terminal classification and its actionable reason."
func TestDurableOutcomesSurviveAStoreReopen(t *testing.T) {
	w := newWorld(t)
	ready, h := w.start(w.other, store.ModeSuggestion)
	w.reply(h, cards)
	failed, h := w.start(w.other, store.ModeDraft)
	w.fail(h, strings.Repeat("x", 10000))
	cancelled, h := w.start(w.other, store.ModeDraft)
	w.cancel(cancelled, "")
	w.fail(h, "context canceled")
	stale, h := w.start(w.key, store.ModeSuggestion)
	if err := w.st.Update(func(tx *store.Tx) error { return tx.ChangeSnapshot(w.key, "snap-2") }); err != nil {
		t.Fatal(err)
	}
	w.reply(h, cards)
	timedOut, h := w.start(w.key, store.ModeDraft)
	w.advance(suggest.DefaultBudget)
	w.fail(h, "context deadline exceeded")
	left, _ := w.start(w.key, store.ModeSuggestion)
	ids := []string{ready, failed, cancelled, stale, timedOut}
	before := map[string]store.PlanRequest{}
	for _, id := range ids {
		before[id] = w.row(id)
	}
	w.crash()
	w.boot()
	if n, err := w.c.FailLeftovers(context.Background()); err != nil || n != 1 {
		t.Fatalf("FailLeftovers: %d, %v", n, err)
	}
	for _, id := range ids {
		if after := w.row(id); !reflect.DeepEqual(after, before[id]) {
			t.Errorf("request %s after reopening:\n got %+v\nwant %+v", id, after, before[id])
		}
	}
	for _, c := range []struct{ id, state, reason string }{
		{ready, store.RequestReady, ""},
		{failed, store.RequestFailed, "The planning agent failed: xxx"},
		{cancelled, store.RequestCancelled, words.CancelledByUser},
		{stale, store.RequestInvalidated, ""},
		{timedOut, store.RequestFailed, "Timed out after 10 minutes"},
		{left, store.RequestFailed, suggest.ServerStopped},
	} {
		row := w.row(c.id)
		if row.State != c.state || !strings.HasPrefix(row.Reason, c.reason) {
			t.Errorf("request %s: %s (%.40q), want %s (%q)", c.id, row.State, row.Reason, c.state, c.reason)
		}
	}
	if row := w.row(stale); row.Cause != "snapshot snap-2 replaced snap-1" {
		t.Errorf("stale cause %q", row.Cause)
	}
	if err := w.st.Update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(ready, 1); return err }); err != nil {
		t.Fatalf("the ready result does not apply after the restart: %v", err)
	}
}

// TestTraceRepeats: the same script gives the same trace, byte for byte
// (IDs from a seeded source, time from the simulated clock).
func TestTraceRepeats(t *testing.T) {
	script := func() []string {
		w := newWorld(t)
		a, ha := w.start(w.key, store.ModeSuggestion)
		_, hb := w.start(w.other, store.ModeDraft)
		w.cancel(a, "")
		w.advance(suggest.DefaultBudget)
		w.fail(ha, "context canceled")
		done := w.c.Close()
		w.loop.Drain()
		w.advance(suggest.DefaultShutdownGrace)
		w.reply(hb, draft)
		<-done
		return w.trace
	}
	first, second := script(), script()
	if !reflect.DeepEqual(first, second) || len(first) < 6 {
		t.Fatalf("traces differ:\n%s\n---\n%s", strings.Join(first, "\n"), strings.Join(second, "\n"))
	}
}

// TestFailLeftoversWhoseEventNeverRan: a caller that gives up before the
// loop runs the step gets the loop's error, not a count of nothing, and
// the leftover stays pending for the step to fail when it does run.
func TestFailLeftoversWhoseEventNeverRan(t *testing.T) {
	w := newWorld(t)
	left, _ := w.start(w.key, store.ModeSuggestion)
	w.crash()
	w.boot()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := w.c.FailLeftovers(ctx); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("FailLeftovers with a cancelled context: %d, %v; want context.Canceled", n, err)
	}
	if row := w.row(left); row.State != store.RequestPending {
		t.Fatalf("leftover %s after a step that never ran", row.State)
	}
	if n, err := w.c.FailLeftovers(context.Background()); err != nil || n != 1 {
		t.Fatalf("FailLeftovers: %d, %v", n, err)
	}
}

// TestCloseEndsAfterTheLastOutcomeReachesItsCaller: Close's channel
// closes once "all providers settle", and the app's shutdown goes on from
// there to close the Store. So the last request's outcome reaches its
// caller (OnSettled) before the channel closes, whether its terminal write
// succeeded or not: a caller told after the close would act on a Store
// that shutdown is closing.
func TestCloseEndsAfterTheLastOutcomeReachesItsCaller(t *testing.T) {
	for _, saved := range []bool{true, false} {
		name := map[bool]string{true: "saved", false: "not saved"}[saved]
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			var done <-chan struct{}
			var closedWhenTold []bool
			req := w.request(w.key, store.ModeSuggestion)
			req.OnSettled = func(suggest.Result) { closedWhenTold = append(closedWhenTold, closed(done)) }
			if _, err := w.c.Start(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			h := w.prov.handles[len(w.prov.handles)-1]
			done = w.c.Close()
			w.loop.Drain()
			if !saved {
				if err := w.fp.Enable("store/commit", "return"); err != nil {
					t.Fatal(err)
				}
			}
			w.fail(h, "context canceled")
			w.fp.Disable("store/commit")
			if !closed(done) {
				t.Fatal("Close still waits after its only provider settled")
			}
			if !reflect.DeepEqual(closedWhenTold, []bool{false}) {
				t.Fatalf("OnSettled calls, each saying whether Close's channel was already closed: %v; want one, before it closed", closedWhenTold)
			}
		})
	}
}
