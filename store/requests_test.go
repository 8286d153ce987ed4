package store_test

// Planning requests (requests.go): the suggestion coordinator's durable
// half. Each test names the rule of the coordinator contract
// (shared/seeds/002_…) or of the F1 contract's "Planning API for lane G"
// it holds, and checks the row as well as the answer.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

var requestIDs = ids.NewSeeded(124)

const leftoverReason = "The server stopped before this request finished. Ask again."

// plan reads the plan's present revision and snapshot.
func (e *env) plan(key string) store.Plan {
	e.t.Helper()
	var p store.Plan
	if err := e.s.View(func(tx *store.Tx) (err error) { p, err = tx.Plan(key); return err }); err != nil {
		e.t.Fatalf("Plan(%s): %v", key, err)
	}
	return p
}

func (e *env) request(id string) store.PlanRequest {
	e.t.Helper()
	var r store.PlanRequest
	if err := e.s.View(func(tx *store.Tx) (err error) { r, err = tx.PlanRequest(id); return err }); err != nil {
		e.t.Fatalf("PlanRequest(%s): %v", id, err)
	}
	return r
}

func (e *env) requests(key string) []store.PlanRequest {
	e.t.Helper()
	var rs []store.PlanRequest
	if err := e.s.View(func(tx *store.Tx) (err error) { rs, err = tx.PlanRequests(key); return err }); err != nil {
		e.t.Fatalf("PlanRequests(%s): %v", key, err)
	}
	return rs
}

// begin starts a request of mode at the plan's present revision and
// snapshot.
func (e *env) begin(key, mode string) store.PlanRequest {
	e.t.Helper()
	p := e.plan(key)
	var r store.PlanRequest
	e.update(func(tx *store.Tx) (err error) {
		r, err = tx.BeginPlanRequest(key, mode, requestIDs.UUID(), p.Revision, p.SnapshotID)
		return err
	})
	return r
}

// ready begins a request of mode and completes it with reply.
func (e *env) ready(key, mode, reply string) store.PlanRequest {
	e.t.Helper()
	r := e.begin(key, mode)
	e.update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, r.Revision, r.SnapshotID, []byte(reply)) })
	return e.request(r.ID)
}

func (e *env) settle(r store.PlanRequest, state, reason string) store.PlanRequest {
	e.t.Helper()
	var out store.PlanRequest
	e.update(func(tx *store.Tx) (err error) {
		out, err = tx.SettlePlanRequest(r.ID, r.Revision, r.SnapshotID, state, reason)
		return err
	})
	return out
}

const (
	addCard   = `[{"item": 0, "title": "three", "instructions": "Add a third step.", "kind": "add"}]`
	aDraft    = `{"items": [{"title": "first", "instructions": "Do it."}, {"title": "second", "instructions": ""}]}`
	twoChange = `[{"item": 2, "title": "two, better", "instructions": "Sharper.", "kind": "change"}]`
)

func wantState(t *testing.T, r store.PlanRequest, state string) {
	t.Helper()
	if r.State != state {
		t.Fatalf("request %s is %s (reason %q, cause %q), want %s", r.ID, r.State, r.Reason, r.Cause, state)
	}
}

func TestBeginPlanRequestAllocatesPending(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.task(key)
	id := requestIDs.UUID()
	var r store.PlanRequest
	e.update(func(tx *store.Tx) (err error) {
		r, err = tx.BeginPlanRequest(key, store.ModeDraft, id, 1, "snap-1")
		return err
	})
	if r.ID != id || r.PlanKey != key || r.Mode != store.ModeDraft || r.Revision != 1 || r.SnapshotID != "snap-1" ||
		r.State != store.RequestPending || r.Reply != nil || r.Reason != "" || r.Cause != "" {
		t.Fatalf("begun request %+v", r)
	}
	if r.Checkpoint != "" || r.AuditedHead != "" || r.PrefixItem != nil {
		t.Fatalf("a fresh task captured checkpoint %q, head %q, prefix %v; want none", r.Checkpoint, r.AuditedHead, r.PrefixItem)
	}
	if !r.CreatedAt.Equal(e.clock.Now()) || !r.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("times %v, %v; want the injected clock's %v", r.CreatedAt, r.UpdatedAt, e.clock.Now())
	}
	if after := e.task(key); after.StateVersion != before.StateVersion || after.ContextGeneration != before.ContextGeneration {
		t.Fatalf("a planning request moved the task: %+v → %+v", before, after)
	}
	if got := e.requests(key); len(got) != 1 || got[0].ID != id {
		t.Fatalf("PlanRequests: %+v", got)
	}
}

