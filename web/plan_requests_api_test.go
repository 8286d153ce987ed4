package web

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// planFixture is the fixture with the Planning API: the world's suggestion
// coordinator (its simulated provider), or one built without a provider.
func planFixture(t *testing.T, withProvider bool) *fixture {
	f := newFixture(t, 2)
	var p Planning = f.w.Suggest
	if !withProvider {
		c, err := suggest.New(suggest.Config{Store: f.w.Store, Loop: f.w.Loop, // no provider: no settlement, so no capability
			Clock: f.w.Clock, IDs: ids.NewSeeded(9)})
		if err != nil {
			t.Fatal(err)
		}
		p = c
	}
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Tasks: []Task{{Name: "demo", Identity: store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}}},
		Planning: p})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	return f
}

func planReplyOf(t *testing.T, rec *httptest.ResponseRecorder) PlanActionReply {
	t.Helper()
	var r PlanActionReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return r
}

// TestPlanningNotAvailable: "Without a github block, or in a demo, the
// server returns 'Planning agent not available yet'": a recorded refusal
// (409, planning-unavailable), replayed as such.
func TestPlanningNotAvailable(t *testing.T) {
	f := planFixture(t, false)
	body := PlanStart{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, ExpectedSnapshot: "s1"}
	for i := 0; i < 2; i++ {
		rec := f.do("POST", "/api/plan/suggestions", body)
		r := planReplyOf(t, rec)
		if rec.Code != 409 || r.Code != suggest.CodeUnavailable || r.Message != words.PlanningNotAvailable || r.Replayed != (i == 1) {
			t.Fatalf("send %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	if n := f.actionCount(); n != 1 {
		t.Fatalf("%d user actions, want the one recorded refusal", n)
	}
}

// TestPlanningBadInput: bounded bodies and 400 before any transaction for
// an unsafe path ID, a bad action ID or a missing expectation; no route
// without Options.Planning.
func TestPlanningBadInput(t *testing.T) {
	f := planFixture(t, true)
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/api/plan/suggestions/not-a-uuid", nil, 400},
		{"GET", "/api/plan/drafts/AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", nil, 400},
		{"POST", "/api/plan/suggestions/..%2f..%2fx/cancel", PlanRequestAction{Task: "demo", ActionID: f.actionID()}, 400},
		{"POST", "/api/plan/drafts/00000000-0000-4000-8000-000000000999/apply", PlanRequestAction{Task: "demo", ActionID: "x", ExpectedRevision: 1}, 400},
		{"POST", "/api/plan/suggestions", PlanStart{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1}, 400},
		{"POST", "/api/plan/suggestions", map[string]any{"task": "demo", "surprise": 1}, 400},
		{"POST", "/api/plan/suggestions", map[string]any{"task": string(make([]byte, 5000))}, 413},
		{"GET", "/api/plan/suggestions/00000000-0000-4000-8000-000000000999", nil, 404},
	} {
		if rec := f.do(c.method, c.path, c.body); rec.Code != c.want {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, rec.Code, c.want, rec.Body)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Fatalf("%d user actions recorded by bad input", n)
	}
	bare := newFixture(t, 1)
	if rec := bare.do("POST", "/api/plan/suggestions", PlanStart{Task: "demo", ActionID: bare.actionID(), ExpectedRevision: 1, ExpectedSnapshot: "s1"}); rec.Code != 404 && rec.Code != 405 {
		t.Fatalf("without Planning: %d %s", rec.Code, rec.Body)
	}
}

// TestPlanningStartSettleApply: the routes end to end over the
// simulated provider: start, ready, the list, apply as the next revision.
func TestPlanningStartSettleApply(t *testing.T) {
	f := planFixture(t, true)
	rec := f.do("POST", "/api/plan/suggestions", PlanStart{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, ExpectedSnapshot: "s1"})
	r := planReplyOf(t, rec)
	if rec.Code != 200 || r.Request == nil || r.Request.State != store.RequestPending {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	if err := f.w.Planner.Settle(r.RequestID, []byte(`[{"item":1,"title":"Item one, sharper","instructions":"x","kind":"change"}]`), ""); err != nil {
		t.Fatal(err)
	}
	f.w.Loop.Drain()
	var list PlanRequestsReply
	rec = f.do("GET", "/api/plan/requests?task=demo", nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Requests) != 1 || list.Requests[0].State != store.RequestReady {
		t.Fatalf("list: %v %s", err, rec.Body)
	}
	rec = f.do("POST", "/api/plan/suggestions/"+r.RequestID+"/apply", PlanRequestAction{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1})
	if a := planReplyOf(t, rec); rec.Code != 200 || a.Revision != 2 || a.Message != "plan revision 2" || a.Request.State != store.RequestConsumed {
		t.Fatalf("apply: %d %s", rec.Code, rec.Body)
	}
}
