package suggest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// padded is reply followed by spaces up to n bytes: still the same JSON.
func padded(reply string, n int) []byte {
	return []byte(reply + strings.Repeat(" ", n-len(reply)))
}

// TestRepliesAtTheirBound: a reply is at most store.MaxPlanReply bytes
// (1 MiB), a maximum: a valid reply of exactly that size is validated and
// published, one byte more is refused before parsing ("Durable reasons
// use the Store's bounded format", and the Store stores at most 1 MiB).
func TestRepliesAtTheirBound(t *testing.T) {
	if _, err := suggest.ValidateCards(padded(cards, store.MaxPlanReply), 2); err != nil {
		t.Fatalf("cards of exactly 1 MiB: %v", err)
	}
	if _, err := suggest.ValidateDraft(padded(draft, store.MaxPlanReply)); err != nil {
		t.Fatalf("a draft of exactly 1 MiB: %v", err)
	}
	if _, err := suggest.ValidateCards(padded(cards, store.MaxPlanReply+1), 2); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("valid cards one byte over 1 MiB: %v", err)
	}
	if _, err := suggest.ValidateDraft(padded(draft, store.MaxPlanReply+1)); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("a valid draft one byte over 1 MiB: %v", err)
	}
	for _, c := range []struct{ mode, reply string }{{store.ModeSuggestion, cards}, {store.ModeDraft, draft}} {
		w := newWorld(t)
		id, h := w.start(w.key, c.mode)
		w.settle(h, suggest.Outcome{Reply: padded(c.reply, store.MaxPlanReply)})
		w.want(id, words.Completed, store.RequestReady, "")
		w2 := newWorld(t)
		id, h = w2.start(w2.key, c.mode)
		w2.settle(h, suggest.Outcome{Reply: padded(c.reply, store.MaxPlanReply+1)})
		if r := w2.want(id, words.Failed, store.RequestFailed, ""); !strings.Contains(r.Reason, "1 MiB") {
			t.Fatalf("%s reply over 1 MiB: reason %q", c.mode, r.Reason)
		}
	}
}

// TestCardCountAtItsBound: a suggestion has at most store.MaxCards cards;
// a reply with that many publishes, one more fails the request saying so.
func TestCardCountAtItsBound(t *testing.T) {
	card := `{"item": 0, "title": "more", "instructions": "", "kind": "add"}`
	many := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(card+",", n), ",") + "]" }
	if _, err := suggest.ValidateCards([]byte(many(store.MaxCards)), 2); err != nil {
		t.Fatalf("%d cards: %v", store.MaxCards, err)
	}
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	w.reply(h, many(store.MaxCards+1))
	if r := w.want(id, words.Failed, store.RequestFailed, ""); !strings.HasPrefix(r.Reason, "The planning agent's reply is not valid: ") || !strings.Contains(r.Reason, "at most") {
		t.Fatalf("%d cards: reason %q", store.MaxCards+1, r.Reason)
	}
}

// TestAbandonedAtShutdownKeepsTheFirstReason: a provider still running when
// the shutdown grace passes is abandoned, and its request is settled from
// its first stop reason ("First timeout/cancellation/shutdown reason wins
// over a later generic provider abort"): a budget that ran out first
// fails it as timed out, not as stopped by the server; with shutdown the
// first reason, it is "Server stopped". Either way the diagnostic says it
// was abandoned, and Close's channel closes.
func TestAbandonedAtShutdownKeepsTheFirstReason(t *testing.T) {
	for _, c := range []struct {
		name       string
		before     func(w *world)
		wantReason string
	}{
		{"the budget ran out first", func(w *world) { w.advance(suggest.DefaultBudget) }, words.TimedOutAfter(10)},
		{"shutdown first", func(*world) {}, suggest.ServerStopped},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeSuggestion)
			c.before(w)
			done := w.c.Close()
			w.loop.Drain()
			if closed(done) {
				t.Fatal("closed with a provider still running")
			}
			w.advance(suggest.DefaultShutdownGrace - time.Nanosecond)
			if closed(done) {
				t.Fatal("abandoned before the grace passed")
			}
			w.advance(time.Nanosecond)
			r := w.want(id, words.Failed, store.RequestFailed, c.wantReason)
			if !strings.Contains(r.Diagnostic, "did not stop within 20s of shutdown") {
				t.Fatalf("diagnostic %q; want it to say the provider was abandoned", r.Diagnostic)
			}
			if !closed(done) {
				t.Fatal("Close still waits after the grace")
			}
			w.fail(h, "late")
			if n := len(w.results[id]); n != 1 {
				t.Fatalf("%d outcomes after a late settlement; the abandoned provider's is ignored", n)
			}
		})
	}
}

// nilHandleProvider starts nothing and says nothing went wrong.
type nilHandleProvider struct{}

func (nilHandleProvider) Start(context.Context, suggest.Input) (suggest.Handle, error) {
	return nil, nil
}

// TestProviderWithoutAHandle: a provider that returns neither a handle nor
// an error has started nothing: the request ends failed at once, through
// the same settlement as a start that failed, and the plan's slot is
// free again (no invocation is tracked, no timer is left behind).
func TestProviderWithoutAHandle(t *testing.T) {
	w := newWorld(t, func(c *suggest.Config) { c.Provider = nilHandleProvider{} })
	id, err := w.tryStart(w.key, store.ModeSuggestion)
	if err != nil || id == "" {
		t.Fatalf("Start: %q, %v; want the request's ID", id, err)
	}
	w.want(id, words.Failed, store.RequestFailed, "The planning agent could not start: no handle")
	next, err := w.tryStart(w.key, store.ModeSuggestion)
	if err != nil {
		t.Fatalf("a start after it: %v; want the plan's slot free", err)
	}
	w.advance(time.Hour)
	if len(w.results[id]) != 1 || len(w.results[next]) != 1 {
		t.Fatalf("outcomes %d and %d; want one each", len(w.results[id]), len(w.results[next]))
	}
}

