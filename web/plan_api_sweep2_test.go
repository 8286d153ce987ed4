package web

import (
	"encoding/json"
	"testing"
)

// TestPlanStartRefusedBodyStartsNothing: a start whose body is refused
// (an unknown member after valid ones) is one 400 bad-input and starts no
// planning request, although the members before the unknown one were
// read.
// Sweep survivor (seed 20261203): web/plan_requests_api.go:Server.postPlanStart:drop-guard:8170eacc.
func TestPlanStartRefusedBodyStartsNothing(t *testing.T) {
	f := planFixture(t, true)
	body := json.RawMessage(`{"task":"demo","actionId":"` + f.actionID() + `","expectedRevision":1,"expectedSnapshot":"s1","bogus":1}`)
	rec := f.do("POST", "/api/plan/suggestions", body)
	if e := oneError(t, "a refused body", rec.Body.Bytes()); rec.Code != 400 || e.Error.Code != codeBadInput {
		t.Fatalf("refused body: %d %s", rec.Code, rec.Body)
	}
	if n := f.actionCount(); n != 0 {
		t.Fatalf("%d user actions after a refused body, want none", n)
	}
}

// TestPlanStartBadTargetIsOneReply: a start with a bad action ID or an
// unknown task is one 400 or 404 and nothing else: the handler does not go
// on to start a request for a task it did not find.
// Sweep survivor (seed 20261203): web/plan_requests_api.go:Server.postPlanStart:drop-guard:0ca12934.
func TestPlanStartBadTargetIsOneReply(t *testing.T) {
	f := planFixture(t, true)
	for _, c := range []struct {
		body PlanStart
		want int
		code string
	}{
		{PlanStart{Task: "demo", ActionID: "x", ExpectedRevision: 1, ExpectedSnapshot: "s1"}, 400, codeBadInput},
		{PlanStart{Task: "nope", ActionID: f.actionID(), ExpectedRevision: 1, ExpectedSnapshot: "s1"}, 404, codeNotFound},
	} {
		rec := f.do("POST", "/api/plan/drafts", c.body)
		if e := oneError(t, "a bad target", rec.Body.Bytes()); rec.Code != c.want || e.Error.Code != c.code {
			t.Errorf("%+v: %d %s, want %d %s", c.body, rec.Code, rec.Body, c.want, c.code)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Fatalf("%d user actions after bad targets, want none", n)
	}
}
