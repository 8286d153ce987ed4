package suggest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// TestRetryWhileCancellationIsPending: the user's cancel writes cancelled
// at once and asks the provider to stop, but "A new start (including a
// retry) cannot replace it, regardless of elapsed time, cancellation, or
// persisted state": the slot is the provider's until it settles.
func TestRetryWhileCancellationIsPending(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	row := w.cancel(id, "")
	if row.State != store.RequestCancelled || row.Reason != words.CancelledByUser || w.row(id).State != store.RequestCancelled {
		t.Fatalf("cancel returned %+v; want cancelled on disk at once", row)
	}
	if !reflect.DeepEqual(h.cancels, []string{"cancelled"}) {
		t.Fatalf("cancels %v", h.cancels)
	}
	w.noResult(id)
	_, err := w.tryStart(w.key, store.ModeSuggestion)
	wantRefusal(t, err, store.CodeActiveAttempt)
	w.advance(time.Hour) // elapsed time frees nothing; the budget keeps the first reason
	_, err = w.tryStart(w.key, store.ModeDraft)
	wantRefusal(t, err, store.CodeActiveAttempt)
	if len(h.cancels) != 1 {
		t.Fatalf("the budget replaced the first reason: cancels %v", h.cancels)
	}
	if again := w.cancel(id, "again"); again.State != store.RequestCancelled || again.Reason != words.CancelledByUser {
		t.Fatalf("a second cancel changed the row: %+v", again)
	}
	w.fail(h, "context canceled") // a later generic abort
	r := w.want(id, words.Cancelled, store.RequestCancelled, words.CancelledByUser)
	if r.Diagnostic != "context canceled" {
		t.Fatalf("diagnostic %q", r.Diagnostic)
	}
	w.start(w.key, store.ModeSuggestion) // the retry, once the provider settled
}

// TestTimeoutFollowedByAnUnsettledProvider: "Timeouts request abort but
// do not settle early"; the request stays pending and the plan held while
// the provider runs on, and its later generic abort does not replace the
// timeout's reason.
func TestTimeoutFollowedByAnUnsettledProvider(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome suggest.Outcome
		diag    string
	}{
		{"then an abort", suggest.Outcome{Err: errString("context canceled")}, "context canceled"},
		{"then a reply", suggest.Outcome{Reply: []byte(cards)}, "its reply was discarded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeSuggestion)
			w.advance(suggest.DefaultBudget - time.Second)
			if len(h.cancels) != 0 {
				t.Fatalf("aborted before the budget ran out: %v", h.cancels)
			}
			w.advance(time.Second)
			if !reflect.DeepEqual(h.cancels, []string{"timeout"}) {
				t.Fatalf("cancels %v at the budget, want [timeout]", h.cancels)
			}
			w.noResult(id)
			if row := w.row(id); row.State != store.RequestPending {
				t.Fatalf("the timeout settled early: %s", row.State)
			}
			w.advance(time.Hour)
			_, err := w.tryStart(w.key, store.ModeSuggestion)
			wantRefusal(t, err, store.CodeActiveAttempt)
			w.settle(h, c.outcome)
			r := w.want(id, words.Failed, store.RequestFailed, "Timed out after 10 minutes")
			if !strings.Contains(r.Diagnostic, c.diag) {
				t.Fatalf("diagnostic %q, want %q", r.Diagnostic, c.diag)
			}
			if w.row(id).Reply != nil {
				t.Fatal("a reply after the timeout was saved")
			}
			w.start(w.key, store.ModeSuggestion)
		})
	}
}

// TestCancelWithoutHandle: "If the request is pending but F holds no
// handle, F calls Store.cancelSuggestions" (a crashed process's request,
// while planning is off); a ready request is dismissed; any other state
// is returned unchanged.
func TestCancelWithoutHandle(t *testing.T) {
	w := newWorld(t)
	ready, h := w.start(w.other, store.ModeDraft)
	w.reply(h, draft)
	failed, h := w.start(w.other, store.ModeSuggestion)
	w.fail(h, "exit status 1")
	left, _ := w.start(w.key, store.ModeSuggestion)
	w.crash()
	w.boot() // no FailLeftovers: planning is off in this process

	if row := w.cancel(left, ""); row.State != store.RequestCancelled || row.Reason != words.CancelledByUser {
		t.Fatalf("pending with no handle: %+v", row)
	}
	if row := w.cancel(ready, ""); row.State != store.RequestCancelled || string(row.Reply) != draft {
		t.Fatalf("ready: %+v", row)
	}
	if row := w.cancel(failed, ""); row.State != store.RequestFailed || row.Reason != "The planning agent failed: exit status 1" {
		t.Fatalf("failed: %+v", row)
	}
	_, err := w.c.Cancel(context.Background(), "0b7d3c1e-4f7a-4c2b-9a3e-5d6f7a8b9c0d", "")
	wantRefusal(t, err, store.CodeNotFound)
	w.start(w.key, store.ModeSuggestion) // nothing in memory held the plan
}
