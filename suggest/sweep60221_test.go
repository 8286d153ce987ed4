package suggest_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// TestBudgetFiringBehindTheSettlementIsIgnored: the budget's timer is
// the invocation's only while its provider runs ("Timeouts request abort
// but do not settle early"). A budget that falls due in the same tick as
// the provider's settlement, queued behind it, finds the invocation
// already settled and its handle forgotten: it must not ask that provider
// to stop, nor tell the trace that an abort was requested for a request
// that had ended ready, since the trace is the script's record of what the
// coordinator did and must repeat (TestTraceRepeats).
// Sweep survivor (seed 60221): suggest/cancel.go:Coordinator.timeout:drop-guard:491dcec7.
func TestBudgetFiringBehindTheSettlementIsIgnored(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeDraft)
	// The provider replies and, before the loop runs that event, the
	// budget falls due: the loop then runs the settlement first and the
	// budget's event after it.
	h.settle(suggest.Outcome{Reply: []byte(draft)})
	w.advance(suggest.DefaultBudget)
	w.want(id, words.Completed, store.RequestReady, "")
	if len(h.cancels) != 0 {
		t.Fatalf("the settled provider was asked to stop: %v", h.cancels)
	}
	for i, l := range w.trace {
		if strings.HasPrefix(l, "timeout ") && strings.Contains(l, id) {
			t.Fatalf("trace line %d acts on the settled request's budget: %q\ntrace:\n%s", i, l, w.dumpTrace())
		}
	}
	// The slot was freed by the settlement, and the stale budget changed
	// nothing about the next request.
	next, h2 := w.start(w.key, store.ModeSuggestion)
	w.reply(h2, cards)
	w.want(next, words.Completed, store.RequestReady, "")
	if len(h2.cancels) != 0 {
		t.Fatalf("the next request's provider was asked to stop: %v", h2.cancels)
	}
}