func TestBeginPlanRequestRefusals(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	used := e.begin(e.newTask(""), store.ModeSuggestion).ID
	cases := []struct {
		name, key, mode, id string
		rev                 int
		snap, code, words   string
	}{
		{"unknown mode", key, "plan", requestIDs.UUID(), 1, "snap-1", store.CodeBadInput, "mode"},
		{"uppercase ID", key, store.ModeSuggestion, strings.ToUpper(requestIDs.UUID()), 1, "snap-1", store.CodeBadInput, "UUID v4"},
		{"not a UUID", key, store.ModeSuggestion, "req-1", 1, "snap-1", store.CodeBadInput, "UUID v4"},
		{"unknown plan", "repo/none/plan", store.ModeSuggestion, requestIDs.UUID(), 1, "snap-1", store.CodeNotFound, "no plan"},
		{"stale revision", key, store.ModeSuggestion, requestIDs.UUID(), 2, "snap-1", store.CodeStaleVersion, "revision 1"},
		{"stale snapshot", key, store.ModeDraft, requestIDs.UUID(), 1, "snap-0", store.CodeStaleVersion, "snapshot snap-1"},
		{"ID already used", key, store.ModeSuggestion, used, 1, "snap-1", store.CodeBadInput, "already used"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.s.Update(func(tx *store.Tx) error {
				_, err := tx.BeginPlanRequest(c.key, c.mode, c.id, c.rev, c.snap)
				return err
			})
			r := wantRefusal(t, err, c.code)
			if !strings.Contains(r.Message, c.words) {
				t.Fatalf("refusal %q does not say %q", r.Message, c.words)
			}
			if got := e.requests(key); len(got) != 0 {
				t.Fatalf("a refusal left %d requests", len(got))
			}
		})
	}
}

// TestOnePendingRequestPerPlanIdentity: "There is one active invocation per
// plan identity", shared by suggestions and drafts, while "several drafts
// may be ready at once" and "Different plan identities remain distinct".
func TestOnePendingRequestPerPlanIdentity(t *testing.T) {
	e := newEnv(t)
	key, other := e.newTask(""), e.newTask("")
	first := e.begin(key, store.ModeSuggestion)
	for _, mode := range []string{store.ModeSuggestion, store.ModeDraft} {
		err := e.s.Update(func(tx *store.Tx) error {
			_, err := tx.BeginPlanRequest(key, mode, requestIDs.UUID(), 1, "snap-1")
			return err
		})
		if r := wantRefusal(t, err, store.CodeActiveAttempt); !strings.Contains(r.Message, first.ID) {
			t.Fatalf("the %s refusal does not name the pending request: %s", mode, r.Message)
		}
	}
	e.begin(other, store.ModeDraft) // another plan identity
	e.update(func(tx *store.Tx) error { return tx.CompletePlanRequest(first.ID, 1, "snap-1", []byte(addCard)) })
	d1 := e.ready(key, store.ModeDraft, aDraft)
	d2 := e.ready(key, store.ModeDraft, aDraft)
	wantState(t, e.request(first.ID), store.RequestReady)
	wantState(t, d1, store.RequestReady)
	wantState(t, d2, store.RequestReady)
	if got := e.requests(key); len(got) != 3 || got[0].ID != first.ID || got[1].ID != d1.ID || got[2].ID != d2.ID {
		t.Fatalf("PlanRequests, oldest first: %+v", got)
	}
}

// TestBeginPlanRequestCapturesTheV15Binding: "v15 binds planning requests
// to their captured checkpoint, audited head, and completed prefix".
func TestBeginPlanRequestCapturesTheV15Binding(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	id := e.publishedItem(key, "c1")
	r := e.begin(key, store.ModeSuggestion)
	if r.Checkpoint != "" || r.AuditedHead != "c1" || r.PrefixItem == nil || *r.PrefixItem != 1 {
		t.Fatalf("after item 1: checkpoint %q, head %q, prefix %v; want none, c1, 1", r.Checkpoint, r.AuditedHead, r.PrefixItem)
	}
	e.update(func(tx *store.Tx) error {
		return tx.PauseForAmendment(id, store.ScopeFinding{Paths: []string{"docs/x.md"}, Leaves: []string{"docs/x.md"}})
	})
	e.settle(r, store.RequestFailed, "made room")
	r = e.begin(key, store.ModeDraft)
	if r.Checkpoint != id || r.AuditedHead != "c1" || r.PrefixItem == nil || *r.PrefixItem != 1 {
		t.Fatalf("after the checkpoint: checkpoint %q, head %q, prefix %v; want %s, c1, 1", r.Checkpoint, r.AuditedHead, r.PrefixItem, id)
	}
	if again := e.request(r.ID); again.Checkpoint != id || again.AuditedHead != "c1" || *again.PrefixItem != 1 {
		t.Fatalf("read back: %+v", again)
	}
}

