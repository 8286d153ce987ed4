package suggest_test

// The user actions around a planning request (StartAction, CancelAction,
// Apply): the feedback-event contract's rules ("the same actionId with the
// same request hash returns the saved response and applies nothing";
// "Only outcomes that applied nothing for a passing reason are not
// recorded, so the UI may resend them: … and a storage error"; "each
// kind's routes refuse the other's IDs"), walked on the harness's world.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

var actionIDs = ids.NewSeeded(505)

// startAction is StartAction for key's plan as it stands, under actionID,
// with the caller's items left out (the provider plans from the bound
// revision's).
func (w *world) startAction(actionID, key, mode string) (store.Response, error) {
	req := w.request(key, mode)
	req.Items = nil
	return w.c.StartAction(context.Background(), actionID, req)
}

func (w *world) cancelAction(actionID, key, mode, id string) (store.Response, error) {
	return w.c.CancelAction(context.Background(), key, actionID, mode, id)
}

// TestStartActionLife: a start as a user action is recorded with its
// outcome: admitted (the saved response names the request, the provider
// plans from the bound revision's items), or refused for a reason the
// user can act on (no provider, GitHub's issue unreadable, the plan's
// invocation not finished, a stale caller); a replay answers the saved
// response and starts nothing, reads no issue. Closing answers
// ErrClosing and records nothing.
func TestStartActionLife(t *testing.T) {
	t.Run("admitted, then replayed", func(t *testing.T) {
		issues := 0
		w := newWorld(t, func(c *suggest.Config) {
			c.Issue = func(context.Context, string) (string, error) { issues++; return "Crash on empty input", nil }
		})
		a := actionIDs.UUID()
		resp, err := w.startAction(a, w.key, store.ModeSuggestion)
		if err != nil || resp.AttemptID == "" || resp.Replayed {
			t.Fatalf("StartAction: %+v, %v; want admitted", resp, err)
		}
		in := w.prov.inputs[0]
		if in.RequestID != resp.AttemptID || len(in.Items) != 2 || in.Items[1].Title != "two" || in.Issue != "Crash on empty input" {
			t.Fatalf("the provider's input %+v; want the bound revision's items and the issue", in)
		}
		again, err := w.startAction(a, w.key, store.ModeSuggestion)
		if err != nil || !again.Replayed || again.AttemptID != resp.AttemptID || len(w.prov.inputs) != 1 || issues != 1 {
			t.Fatalf("the replay: %+v, %v, %d starts, %d issue reads; want the saved response only", again, err, len(w.prov.inputs), issues)
		}
	})
	t.Run("the caller's items", func(t *testing.T) {
		w := newWorld(t)
		req := w.request(w.key, store.ModeDraft)
		req.Items = []store.PlanItem{{Item: 1, Title: "mine"}}
		if _, err := w.c.StartAction(context.Background(), actionIDs.UUID(), req); err != nil {
			t.Fatal(err)
		}
		if in := w.prov.inputs[0]; len(in.Items) != 1 || in.Items[0].Title != "mine" {
			t.Fatalf("the provider's items %+v; want the caller's", in.Items)
		}
	})
	refusals := []struct {
		name, code string
		opts       []config
		arm        func(w *world)
	}{
		{name: "no provider", code: suggest.CodeUnavailable, opts: []config{noProvider}},
		{name: "the issue cannot be read", code: suggest.CodeGitHubFailed, opts: []config{func(c *suggest.Config) {
			c.Issue = func(context.Context, string) (string, error) { return "", errors.New("GitHub is down") }
		}}},
		{name: "the plan's invocation has not finished", code: store.CodeActiveAttempt,
			arm: func(w *world) { w.start(w.key, store.ModeDraft) }},
		{name: "a stale caller", code: store.CodeStaleVersion,
			arm: func(w *world) {
				if err := w.st.Update(func(tx *store.Tx) error {
					return tx.ChangeSnapshot(w.key, "snap-2")
				}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.opts...)
			a := actionIDs.UUID()
			req := w.request(w.key, store.ModeSuggestion)
			if c.arm != nil {
				c.arm(w)
			}
			starts := len(w.prov.inputs)
			resp, err := w.c.StartAction(context.Background(), a, req)
			if r, ok := store.IsRefusal(err); !ok || resp.Outcome != "refused" || r.Code != c.code {
				t.Fatalf("StartAction: %+v, %v; want the recorded refusal %s", resp, err, c.code)
			}
			resp, err = w.c.StartAction(context.Background(), a, req)
			if _, ok := store.IsRefusal(err); !ok || !resp.Replayed {
				t.Fatalf("the replay: %+v, %v; want the saved refusal", resp, err)
			}
			if len(w.prov.inputs) != starts {
				t.Fatal("a refused start reached the provider")
			}
		})
	}
	t.Run("the caller leaves while the issue is read", func(t *testing.T) {
		for _, issueErr := range []error{nil, errors.New("GitHub is down")} {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := newWorld(t, func(c *suggest.Config) {
				c.Issue = func(context.Context, string) (string, error) { cancel(); return "", issueErr }
			})
			req := w.request(w.key, store.ModeSuggestion)
			resp, err := w.c.StartAction(ctx, actionIDs.UUID(), req)
			if err == nil || len(w.prov.inputs) != 0 || len(requestsOf(w, w.key)) != 0 {
				t.Fatalf("issue error %v: %+v, %v; want the context's error and nothing started", issueErr, resp, err)
			}
		}
	})
	t.Run("closing", func(t *testing.T) {
		w := newWorld(t)
		w.c.Close()
		w.loop.Drain()
		if _, err := w.startAction(actionIDs.UUID(), w.key, store.ModeSuggestion); !errors.Is(err, suggest.ErrClosing) {
			t.Fatalf("StartAction after Close: %v; want ErrClosing", err)
		}
		// After Close, a start answers at once: it reads no issue from
		// GitHub (a network call the shutdown would wait for) and records
		// nothing. Sweep survivor (seed 918273):
		// suggest/actions.go:Coordinator.StartAction:drop-guard:6535f35f.
		issues := 0
		c := newWorld(t, func(c *suggest.Config) {
			c.Issue = func(context.Context, string) (string, error) { issues++; return "issue", nil }
		})
		c.c.Close()
		c.loop.Drain()
		closed := actionIDs.UUID()
		if _, err := c.startAction(closed, c.key, store.ModeSuggestion); !errors.Is(err, suggest.ErrClosing) || issues != 0 {
			t.Fatalf("StartAction after Close, with GitHub configured: %v, %d issue reads; want ErrClosing and none", err, issues)
		}
		if _, saved, err := c.st.SavedAction(store.Action{PlanKey: c.key, ActionID: closed,
			Kind: suggest.ActionKind(store.ModeSuggestion, suggest.VerbStart)}); err != nil || saved {
			t.Fatalf("the start refused by Close was recorded: %v, %v", saved, err)
		}
		// Close lands while GitHub answers the issue, before admission.
		var g *world
		g = newWorld(t, func(c *suggest.Config) {
			c.Issue = func(context.Context, string) (string, error) { g.c.Close(); return "", nil }
		})
		a := actionIDs.UUID()
		if _, err := g.startAction(a, g.key, store.ModeSuggestion); !errors.Is(err, suggest.ErrClosing) {
			t.Fatalf("StartAction whose issue read met Close: %v; want ErrClosing", err)
		}
		if len(g.prov.inputs) != 0 || len(requestsOf(g, g.key)) != 0 {
			t.Fatal("a start admitted after Close")
		}
	})
}

