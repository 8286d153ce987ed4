package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// Tests for the survivors of the seed-60221 sweep in store/.

// TestCompletePlanRequestTakesAReplyOfExactlyOneMiB: a planning reply is
// held to "at most" MaxPlanReply bytes (1 MiB), so the limit itself is
// allowed. A valid suggestion padded with JSON whitespace to MaxPlanReply+1
// bytes is refused as bad input for its size and leaves the request
// pending; the same reply at exactly MaxPlanReply bytes is not refused:
// the request becomes ready with the reply stored byte for byte.
// Sweep survivor (seed 60221): store/requests.go:Tx.CompletePlanRequest:boundary:c25a3f5e.
func TestCompletePlanRequestTakesAReplyOfExactlyOneMiB(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.begin(key, store.ModeSuggestion)
	padded := func(n int) []byte { return []byte(addCard + strings.Repeat(" ", n-len(addCard))) }

	over := padded(store.MaxPlanReply + 1)
	err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, r.Revision, r.SnapshotID, over) })
	want := fmt.Sprintf("the planning reply is %d bytes; at most %d (1 MiB)", store.MaxPlanReply+1, store.MaxPlanReply)
	if ref := wantRefusal(t, err, store.CodeBadInput); ref.Message != want {
		t.Fatalf("a reply of MaxPlanReply+1 bytes: refusal %q, want %q", ref.Message, want)
	}
	wantState(t, e.request(r.ID), store.RequestPending)

	exact := padded(store.MaxPlanReply)
	if err := e.s.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, r.Revision, r.SnapshotID, exact) }); err != nil {
		t.Fatalf("a valid reply of exactly MaxPlanReply (%d) bytes: %v (code %q), want it taken", store.MaxPlanReply, err, store.RefusalCode(err))
	}
	got := e.request(r.ID)
	wantState(t, got, store.RequestReady)
	if len(got.Reply) != store.MaxPlanReply || string(got.Reply) != string(exact) {
		t.Fatalf("stored reply is %d bytes, want the %d bytes given", len(got.Reply), store.MaxPlanReply)
	}
}

// TestConsumePlanRequestChecksTheCallersRevisionFirst: expectedRevision is
// the caller's compare-and-swap on the plan revision, and it is checked
// before anything about the request's reply: a caller whose revision is
// not the plan's (one behind or one ahead) is told its view is stale
// (stale-version, naming both revisions), even when the request is ready
// and bound to the plan's present revision and snapshot and its reply
// could not be applied anyway (a suggestion with no card). The refusal
// writes nothing: the plan stays at its revision and the request stays
// ready with its reply. Only a caller at the present revision gets to the
// reply's own refusal.
// Sweep survivor (seed 60221): store/requests.go:Tx.ConsumePlanRequest:drop-guard:0879e230.
func TestConsumePlanRequestChecksTheCallersRevisionFirst(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.ready(key, store.ModeSuggestion, `[]`)
	p := e.plan(key)
	if r.Revision != p.Revision || r.SnapshotID != p.SnapshotID {
		t.Fatalf("request bound to revision %d on %s; the plan is at %d on %s", r.Revision, r.SnapshotID, p.Revision, p.SnapshotID)
	}
	consume := func(rev int) error {
		return e.s.Update(func(tx *store.Tx) error { _, err := tx.ConsumePlanRequest(r.ID, rev); return err })
	}
	for _, rev := range []int{p.Revision - 1, p.Revision + 1} {
		want := fmt.Sprintf("plan is at revision %d, not %d", p.Revision, rev)
		if ref := wantRefusal(t, consume(rev), store.CodeStaleVersion); ref.Message != want {
			t.Fatalf("consuming with expected revision %d: refusal %q, want %q", rev, ref.Message, want)
		}
		if after := e.plan(key); after.Revision != p.Revision || after.SnapshotID != p.SnapshotID {
			t.Fatalf("a refused consume moved the plan to revision %d on %s", after.Revision, after.SnapshotID)
		}
		got := e.request(r.ID)
		wantState(t, got, store.RequestReady)
		if string(got.Reply) != `[]` || got.Cause != "" {
			t.Fatalf("a refused consume changed the request: reply %s, cause %q", got.Reply, got.Cause)
		}
	}
	if ref := wantRefusal(t, consume(p.Revision), store.CodeBadInput); !strings.Contains(ref.Message, "no card") {
		t.Fatalf("consuming an empty suggestion at the present revision: %q, want its cards refused", ref.Message)
	}
}
