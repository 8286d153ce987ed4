package suggest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// otherProcess opens a second Store over the same database file: an
// independent process writing the same requests ("Store provides the
// transactional request CAS across independent processes").
func otherProcess(w *world) *store.Store {
	w.t.Helper()
	s, err := store.Open(w.path, store.Options{Now: w.clock.Now, IDs: ids.NewSeeded(99)})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() })
	return s
}

// TestPublishAndApply: a valid reply is published ready, and the Store
// applies it as the next revision.
func TestPublishAndApply(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	w.reply(h, cards)
	r := w.want(id, words.Completed, store.RequestReady, "")
	if string(r.Request.Reply) != cards || r.Diagnostic != "" {
		t.Fatalf("published %+v", r)
	}
	var next int
	if err := w.st.Update(func(tx *store.Tx) (err error) { next, err = tx.ConsumePlanRequest(id, 1); return err }); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, it := range w.items(w.key) {
		titles = append(titles, it.Title)
	}
	if next != 2 || strings.Join(titles, "|") != "one|two, sharper|three" {
		t.Fatalf("applied: revision %d, items %v", next, titles)
	}

	d, h := w.start(w.key, store.ModeDraft)
	w.reply(h, draft)
	w.want(d, words.Completed, store.RequestReady, "")
}

// TestImportBeforeLateCompletion: a plan revision imported while the
// provider runs invalidates the request at once; the late reply loses
// and is reported stale with the revision's cause, not as a failure.
func TestImportBeforeLateCompletion(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	if err := w.st.Update(func(tx *store.Tx) error {
		_, err := tx.ImportRevision(w.key, 1, []string{"alpha", "beta"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if row := w.row(id); row.State != store.RequestInvalidated || row.Cause != "plan revision 2 replaced 1" {
		t.Fatalf("after the import the request is %s (%q)", row.State, row.Cause)
	}
	w.noResult(id)
	_, err := w.tryStart(w.key, store.ModeSuggestion)
	wantRefusal(t, err, store.CodeActiveAttempt) // the slot is the provider's until it settles
	w.reply(h, cards)
	r := w.want(id, words.Stale, store.RequestInvalidated, "plan revision 2 replaced 1")
	if !strings.Contains(r.Diagnostic, "moved before publication") || r.Request.Reply != nil {
		t.Fatalf("stale outcome %+v: want the diagnostic kept and no reply saved", r)
	}
	if p := w.plan(w.key); p.Revision != 2 {
		t.Fatalf("plan at revision %d", p.Revision)
	}
	w.start(w.key, store.ModeSuggestion) // free again, at revision 2
}

// TestSnapshotChange: a snapshot change invalidates the same way, and a
// provider failure after it is reported stale, "instead of a provider
// failure", keeping the provider's diagnostic.
func TestSnapshotChange(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome suggest.Outcome
		diag    string
	}{
		{"late reply", suggest.Outcome{Reply: []byte(cards)}, "moved before publication"},
		{"late failure", suggest.Outcome{Err: errString("exit status 1")}, "exit status 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeDraft)
			if err := w.st.Update(func(tx *store.Tx) error { return tx.ChangeSnapshot(w.key, "snap-2") }); err != nil {
				t.Fatal(err)
			}
			w.settle(h, c.outcome)
			r := w.want(id, words.Stale, store.RequestInvalidated, "snapshot snap-2 replaced snap-1")
			if !strings.Contains(r.Diagnostic, c.diag) {
				t.Fatalf("diagnostic %q, want it to keep %q", r.Diagnostic, c.diag)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestCompletionRacingFailureCleanup: "If another process completed the
// request first, cleanup loses without changing the ready result."
func TestCompletionRacingFailureCleanup(t *testing.T) {
	const theirs = `[{"item": 0, "title": "from the other process", "instructions": "", "kind": "add"}]`
	for _, c := range []struct {
		name    string
		outcome suggest.Outcome
		diag    string
	}{
		{"our provider fails", suggest.Outcome{Err: errString("killed")}, "killed"},
		{"our provider replies too", suggest.Outcome{Reply: []byte(cards)}, "not pending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeSuggestion)
			other := otherProcess(w)
			if err := other.Update(func(tx *store.Tx) error {
				return tx.CompletePlanRequest(id, 1, "snap-1", []byte(theirs))
			}); err != nil {
				t.Fatal(err)
			}
			w.settle(h, c.outcome)
			r := w.want(id, words.Completed, store.RequestReady, "")
			if string(r.Request.Reply) != theirs || w.row(id).Reason != "" {
				t.Fatalf("the ready result changed: %+v", w.row(id))
			}
			if !strings.Contains(r.Diagnostic, c.diag) {
				t.Fatalf("diagnostic %q, want it to keep %q", r.Diagnostic, c.diag)
			}
		})
	}
}

// TestExternalCancellation: another process cancels the request; the
// publication CAS then refuses, and the outcome is cancelled, with the
// original diagnostic.
func TestExternalCancellation(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome suggest.Outcome
		diag    string
	}{
		{"then a reply", suggest.Outcome{Reply: []byte(cards)}, "is cancelled, not pending"},
		{"then a provider abort", suggest.Outcome{Err: errString("signal: terminated")}, "signal: terminated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, store.ModeSuggestion)
			if err := otherProcess(w).Update(func(tx *store.Tx) error { _, err := tx.CancelPlanRequest(id); return err }); err != nil {
				t.Fatal(err)
			}
			w.settle(h, c.outcome)
			r := w.want(id, words.Cancelled, store.RequestCancelled, words.CancelledByUser)
			if !strings.Contains(r.Diagnostic, c.diag) || r.Request.Reply != nil {
				t.Fatalf("outcome %+v: want diagnostic %q and no reply saved", r, c.diag)
			}
		})
	}
}

// TestBoundedProviderErrors: "Durable reasons use the Store's bounded
// format even when a provider returns an oversized diagnostic"; an invalid
// or oversized reply fails with words that say what is wrong.
func TestBoundedProviderErrors(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	w.fail(h, strings.Repeat("stderr: ünïcödé ", 10000))
	r := w.want(id, words.Failed, store.RequestFailed, "")
	row := w.row(id)
	for name, s := range map[string]string{"row reason": row.Reason, "outcome reason": r.Reason, "diagnostic": r.Diagnostic} {
		if len(s) > store.MaxDiagnostic || !utf8.ValidString(s) || !strings.HasSuffix(s, "…") {
			t.Errorf("%s: %d bytes (valid UTF-8: %v), want at most %d, cut with …", name, len(s), utf8.ValidString(s), store.MaxDiagnostic)
		}
	}
	if !strings.HasPrefix(row.Reason, "The planning agent failed: stderr:") || r.Reason != row.Reason {
		t.Fatalf("reason %.60q…", row.Reason)
	}

	huge := `{"items": [{"title": "t", "instructions": "` + strings.Repeat("x", store.MaxPlanReply) + `"}]}`
	for _, c := range []struct{ name, mode, reply, reason string }{
		{"a card for a missing item", store.ModeSuggestion, `[{"item": 9, "title": "x", "instructions": "", "kind": "change"}]`,
			"The planning agent's reply is not valid: card 1: a change card names an existing item, 1 to 2, not 9"},
		{"not JSON", store.ModeSuggestion, "Sure! Here are my suggestions:", "The planning agent's reply is not valid: the reply is not a JSON array of cards"},
		{"an empty draft", store.ModeDraft, `{"items": []}`, "The planning agent's reply is not valid: a draft has 1 to 200 items, not 0"},
		{"over 1 MiB", store.ModeDraft, huge, fmt.Sprintf("The planning agent's reply is not valid: the reply is %d bytes; at most 1048576 (1 MiB)", len(huge))},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id, h := w.start(w.key, c.mode)
			w.reply(h, c.reply)
			if r := w.want(id, words.Failed, store.RequestFailed, c.reason); w.row(id).Reply != nil || r.Request.Reason != c.reason {
				t.Fatalf("an invalid reply was saved: %+v", w.row(id))
			}
		})
	}
}

// TestUnsavedSettlementHoldsThePlan: when the terminal write fails, the
// outcome is unknown, so the plan's slot stays held ("the coordinator
// keeps an unresolved marker"), until a restart fails the leftover.
func TestUnsavedSettlementHoldsThePlan(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	if err := w.fp.Enable("store/commit", "return"); err != nil {
		t.Fatal(err)
	}
	w.fail(h, "exit status 2")
	w.fp.Disable("store/commit")
	r := w.result(id)
	if r.State != "" || r.Reason != "Needs restart: result could not be saved" || !strings.Contains(r.Diagnostic, "store/commit") {
		t.Fatalf("outcome %+v", r)
	}
	if row := w.row(id); row.State != store.RequestPending {
		t.Fatalf("row %s after a failed write", row.State)
	}
	_, err := w.tryStart(w.key, store.ModeSuggestion)
	if ref := wantRefusal(t, err, store.CodeActiveAttempt); !strings.Contains(ref.Message, "Needs restart") {
		t.Fatalf("refusal %q", ref.Message)
	}
	w.start(w.other, store.ModeSuggestion) // another plan is not held
	select {
	case <-w.c.Close():
		t.Fatal("closed before the loop ran")
	default:
	}
}

// TestRefusedPublicationWhoseRereadFails: another process cancelled the
// request, so the publication CAS refuses and "the durable row decides";
// when that row cannot be read, the outcome is unknown: it is not saved,
// and nothing is classified from a row that was never read.
func TestRefusedPublicationWhoseRereadFails(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	if err := otherProcess(w).Update(func(tx *store.Tx) error { _, err := tx.CancelPlanRequest(id); return err }); err != nil {
		t.Fatal(err)
	}
	if err := w.fp.Enable("store/view", "1*return"); err != nil {
		t.Fatal(err)
	}
	w.reply(h, cards)
	w.fp.Disable("store/view")
	r := w.result(id)
	if r.State != "" || r.Reason != "Needs restart: result could not be saved" || !strings.Contains(r.Diagnostic, "store/view") {
		t.Fatalf("outcome %+v; want the result not saved, with the failed read", r)
	}
	if row := w.row(id); row.State != store.RequestCancelled || row.Reply != nil {
		t.Fatalf("row %+v; the other process's cancellation must stand", row)
	}
}

// TestUnsavedFailedStartHoldsThePlan: a provider that fails to start ends
// its request through the same terminal write as any other; when that
// write fails, the plan's slot is held under the marker just the same,
// though no budget timer was ever armed.
func TestUnsavedFailedStartHoldsThePlan(t *testing.T) {
	w := newWorld(t)
	w.prov.startErr = errors.New("no worker")
	// The admission's own commit goes through; the failed start's
	// settlement is the next one.
	if err := w.fp.Enable("store/commit", "1*off->1*return"); err != nil {
		t.Fatal(err)
	}
	id, err := w.tryStart(w.key, store.ModeSuggestion)
	w.fp.Disable("store/commit")
	if err != nil {
		t.Fatalf("Start with a provider that fails: %v; want the request's ID and its outcome", err)
	}
	if r := w.result(id); r.State != "" || r.Reason != "Needs restart: result could not be saved" {
		t.Fatalf("outcome %+v; want the result not saved", r)
	}
	if row := w.row(id); row.State != store.RequestPending {
		t.Fatalf("row %s after a failed write", row.State)
	}
	_, err = w.tryStart(w.key, store.ModeSuggestion)
	if ref := wantRefusal(t, err, store.CodeActiveAttempt); !strings.Contains(ref.Message, "Needs restart") {
		t.Fatalf("refusal %q", ref.Message)
	}
}