// TestCompletePlanRequestIsThePublicationCAS: "Store.completeSuggestions,
// whose CAS also checks the request is still pending and bound to the
// current revision/snapshot"; every refusal leaves the request pending.
func TestCompletePlanRequestIsThePublicationCAS(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.begin(key, store.ModeSuggestion)
	huge := `[{"item": 0, "title": "big", "kind": "add", "instructions": "` + strings.Repeat("x", store.MaxPlanReply) + `"}]`
	cases := []struct {
		name     string
		id       string
		rev      int
		snap     string
		reply    string
		code     string
		contains string
	}{
		{"unknown request", requestIDs.UUID(), 1, "snap-1", addCard, store.CodeNotFound, "no planning request"},
		{"another revision", r.ID, 2, "snap-1", addCard, store.CodeNotCurrent, "bound to revision 1"},
		{"another snapshot", r.ID, 1, "snap-2", addCard, store.CodeNotCurrent, "snapshot snap-1"},
		{"over 1 MiB", r.ID, 1, "snap-1", huge, store.CodeBadInput, "1 MiB"},
		{"a card for a missing item", r.ID, 1, "snap-1", `[{"item": 3, "title": "x", "instructions": "", "kind": "change"}]`, store.CodeBadInput, "card 1"},
		{"a draft's reply for a suggestion", r.ID, 1, "snap-1", aDraft, store.CodeBadInput, "JSON array of cards"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(c.id, c.rev, c.snap, []byte(c.reply)) })
			if ref := wantRefusal(t, err, c.code); !strings.Contains(ref.Message, c.contains) {
				t.Fatalf("refusal %q does not say %q", ref.Message, c.contains)
			}
			wantState(t, e.request(r.ID), store.RequestPending)
		})
	}

	t.Run("the plan moved under a pending request", func(t *testing.T) {
		// No Store method can do this (each move invalidates the plan's
		// requests), so a raw write stands for a writer that forgot to:
		// the CAS still reads the plan itself.
		e := newEnv(t)
		key := e.newTask("")
		r := e.begin(key, store.ModeSuggestion)
		e.rawExec(`UPDATE plans SET snapshot_id = 'snap-9' WHERE key = ?`, key)
		err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, 1, "snap-1", []byte(addCard)) })
		wantRefusal(t, err, store.CodeNotCurrent)
		wantState(t, e.request(r.ID), store.RequestPending)
	})

	e.update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, 1, "snap-1", []byte(addCard)) })
	got := e.request(r.ID)
	wantState(t, got, store.RequestReady)
	if string(got.Reply) != addCard {
		t.Fatalf("reply %s, want %s", got.Reply, addCard)
	}
	// A late second completion loses.
	err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, 1, "snap-1", []byte(`[]`)) })
	wantRefusal(t, err, store.CodeIllegal)
	if string(e.request(r.ID).Reply) != addCard {
		t.Fatal("a late completion replaced the ready reply")
	}
}

func TestCompletePlanRequestDraft(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.begin(key, store.ModeDraft)
	err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, 1, "snap-1", []byte(addCard)) })
	wantRefusal(t, err, store.CodeBadInput)
	e.update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, 1, "snap-1", []byte(aDraft)) })
	wantState(t, e.request(r.ID), store.RequestReady)
}