// TestStoppedRequestKeepsTheProvidersDiagnostic: a request settles from its
// first stop reason whatever its provider answers, "retaining the original
// diagnostic": the provider's own error when it failed, or that its reply
// was discarded.
func TestStoppedRequestKeepsTheProvidersDiagnostic(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome suggest.Outcome
		diag    string
	}{
		{"it fails", suggest.Outcome{Err: errString("exit status 137")}, "exit status 137"},
		{"it replies", suggest.Outcome{Reply: []byte(cards)}, "its reply was discarded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeSuggestion)
			w.cancel(id, "")
			w.settle(h, c.outcome)
			r := w.want(id, words.Cancelled, store.RequestCancelled, words.CancelledByUser)
			if !strings.Contains(r.Diagnostic, c.diag) {
				t.Fatalf("diagnostic %q; want %q", r.Diagnostic, c.diag)
			}
		})
	}
}

// TestSettlementAndBudgetInOneTurn: the provider's settlement is queued
// before the budget's timer fires: the settlement wins ("Timeouts request
// abort but do not settle early"), the late timer asks the provider for
// nothing and changes nothing.
func TestSettlementAndBudgetInOneTurn(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	h.settle(suggest.Outcome{Reply: []byte(cards)}) // queued, not yet run
	w.advance(suggest.DefaultBudget)
	w.want(id, words.Completed, store.RequestReady, "")
	if len(h.cancels) != 0 {
		t.Fatalf("the provider was asked to stop after it settled: %v", h.cancels)
	}
}

// TestNewChecksItsConfiguration: New refuses a configuration without its
// Store, Loop, Clock or IDs, or with a negative budget or shutdown grace;
// a zero one is the default (ten minutes, twenty seconds), any other is
// used as given.
func TestNewChecksItsConfiguration(t *testing.T) {
	w := newWorld(t)
	good := suggest.Config{Store: w.st, Loop: w.loop, Clock: w.clock, IDs: ids.NewSeeded(3)}
	if _, err := suggest.New(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	for name, edit := range map[string]func(*suggest.Config){
		"no Store":          func(c *suggest.Config) { c.Store = nil },
		"no Loop":           func(c *suggest.Config) { c.Loop = nil },
		"no Clock":          func(c *suggest.Config) { c.Clock = nil },
		"no IDs":            func(c *suggest.Config) { c.IDs = nil },
		"a negative budget": func(c *suggest.Config) { c.Budget = -time.Second },
		"a negative grace":  func(c *suggest.Config) { c.ShutdownGrace = -time.Second },
	} {
		cfg := good
		edit(&cfg)
		if _, err := suggest.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	for _, c := range []struct {
		budget, grace         time.Duration
		wantBudget, wantGrace time.Duration
	}{
		{0, 0, suggest.DefaultBudget, suggest.DefaultShutdownGrace},
		{3 * time.Minute, 5 * time.Second, 3 * time.Minute, 5 * time.Second},
	} {
		w := newWorld(t, func(cfg *suggest.Config) { cfg.Budget, cfg.ShutdownGrace = c.budget, c.grace })
		id, h := w.start(w.key, store.ModeSuggestion)
		if dl := w.prov.inputs[0].Deadline; !dl.Equal(w.clock.Now().Add(c.wantBudget)) {
			t.Fatalf("budget %s: the provider's deadline %v; want %s from now", c.budget, dl, c.wantBudget)
		}
		w.advance(c.wantBudget - time.Nanosecond)
		if len(h.cancels) != 0 {
			t.Fatalf("budget %s: stopped early: %v", c.budget, h.cancels)
		}
		w.advance(time.Nanosecond)
		if len(h.cancels) != 1 || h.cancels[0] != "timeout" {
			t.Fatalf("budget %s: cancels %v; want the timeout", c.budget, h.cancels)
		}
		done := w.c.Close()
		w.loop.Drain()
		w.advance(c.wantGrace - time.Nanosecond)
		if closed(done) {
			t.Fatalf("grace %s: abandoned early", c.grace)
		}
		w.advance(time.Nanosecond)
		if !closed(done) {
			t.Fatalf("grace %s: still waiting after it", c.grace)
		}
		w.want(id, words.Failed, store.RequestFailed, "")
	}
}

// TestStartWhoseEventNeverRan: a Start whose context ended before its
// admission event ran gets that error, never an empty request ID with no
// error, and nothing is admitted.
func TestStartWhoseEventNeverRan(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if id, err := w.c.Start(ctx, w.request(w.key, store.ModeSuggestion)); err == nil {
		t.Fatalf("Start with its context ended: %q and no error", id)
	}
	if len(w.prov.inputs) != 0 || len(requestsOf(w, w.key)) != 0 {
		t.Fatal("a start whose event never ran admitted a request")
	}
}

// TestOversizedDiagnosticThatIsNotText: "Durable reasons use the Store's
// bounded format even when a provider returns an oversized diagnostic",
// even one that is not UTF-8 text at all: the request fails with a
// bounded diagnostic.
func TestOversizedDiagnosticThatIsNotText(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	w.fail(h, strings.Repeat("\x80", store.MaxDiagnostic+10))
	r := w.want(id, words.Failed, store.RequestFailed, "")
	if len(r.Diagnostic) > store.MaxDiagnostic || !strings.HasSuffix(r.Diagnostic, "…") {
		t.Fatalf("a diagnostic of %d bytes; want it bounded to %d, marked cut", len(r.Diagnostic), store.MaxDiagnostic)
	}
}