// TestStartActionStatementFaults fails each statement of a start's user
// action in turn: a storage error records nothing and starts no provider
// (the same action then admits), never a half-made start.
func TestStartActionStatementFaults(t *testing.T) {
	for _, mode := range []string{store.ModeSuggestion, store.ModeDraft} {
		for k := 1; ; k++ {
			w := newWorld(t, func(c *suggest.Config) {
				c.Issue = func(context.Context, string) (string, error) { return "issue", nil }
			})
			a := actionIDs.UUID()
			req := w.request(w.key, mode)
			req.Items = nil
			terms := "1*return"
			if k > 1 {
				terms = strconv.Itoa(k-1) + "*off->1*return"
			}
			if err := w.fp.Enable("store/statement", terms); err != nil {
				t.Fatal(err)
			}
			resp, err := w.c.StartAction(context.Background(), a, req)
			reached := true
			for i := 0; i < k; i++ {
				if w.fp.Fire("store/statement") {
					reached = false
					break
				}
			}
			w.fp.Disable("store/statement")
			if !reached {
				if err != nil || len(w.prov.inputs) != 1 {
					t.Fatalf("%s: the unfaulted start: %+v, %v", mode, resp, err)
				}
				break
			}
			if err == nil {
				if len(w.prov.inputs) != 1 || len(w.prov.inputs[0].Items) != 2 {
					t.Fatalf("%s, statement %d failed: admitted %+v, provider inputs %+v; want the bound items", mode, k, resp, w.prov.inputs)
				}
				continue
			}
			if _, ok := store.IsRefusal(err); ok {
				t.Fatalf("%s, statement %d failed: a refusal %v; a storage error is no refusal", mode, k, err)
			}
			if len(w.prov.inputs) != 0 || len(requestsOf(w, w.key)) != 0 {
				t.Fatalf("%s, statement %d failed: %v, yet a request was made or started", mode, k, err)
			}
			if resp, err := w.c.StartAction(context.Background(), a, req); err != nil || resp.Replayed {
				t.Fatalf("%s, statement %d: the action sent again: %+v, %v; want it admitted, not replayed", mode, k, resp, err)
			}
		}
	}
}