// TestSettlePlanRequest: "settleSuggestion, which can transition only the
// exact pending attempt at its captured revision and snapshot. If another
// process completed the request first, cleanup loses without changing the
// ready result."
func TestSettlePlanRequest(t *testing.T) {
	t.Run("failed, with a bounded reason", func(t *testing.T) {
		e := newEnv(t)
		r := e.begin(e.newTask(""), store.ModeSuggestion)
		long := strings.Repeat("é", store.MaxDiagnostic)
		got := e.settle(r, store.RequestFailed, long)
		wantState(t, got, store.RequestFailed)
		if len(got.Reason) > store.MaxDiagnostic || !strings.HasSuffix(got.Reason, "…") || !utf8.ValidString(got.Reason) {
			t.Fatalf("reason of %d bytes, want at most %d, cut with … and whole UTF-8", len(got.Reason), store.MaxDiagnostic)
		}
		if again := e.request(r.ID); again.Reason != got.Reason {
			t.Fatal("the returned row is not the durable one")
		}
	})
	t.Run("cancelled and invalidated", func(t *testing.T) {
		e := newEnv(t)
		key := e.newTask("")
		wantState(t, e.settle(e.begin(key, store.ModeSuggestion), store.RequestCancelled, "timeout"), store.RequestCancelled)
		inv := e.settle(e.begin(key, store.ModeDraft), store.RequestInvalidated, "plan revision 2 replaced 1")
		if inv.State != store.RequestInvalidated || inv.Cause != "plan revision 2 replaced 1" || inv.Reason != inv.Cause {
			t.Fatalf("invalidated: %+v", inv)
		}
	})
	t.Run("cleanup loses to a completion", func(t *testing.T) {
		e := newEnv(t)
		r := e.ready(e.newTask(""), store.ModeSuggestion, addCard)
		got := e.settle(r, store.RequestFailed, "provider exited 1")
		wantState(t, got, store.RequestReady)
		if string(got.Reply) != addCard || got.Reason != "" {
			t.Fatalf("the ready result changed: %+v", got)
		}
	})
	t.Run("only the captured binding", func(t *testing.T) {
		e := newEnv(t)
		r := e.begin(e.newTask(""), store.ModeSuggestion)
		for _, b := range []struct {
			rev  int
			snap string
		}{{2, "snap-1"}, {1, "snap-2"}} {
			var got store.PlanRequest
			e.update(func(tx *store.Tx) (err error) {
				got, err = tx.SettlePlanRequest(r.ID, b.rev, b.snap, store.RequestFailed, "x")
				return err
			})
			wantState(t, got, store.RequestPending)
		}
	})
	t.Run("a settled request stays settled", func(t *testing.T) {
		e := newEnv(t)
		r := e.begin(e.newTask(""), store.ModeSuggestion)
		e.settle(r, store.RequestCancelled, "Cancelled by the user")
		got := e.settle(r, store.RequestFailed, "provider exited 1")
		if got.State != store.RequestCancelled || got.Reason != "Cancelled by the user" {
			t.Fatalf("a second settlement changed the row: %+v", got)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		e := newEnv(t)
		r := e.begin(e.newTask(""), store.ModeSuggestion)
		for _, c := range []struct{ id, state, reason, code string }{
			{r.ID, store.RequestReady, "x", store.CodeBadInput},
			{r.ID, store.RequestConsumed, "x", store.CodeBadInput},
			{r.ID, store.RequestFailed, " ", store.CodeBadInput},
			{requestIDs.UUID(), store.RequestFailed, "x", store.CodeNotFound},
		} {
			err := e.s.Update(func(tx *store.Tx) error {
				_, err := tx.SettlePlanRequest(c.id, 1, "snap-1", c.state, c.reason)
				return err
			})
			wantRefusal(t, err, c.code)
		}
		wantState(t, e.request(r.ID), store.RequestPending)
	})
}

// TestCancelPlanRequest: "a pending or ready one is cancelled, any other
// state is returned unchanged".
func TestCancelPlanRequest(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	cancel := func(id string) store.PlanRequest {
		var r store.PlanRequest
		e.update(func(tx *store.Tx) (err error) { r, err = tx.CancelPlanRequest(id); return err })
		return r
	}
	pending := e.begin(key, store.ModeSuggestion)
	if got := cancel(pending.ID); got.State != store.RequestCancelled || got.Reason != words.CancelledByUser {
		t.Fatalf("pending → %+v", got)
	}
	ready := e.ready(key, store.ModeDraft, aDraft)
	if got := cancel(ready.ID); got.State != store.RequestCancelled || string(got.Reply) != aDraft {
		t.Fatalf("ready → %+v; the dismissed reply stays as history", got)
	}
	failed := e.settle(e.begin(key, store.ModeSuggestion), store.RequestFailed, "provider exited 1")
	if got := cancel(failed.ID); got.State != store.RequestFailed || got.Reason != "provider exited 1" {
		t.Fatalf("failed → %+v", got)
	}
	consumed := e.ready(key, store.ModeSuggestion, addCard)
	e.update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(consumed.ID, 1); return err })
	if got := cancel(consumed.ID); got.State != store.RequestConsumed {
		t.Fatalf("consumed → %+v", got)
	}
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.CancelPlanRequest(requestIDs.UUID()); return err })
	wantRefusal(t, err, store.CodeNotFound)
}

