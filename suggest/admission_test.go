package suggest_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// TestNilProviderIsNotAvailable: "Without a github block, or in a demo,
// the server returns 'Planning agent not available yet'", and nothing is
// allocated.
func TestNilProviderIsNotAvailable(t *testing.T) {
	w := newWorld(t, noProvider)
	_, err := w.tryStart(w.key, store.ModeSuggestion)
	if !errors.Is(err, suggest.ErrNotAvailable) || err.Error() != "Planning agent not available yet" {
		t.Fatalf("Start without a provider: %v", err)
	}
	if rs := requestsOf(w, w.key); len(rs) != 0 {
		t.Fatalf("a refused start left %d requests", len(rs))
	}
}

// TestShutdownAdmission: "open → closing; closing rejects new starts
// synchronously", before Close's own event runs, and also for a start
// that was already waiting for the loop when Close was called.
func TestShutdownAdmission(t *testing.T) {
	t.Run("after Close", func(t *testing.T) {
		w := newWorld(t)
		id, h := w.start(w.key, store.ModeSuggestion)
		done := w.c.Close() // its event has not run: the loop is not drained
		_, err := w.tryStart(w.other, store.ModeDraft)
		if !errors.Is(err, suggest.ErrClosing) || !errors.Is(err, store.ErrShuttingDown) {
			t.Fatalf("Start while closing: %v, want ErrClosing (ErrShuttingDown)", err)
		}
		if len(requestsOf(w, w.other)) != 0 || len(w.prov.inputs) != 1 {
			t.Fatal("a start refused while closing reached the Store or the provider")
		}
		w.loop.Drain()
		if !reflect.DeepEqual(h.cancels, []string{"shutdown"}) {
			t.Fatalf("cancels %v, want [shutdown]", h.cancels)
		}
		select {
		case <-done:
			t.Fatal("Close finished before the provider settled")
		default:
		}
		w.fail(h, "context canceled")
		w.want(id, words.Failed, store.RequestFailed, suggest.ServerStopped)
		<-done
	})
	t.Run("with no provider", func(t *testing.T) {
		// Closing is asked first: a server without a planning agent that
		// is shutting down says so, not that planning is unavailable.
		w := newWorld(t, noProvider)
		done := w.c.Close()
		if _, err := w.tryStart(w.key, store.ModeSuggestion); !errors.Is(err, suggest.ErrClosing) {
			t.Fatalf("Start while closing, with no provider: %v; want ErrClosing", err)
		}
		w.loop.Drain()
		<-done
	})
	t.Run("a start queued before Close", func(t *testing.T) {
		w := newWorld(t)
		req := w.request(w.key, store.ModeSuggestion)
		w.loop.Hold() // the loop is busy: the handler's start waits in its queue
		type answer struct {
			id  string
			err error
		}
		got := make(chan answer, 1)
		go func() {
			id, err := w.c.Start(context.Background(), req)
			got <- answer{id, err}
		}()
		w.loop.WaitQueued(1)
		done := w.c.Close()
		w.loop.Release()
		a := <-got
		if !errors.Is(a.err, suggest.ErrClosing) || a.id != "" {
			t.Fatalf("the queued start: %q, %v; want ErrClosing", a.id, a.err)
		}
		<-done
		if len(requestsOf(w, w.key)) != 0 || len(w.prov.inputs) != 0 {
			t.Fatal("the queued start reached the Store or the provider")
		}
	})
}

// TestOnePlanIdentityAtATime: "There is one active invocation per plan
// identity", suggestions and drafts together; "Different plan identities
// remain distinct."
func TestOnePlanIdentityAtATime(t *testing.T) {
	w := newWorld(t)
	first, h := w.start(w.key, store.ModeSuggestion)
	_, err := w.tryStart(w.key, store.ModeDraft)
	if r := wantRefusal(t, err, store.CodeActiveAttempt); !strings.Contains(r.Message, first) {
		t.Fatalf("refusal %q does not name the running request", r.Message)
	}
	second, h2 := w.start(w.other, store.ModeDraft)
	w.reply(h, cards)
	w.reply(h2, draft)
	w.want(first, words.Completed, store.RequestReady, "")
	w.want(second, words.Completed, store.RequestReady, "")
	// Ready requests hold no slot: several drafts may be ready at once.
	third, h3 := w.start(w.other, store.ModeDraft)
	w.reply(h3, draft)
	w.want(third, words.Completed, store.RequestReady, "")
}