// TestCancelActionLife: a cancel as a user action: the request must be
// of the route's mode and of the plan (else "Unknown suggestion
// request." / "Unknown draft request.", recorded); a running request is
// cancelled on disk and its provider asked to stop once; a replay stops
// nothing more. A storage error records nothing and stops nothing.
func TestCancelActionLife(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	for _, c := range []struct {
		name, key, mode, id, want string
	}{
		{"the other mode's route", w.key, store.ModeDraft, id, words.UnknownDraftRequest},
		{"another plan's route", w.other, store.ModeSuggestion, id, words.UnknownSuggestionRequest},
		{"no such request", w.key, store.ModeSuggestion, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", words.UnknownSuggestionRequest},
	} {
		resp, err := w.cancelAction(actionIDs.UUID(), c.key, c.mode, c.id)
		if r, ok := store.IsRefusal(err); !ok || r.Code != store.CodeNotFound || r.Message != c.want || resp.Outcome != "refused" {
			t.Fatalf("%s: %+v, %v; want the recorded refusal %q", c.name, resp, err, c.want)
		}
	}
	if len(h.cancels) != 0 || w.row(id).State != store.RequestPending {
		t.Fatalf("a refused cancel stopped the request: %v, %s", h.cancels, w.row(id).State)
	}

	if err := w.fp.Enable("store/statement", "1*return"); err != nil {
		t.Fatal(err)
	}
	a := actionIDs.UUID()
	_, err := w.cancelAction(a, w.key, store.ModeSuggestion, id)
	w.fp.Disable("store/statement")
	if err == nil || len(h.cancels) != 0 || w.row(id).State != store.RequestPending {
		t.Fatalf("a cancel whose first statement failed: %v, cancels %v, row %s; want the error and nothing stopped", err, h.cancels, w.row(id).State)
	}
	var done string               // the action that cancelled, past every faulted statement
	for k := 2; done == ""; k++ { // each later statement of the cancel's write
		if err := w.fp.Enable("store/statement", strconv.Itoa(k-1)+"*off->1*return"); err != nil {
			t.Fatal(err)
		}
		b := actionIDs.UUID()
		_, err := w.cancelAction(b, w.key, store.ModeSuggestion, id)
		w.fp.Disable("store/statement")
		if err == nil {
			done = b
			break
		}
		if len(h.cancels) != 0 || w.row(id).State != store.RequestPending {
			t.Fatalf("statement %d of a cancel failed: %v, yet cancels %v, row %s", k, err, h.cancels, w.row(id).State)
		}
	}
	if len(h.cancels) != 1 || h.cancels[0] != "cancelled" || w.row(id).State != store.RequestCancelled {
		t.Fatalf("cancels %v, row %s; want one cancel and the row cancelled", h.cancels, w.row(id).State)
	}
	resp, err := w.cancelAction(done, w.key, store.ModeSuggestion, id)
	if err != nil || !resp.Replayed || len(h.cancels) != 1 {
		t.Fatalf("the replay: %+v, %v, cancels %v; want the saved response, nothing more stopped", resp, err, h.cancels)
	}
	w.noResult(id)
	w.fail(h, "stopped")
	w.want(id, words.Cancelled, store.RequestCancelled, words.CancelledByUser)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.c.CancelAction(ctx, w.key, actionIDs.UUID(), store.ModeSuggestion, id); err == nil {
		t.Fatal("CancelAction whose event never ran: no error")
	}
	if row, err := w.c.Cancel(ctx, id, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Cancel whose event never ran: %+v, %v; want context.Canceled", row, err)
	}
}

// TestApplyAReadyRequest: Apply makes a ready request's reply the next
// revision, inside the apply's user action; the other mode's route, a
// request it does not know and a stale expected revision are refused and
// change nothing.
func TestApplyAReadyRequest(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	w.reply(h, cards)
	rev := w.plan(w.key).Revision
	apply := func(mode, rid string, expected int) (store.Response, error) {
		return w.st.UserAction(suggest.ApplyAction(w.key, actionIDs.UUID(), mode, rid, expected),
			func(tx *store.Tx) (store.Response, error) { return suggest.Apply(tx, w.key, mode, rid, expected) })
	}
	for _, c := range []struct {
		name, mode, id string
		expected       int
		code           string
	}{
		{"the draft route", store.ModeDraft, id, rev, store.CodeNotFound},
		{"an unknown request", store.ModeSuggestion, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaab", rev, store.CodeNotFound},
		{"a stale revision", store.ModeSuggestion, id, rev - 1, ""},
	} {
		if _, err := apply(c.mode, c.id, c.expected); err == nil || (c.code != "" && !strings.Contains(err.Error(), "Unknown")) {
			t.Fatalf("%s: %v; want refused", c.name, err)
		}
		if w.plan(w.key).Revision != rev || w.row(id).State != store.RequestReady {
			t.Fatalf("%s changed the plan", c.name)
		}
	}
	resp, err := apply(store.ModeSuggestion, id, rev)
	if err != nil || resp.Message != "plan revision "+strconv.Itoa(rev+1) || w.plan(w.key).Revision != rev+1 {
		t.Fatalf("Apply: %+v, %v; want plan revision %d", resp, err, rev+1)
	}
	if err := w.fp.Enable("store/statement", "1*return"); err != nil {
		t.Fatal(err)
	}
	err = w.st.View(func(tx *store.Tx) error { _, err := suggest.Request(tx, w.key, store.ModeSuggestion, id); return err })
	w.fp.Disable("store/statement")
	if err == nil || strings.Contains(err.Error(), "Unknown") {
		t.Fatalf("Request whose read failed: %v; want the storage error, not Unknown", err)
	}
}