// parseDoc is a plan document's items, as ImportPlan takes them.
func parseDoc(t *testing.T, doc string) []store.ItemInput {
	t.Helper()
	d, err := plan.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	items, err := store.ItemInputs(d)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func (e *env) items(key string, revision int) []store.PlanItem {
	e.t.Helper()
	var items []store.PlanItem
	if err := e.s.View(func(tx *store.Tx) (err error) { items, err = tx.PlanItems(key, revision); return err }); err != nil {
		e.t.Fatal(err)
	}
	return items
}

func specs(t *testing.T, items []store.PlanItem) []plan.Item {
	t.Helper()
	out := make([]plan.Item, len(items))
	for i, it := range items {
		s, err := plan.ParseSpec(it.Spec)
		if err != nil {
			t.Fatalf("item %d's spec: %v", it.Item, err)
		}
		out[i] = s
	}
	return out
}

// TestConsumeSuggestion: apply imports the cards as revision+1 through
// ImportPlan, moves the context, keeps the request as consumed and
// invalidates its siblings.
func TestConsumeSuggestion(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.update(func(tx *store.Tx) error {
		_, err := tx.ImportPlan(key, 1, parseDoc(t, `{"format": "codeboost-plan/1", "title": "P", "items": [
			{"title": "x", "instructions": "Do x.", "scope": ["x/"]},
			{"title": "y", "instructions": "Do y."},
			{"title": "z", "links": [{"item": 2, "kind": "depends-on"}, {"url": "https://example.com/1", "kind": "issue"}]}]}`))
		return err
	})
	sibling := e.ready(key, store.ModeDraft, aDraft)
	r := e.ready(key, store.ModeSuggestion, `[
		{"item": 1, "title": "x", "instructions": "", "kind": "remove"},
		{"item": 3, "title": "z, sharper", "instructions": "Do z well.", "kind": "change"},
		{"item": 0, "title": "w", "instructions": "Then w.", "kind": "add"}]`)
	before := e.task(key)
	var next int
	e.update(func(tx *store.Tx) (err error) { next, err = tx.ConsumePlanRequest(r.ID, 2); return err })
	if next != 3 || e.plan(key).Revision != 3 {
		t.Fatalf("new revision %d, plan at %d; want 3", next, e.plan(key).Revision)
	}
	got := specs(t, e.items(key, 3))
	want := []plan.Item{
		{Title: "y", Instructions: "Do y."},
		{Title: "z, sharper", Instructions: "Do z well.", Links: []plan.Link{{Item: 1, Kind: plan.KindDependsOn}, {URL: "https://example.com/1", Kind: plan.KindIssue}}},
		{Title: "w", Instructions: "Then w."},
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("revision 3's items:\n got %s\nwant %s", gj, wj)
	}
	if after := e.task(key); after.ContextGeneration != before.ContextGeneration+1 {
		t.Fatalf("context generation %d → %d, want +1", before.ContextGeneration, after.ContextGeneration)
	}
	consumed := e.request(r.ID)
	if consumed.State != store.RequestConsumed || consumed.Cause != "" || len(consumed.Reply) == 0 {
		t.Fatalf("applied request: %+v", consumed)
	}
	if s := e.request(sibling.ID); s.State != store.RequestInvalidated || s.Cause != "plan revision 3 replaced 2" {
		t.Fatalf("sibling draft: %s (%q), want invalidated by the new revision", s.State, s.Cause)
	}
}

func TestConsumeDraft(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.ready(key, store.ModeDraft, aDraft)
	var next int
	e.update(func(tx *store.Tx) (err error) { next, err = tx.ConsumePlanRequest(r.ID, 1); return err })
	got := specs(t, e.items(key, next))
	if next != 2 || len(got) != 2 || got[0].Title != "first" || got[0].Instructions != "Do it." || got[1].Title != "second" {
		t.Fatalf("revision %d: %+v", next, got)
	}
	wantState(t, e.request(r.ID), store.RequestConsumed)
}

// TestConsumeRefusals: "request ready and bound to the current revision and
// snapshot"; a refusal writes nothing.
func TestConsumeRefusals(t *testing.T) {
	consumeIn := func(e *env, id string, rev int) error {
		return e.s.Update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(id, rev); return err })
	}
	e := newEnv(t)
	key := e.newTask("")
	consume := func(id string, rev int) error { return consumeIn(e, id, rev) }
	pending := e.begin(key, store.ModeSuggestion)
	wantRefusal(t, consume(pending.ID, 1), store.CodeIllegal)
	e.settle(pending, store.RequestFailed, "x")
	wantRefusal(t, consume(requestIDs.UUID(), 1), store.CodeNotFound)

	empty := e.ready(key, store.ModeSuggestion, `[]`)
	if r := wantRefusal(t, consume(empty.ID, 1), store.CodeBadInput); !strings.Contains(r.Message, "no card") {
		t.Fatalf("empty suggestion: %s", r.Message)
	}
	all := e.ready(key, store.ModeSuggestion, `[{"item": 1, "title": "one", "instructions": "", "kind": "remove"},
		{"item": 2, "title": "two", "instructions": "", "kind": "remove"}]`)
	if r := wantRefusal(t, consume(all.ID, 1), store.CodeBadInput); !strings.Contains(r.Message, "removes every item") {
		t.Fatalf("remove all: %s", r.Message)
	}
	ready := e.ready(key, store.ModeSuggestion, twoChange)
	wantRefusal(t, consume(ready.ID, 2), store.CodeStaleVersion)
	if e.plan(key).Revision != 1 {
		t.Fatal("a refused apply made a revision")
	}
	for _, r := range []store.PlanRequest{empty, all, ready} {
		wantState(t, e.request(r.ID), store.RequestReady)
	}

	e.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") })
	if r := wantRefusal(t, consume(ready.ID, 1), store.CodeIllegal); !strings.Contains(r.Message, "snapshot snap-2 replaced snap-1") {
		t.Fatalf("invalidated request: %s; want its cause", r.Message)
	}

	t.Run("a link to a removed item", func(t *testing.T) {
		e := newEnv(t)
		key := e.newTask("")
		e.update(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, planItems(t, "a", "b")); return err })
		r := e.ready(key, store.ModeSuggestion, `[{"item": 1, "title": "a", "instructions": "", "kind": "remove"}]`)
		if ref := wantRefusal(t, consumeIn(e, r.ID, 2), store.CodeBadInput); !strings.Contains(ref.Message, "depends on item 1") {
			t.Fatalf("refusal: %s", ref.Message)
		}
		wantState(t, e.request(r.ID), store.RequestReady)
	})
	t.Run("bound elsewhere", func(t *testing.T) {
		// As in the CAS: a raw write stands for a plan that moved without
		// invalidating.
		e := newEnv(t)
		key := e.newTask("")
		r := e.ready(key, store.ModeSuggestion, addCard)
		e.rawExec(`UPDATE plans SET snapshot_id = 'snap-9' WHERE key = ?`, key)
		wantRefusal(t, consumeIn(e, r.ID, 1), store.CodeNotCurrent)
	})
}