// TestStaleCallerIsRefused: admission "compares that complete identity
// before the Store atomically allocates the request"; a refusal holds no
// slot and starts nothing.
func TestStaleCallerIsRefused(t *testing.T) {
	w := newWorld(t)
	req := w.request(w.key, store.ModeSuggestion)
	req.ExpectedSnapshot = "snap-0"
	_, err := w.c.Start(context.Background(), req)
	wantRefusal(t, err, store.CodeStaleVersion)
	req.ExpectedSnapshot, req.ExpectedRevision = "snap-1", 2
	_, err = w.c.Start(context.Background(), req)
	wantRefusal(t, err, store.CodeStaleVersion)
	if len(w.prov.inputs) != 0 {
		t.Fatal("a refused start reached the provider")
	}
	w.start(w.key, store.ModeSuggestion)
}

// TestPostSubmitMutationOfCallerOwnedInput: "Input containers are
// copied": what the caller does to its own items after Start (or while
// its start waits for the loop) never reaches the provider.
func TestPostSubmitMutationOfCallerOwnedInput(t *testing.T) {
	items := func() []store.PlanItem {
		return []store.PlanItem{
			{Item: 1, Title: "one", Spec: []byte(`{"title":"one","instructions":"Do one."}`)},
			{Item: 2, Title: "two", Spec: []byte(`{"title":"two"}`)},
		}
	}
	mutate := func(req *suggest.StartRequest) {
		req.Items[0].Title = "mutated"
		req.Items[0].Spec[2] = 'X'
		req.Items[1] = store.PlanItem{Item: 9, Title: "replaced"}
		req.PlanKey, req.Mode = "elsewhere", store.ModeDraft
	}
	t.Run("after Start returned", func(t *testing.T) {
		w := newWorld(t)
		req := w.request(w.key, store.ModeSuggestion)
		req.Items = items()
		id, err := w.c.Start(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		mutate(&req)
		in := w.prov.inputs[0]
		if !reflect.DeepEqual(in.Items, items()) {
			t.Fatalf("the provider's items changed with the caller's:\n got %+v\nwant %+v", in.Items, items())
		}
		want := suggest.Input{RequestID: id, PlanKey: w.key, Mode: store.ModeSuggestion, Revision: 1, NextRevision: 2,
			SnapshotID: "snap-1", Items: items(), Deadline: sim.Epoch.Add(suggest.DefaultBudget)}
		if !reflect.DeepEqual(in, want) {
			t.Fatalf("input %+v\nwant  %+v", in, want)
		}
	})
	t.Run("while the start waits for the loop", func(t *testing.T) {
		w := newWorld(t)
		req := w.request(w.key, store.ModeSuggestion)
		req.Items = items()
		w.loop.Hold()
		errc := make(chan error, 1)
		go func() { _, err := w.c.Start(context.Background(), req); errc <- err }()
		w.loop.WaitQueued(1)
		mutate(&req)
		w.loop.Release()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if in := w.prov.inputs[0]; !reflect.DeepEqual(in.Items, items()) || in.PlanKey != w.key {
			t.Fatalf("the provider saw the caller's later edit: %+v", in)
		}
	})
}

// TestProviderStartFailure: "pending may cancel before launch": a
// provider that cannot start ends the request failed with its words, and
// frees the plan at once.
func TestProviderStartFailure(t *testing.T) {
	w := newWorld(t)
	w.prov.startErr = errors.New("image codeboost-agent not found")
	id, err := w.tryStart(w.key, store.ModeDraft)
	if err != nil || id == "" {
		t.Fatalf("Start: %q, %v; want the request's ID", id, err)
	}
	w.want(id, words.Failed, store.RequestFailed, "The planning agent could not start: image codeboost-agent not found")
	w.start(w.key, store.ModeDraft)
	w.advance(time.Hour) // no timer was left behind for the failed start
	if len(w.results[id]) != 1 {
		t.Fatal("the failed start settled twice")
	}
}