// TestPlanChangesInvalidateRequests: "Revision and snapshot changes
// invalidate durable requests with their cause while retaining completed
// replies as stale history", for every Store method that moves the plan's
// revision or snapshot, in its own transaction; nothing else invalidates.
// Each case starts at revision 2, made by applying a draft, so that a
// consumed request is part of the history that must not change.
func TestPlanChangesInvalidateRequests(t *testing.T) {
	cases := []struct {
		name   string
		status words.TaskStatus
		// change is made before the pending request begins, so that it
		// may add a ready request of its own.
		change func(e *env, key string) func(*store.Tx) error
		cause  string // "": nothing may change
	}{
		{"import revision", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 2, []string{"a"}); return err }
		}, "plan revision 3 replaced 2"},
		{"import plan", "", func(e *env, key string) func(*store.Tx) error {
			items := planItems(e.t, "a")
			return func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 2, items); return err }
		}, "plan revision 3 replaced 2"},
		{"apply suggestion", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { _, err := tx.ApplySuggestion(key, 2, []string{"a"}); return err }
		}, "plan revision 3 replaced 2"},
		{"change snapshot", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") }
		}, "snapshot snap-2 replaced snap-1"},
		{"reject with feedback", words.StatusInReview, func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error {
				_, err := tx.RejectWithFeedback(key, requestIDs.UUID(), 2, []store.NoteInput{{Text: "again"}})
				return err
			}
		}, "plan revision 3 replaced 2"},
		{"consume another request", "", func(e *env, key string) func(*store.Tx) error {
			r := e.ready(key, store.ModeSuggestion, twoChange)
			return func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 2); return err }
		}, "plan revision 3 replaced 2"},
		{"same snapshot again", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-1") }
		}, ""},
		{"reassign", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { return tx.Reassign(key, "bob") }
		}, ""},
		{"record history", "", func(e *env, key string) func(*store.Tx) error {
			return func(tx *store.Tx) error { return tx.RecordHistory(key, "", "c0ffee") }
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask(c.status)
			other := e.newTask("")
			applied := e.ready(key, store.ModeDraft, `{"items": [{"title": "one", "instructions": ""}, {"title": "two", "instructions": ""}]}`)
			e.update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(applied.ID, 1); return err })
			failed := e.settle(e.begin(key, store.ModeSuggestion), store.RequestFailed, "provider exited 1")
			cancelled := e.settle(e.begin(key, store.ModeDraft), store.RequestCancelled, words.CancelledByUser)
			ready := e.ready(key, store.ModeSuggestion, addCard)
			readyDraft := e.ready(key, store.ModeDraft, aDraft)
			change := c.change(e, key)
			pending := e.begin(key, store.ModeSuggestion)
			elsewhere := e.begin(other, store.ModeSuggestion)
			history := []store.PlanRequest{e.request(applied.ID), failed, cancelled, elsewhere}
			e.clock.Advance(time.Second)
			e.update(change)
			for _, r := range []store.PlanRequest{ready, readyDraft, pending} {
				got := e.request(r.ID)
				if c.cause == "" {
					if got.State != r.State || got.Cause != "" {
						t.Errorf("%s request became %s (%q); nothing it is bound to moved", r.State, got.State, got.Cause)
					}
					continue
				}
				if got.State != store.RequestInvalidated || got.Cause != c.cause || !got.UpdatedAt.Equal(e.clock.Now()) {
					t.Errorf("%s request is %s (%q, at %v), want invalidated (%q) now", r.State, got.State, got.Cause, got.UpdatedAt, c.cause)
				}
				if string(got.Reply) != string(r.Reply) {
					t.Errorf("the invalidated request's reply changed: %s → %s", r.Reply, got.Reply)
				}
			}
			for _, was := range history {
				if got := e.request(was.ID); got.State != was.State || got.Cause != was.Cause || got.Reason != was.Reason ||
					string(got.Reply) != string(was.Reply) || !got.UpdatedAt.Equal(was.UpdatedAt) {
					t.Errorf("history changed: %+v → %+v", was, got)
				}
			}
		})
	}
}

// TestFailLeftoverPlanRequests: "every request an earlier process left
// pending is failed ('The server stopped before this request finished. Ask
// again.')"; ready results stay.
func TestFailLeftoverPlanRequests(t *testing.T) {
	e := newEnv(t)
	a, b := e.newTask(""), e.newTask("")
	ready := e.ready(a, store.ModeDraft, aDraft)
	p1, p2 := e.begin(a, store.ModeSuggestion), e.begin(b, store.ModeDraft)
	var n int
	e.update(func(tx *store.Tx) (err error) { n, err = tx.FailLeftoverPlanRequests(leftoverReason); return err })
	if n != 2 {
		t.Fatalf("failed %d leftovers, want 2", n)
	}
	for _, r := range []store.PlanRequest{p1, p2} {
		if got := e.request(r.ID); got.State != store.RequestFailed || got.Reason != leftoverReason {
			t.Fatalf("leftover: %+v", got)
		}
	}
	wantState(t, e.request(ready.ID), store.RequestReady)
	e.update(func(tx *store.Tx) (err error) { n, err = tx.FailLeftoverPlanRequests(leftoverReason); return err })
	if n != 0 {
		t.Fatalf("a second pass failed %d", n)
	}
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.FailLeftoverPlanRequests(""); return err })
	wantRefusal(t, err, store.CodeBadInput)
}

func TestParseCards(t *testing.T) {
	good := `[{"item": 1, "title": "one", "instructions": "a\tb\r\nc", "kind": "change"},
		{"item": 2, "title": "two", "instructions": "", "kind": "remove"},
		{"item": 0, "title": "new", "instructions": "", "kind": "add"},
		{"item": 0, "title": "newer", "instructions": "", "kind": "add"}]`
	cards, err := store.ParseCards([]byte(good), 2)
	if err != nil || len(cards) != 4 || cards[0].Instructions != "a\tb\r\nc" || cards[3].Title != "newer" {
		t.Fatalf("ParseCards(good): %+v, %v", cards, err)
	}
	if cards, err := store.ParseCards([]byte(` [] `), 2); err != nil || len(cards) != 0 {
		t.Fatalf("no card: %v, %v; nothing to suggest is an answer", cards, err)
	}
	card := func(fields string) string { return `[{` + fields + `}]` }
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"item":0,"title":"t","instructions":"","kind":"add"},`, store.MaxCards+1), ",") + "]"
	bad := []struct{ name, reply, words string }{
		{"not JSON", `[{`, "not valid JSON"},
		{"an object", `{"items": []}`, "JSON array of cards"},
		{"null", `null`, "JSON array of cards"},
		{"not UTF-8", "[\xff]", "UTF-8"},
		{"trailing data", `[] []`, "after top-level value"},
		{"unknown field", card(`"item": 0, "title": "t", "instructions": "", "kind": "add", "why": "x"`), "unknown field"},
		{"repeated key", card(`"item": 0, "title": "t", "instructions": "", "kind": "add", "title": "u"`), `[0]: duplicate key "title"`},
		{"key in another case", card(`"item": 0, "title": "t", "instructions": "", "kind": "add", "Kind": "remove"`), `[0]: unknown field "Kind"`},
		{"fractional item", card(`"item": 1.5, "title": "t", "instructions": "", "kind": "change"`), "not valid JSON"},
		{"unknown kind", card(`"item": 1, "title": "t", "instructions": "", "kind": "rename"`), `card 1: kind is "rename"`},
		{"no kind", card(`"item": 1, "title": "t", "instructions": ""`), `kind is ""`},
		{"add names an item", card(`"item": 1, "title": "t", "instructions": "", "kind": "add"`), "add card's item is 0"},
		{"change of item 0", card(`"item": 0, "title": "t", "instructions": "", "kind": "change"`), "1 to 2, not 0"},
		{"remove past the end", card(`"item": 3, "title": "t", "instructions": "", "kind": "remove"`), "1 to 2, not 3"},
		{"negative item", card(`"item": -1, "title": "t", "instructions": "", "kind": "change"`), "not -1"},
		{"two cards for one item", `[{"item": 2, "title": "t", "instructions": "", "kind": "change"},
			{"item": 2, "title": "t", "instructions": "", "kind": "remove"}]`, "card 2: item 2 already has card 1"},
		{"empty title", card(`"item": 0, "title": "", "instructions": "", "kind": "add"`), "title is empty"},
		{"blank title", card(`"item": 0, "title": "  ", "instructions": "", "kind": "add"`), "title is blank"},
		{"long title", card(`"item": 0, "title": "` + strings.Repeat("é", store.MaxCardTitle+1) + `", "instructions": "", "kind": "add"`), "201 characters"},
		{"two-line title", card(`"item": 0, "title": "a\nb", "instructions": "", "kind": "add"`), "control character"},
		{"long instructions", card(`"item": 0, "title": "t", "instructions": "` + strings.Repeat("x", store.MaxCardInstructions+1) + `", "kind": "add"`), "8 KiB"},
		{"control in instructions", card(`"item": 0, "title": "t", "instructions": "a\u0007", "kind": "add"`), "control character"},
		{"too many cards", many, fmt.Sprintf("%d cards; at most %d", store.MaxCards+1, store.MaxCards)},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := store.ParseCards([]byte(c.reply), 2)
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("ParseCards: %v; want an error saying %q", err, c.words)
			}
		})
	}
}

func TestParseDraft(t *testing.T) {
	items, err := store.ParseDraft([]byte(aDraft))
	if err != nil || len(items) != 2 || items[0].Title != "first" || items[0].Instructions != "Do it." {
		t.Fatalf("ParseDraft: %+v, %v", items, err)
	}
	many := `{"items": [` + strings.TrimSuffix(strings.Repeat(`{"title":"t","instructions":""},`, plan.MaxItems+1), ",") + `]}`
	bad := []struct{ name, reply, words string }{
		{"cards", addCard, "JSON object"},
		{"no items", `{"items": []}`, "1 to 200 items, not 0"},
		{"missing items", `{}`, "not 0"},
		{"too many", many, "not 201"},
		{"unknown field", `{"items": [{"title": "t", "instructions": "", "scope": []}]}`, "unknown field"},
		{"empty title", `{"items": [{"title": "t", "instructions": ""}, {"title": "", "instructions": ""}]}`, "item 2: title is empty"},
		{"trailing", aDraft + `{}`, "after top-level value"},
		{"repeated key", `{"items": [{"title": "t", "instructions": ""}], "items": []}`, `duplicate key "items"`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := store.ParseDraft([]byte(c.reply))
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("ParseDraft: %v; want an error saying %q", err, c.words)
			}
		})
	}
}

// TestPlanRequestsSurviveReopen: the rows are durable, reply, reasons and
// binding included.
func TestPlanRequestsSurviveReopen(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	e.publishedItem(key, "c1")
	ready := e.ready(key, store.ModeSuggestion, addCard)
	failed := e.settle(e.begin(key, store.ModeDraft), store.RequestFailed, "provider exited 1")
	pending := e.begin(key, store.ModeSuggestion)
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []store.PlanRequest
	if err := s.View(func(tx *store.Tx) (err error) { got, err = tx.PlanRequests(key); return err }); err != nil {
		t.Fatal(err)
	}
	want := []store.PlanRequest{ready, failed, pending}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("after reopening:\n got %s\nwant %s", gj, wj)
	}
}

// TestPlanRequestStatementErrorsPropagate runs the statement-fault sweep
// (statement_faults_test.go) over every planning request write and the
// invalidation inside a revision and a snapshot change: a storage error
// comes back as one, never as success or a refusal, and leaves the
// database as it was.
func TestPlanRequestStatementErrorsPropagate(t *testing.T) {
	withRequests := func(e *env) (key string, pending, ready store.PlanRequest) {
		key = e.newTask("")
		ready = e.ready(key, store.ModeDraft, aDraft)
		pending = e.begin(key, store.ModeSuggestion)
		return key, pending, ready
	}
	cases := []faultCase{
		{name: "begin", setup: func(e *env) func() error {
			key := e.newTask("")
			id := requestIDs.UUID()
			return e.inTx(func(tx *store.Tx) error {
				_, err := tx.BeginPlanRequest(key, store.ModeSuggestion, id, 1, "snap-1")
				return err
			})
		}},
		{name: "begin with a binding", setup: func(e *env) func() error {
			key := e.newTask(words.StatusRunning)
			e.publishedItem(key, "c1")
			id := requestIDs.UUID()
			return e.inTx(func(tx *store.Tx) error {
				_, err := tx.BeginPlanRequest(key, store.ModeSuggestion, id, 1, "snap-1")
				return err
			})
		}},
		{name: "complete", setup: func(e *env) func() error {
			_, p, _ := withRequests(e)
			return e.inTx(func(tx *store.Tx) error { return tx.CompletePlanRequest(p.ID, 1, "snap-1", []byte(twoChange)) })
		}},
		{name: "settle", setup: func(e *env) func() error {
			_, p, _ := withRequests(e)
			return e.inTx(func(tx *store.Tx) error {
				_, err := tx.SettlePlanRequest(p.ID, 1, "snap-1", store.RequestFailed, "x")
				return err
			})
		}},
		{name: "cancel", setup: func(e *env) func() error {
			_, _, r := withRequests(e)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.CancelPlanRequest(r.ID); return err })
		}},
		{name: "consume", setup: func(e *env) func() error {
			_, _, r := withRequests(e)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, 1); return err })
		}},
		{name: "fail leftovers", setup: func(e *env) func() error {
			withRequests(e)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.FailLeftoverPlanRequests(leftoverReason); return err })
		}},
		{name: "import invalidates", setup: func(e *env) func() error {
			key, _, _ := withRequests(e)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 1, []string{"a"}); return err })
		}},
		{name: "snapshot invalidates", setup: func(e *env) func() error {
			key, _, _ := withRequests(e)
			return e.inTx(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") })
		}},
		{name: "readers", setup: func(e *env) func() error {
			key, p, _ := withRequests(e)
			return e.inView(func(tx *store.Tx) error {
				if _, err := tx.PlanRequests(key); err != nil {
					return err
				}
				_, err := tx.PlanRequest(p.ID)
				return err
			})
		}},
	}
	for _, c := range cases {
		for _, mode := range faultModes {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				sweepStatements(t, c, mode.value)
			})
		}
	}
}
