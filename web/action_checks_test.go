package web

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestEveryActionFieldIsCheckedAtItsBound walks the fields each writing
// action checks before any transaction ("bad input is 400 and stores
// nothing"), at the bound: the value just outside is one 400 bad-input
// error and records nothing; the value just inside gets past the check
// (whatever the Store then answers, it is not the check's 400). Text is
// "4000 characters or fewer", a review key 1 to store.MaxReviewKey bytes,
// an item a plan item number (1 or more), a rejection 1 to 200 notes.
func TestEveryActionFieldIsCheckedAtItsBound(t *testing.T) {
	f := allRoutesFixture(t)
	one, zero := 1, 0
	text := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes
	key := func(n int) string { return strings.Repeat("k", n) }
	notes := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"text": "note"}
		}
		return out
	}
	type row struct {
		path string
		body map[string]any
		bad  bool // outside the bound: 400
	}
	review := func(fields map[string]any, bad bool) row {
		b := map[string]any{"task": "demo"}
		for k, v := range fields {
			b[k] = v
		}
		return row{"/api/review", b, bad}
	}
	runner := func(fields map[string]any, bad bool) row {
		b := map[string]any{"task": "demo", "expectedStateVersion": 0}
		for k, v := range fields {
			b[k] = v
		}
		return row{"/api/runner", b, bad}
	}
	rows := []row{
		review(map[string]any{"action": "nope"}, true),
		review(map[string]any{"action": "approve", "item": zero}, true),
		review(map[string]any{"action": "approve"}, true),
		review(map[string]any{"action": "approve", "item": one, "expectedReviewVersion": -1}, true),
		review(map[string]any{"action": "approve", "item": one, "expectedReviewVersion": 0}, false),
		review(map[string]any{"action": "change-note", "item": one, "text": ""}, true),
		review(map[string]any{"action": "change-note", "item": one, "text": text(store.MaxFeedbackText + 1)}, true),
		review(map[string]any{"action": "change-note", "item": one, "text": text(store.MaxFeedbackText)}, false),
		review(map[string]any{"action": "change-note", "item": zero, "text": "t"}, true),
		review(map[string]any{"action": "guidance", "text": ""}, true),
		review(map[string]any{"action": "guidance", "text": text(store.MaxFeedbackText + 1)}, true),
		review(map[string]any{"action": "guidance", "text": text(store.MaxFeedbackText)}, false),
		review(map[string]any{"action": "accept-segment", "choiceKey": ""}, true),
		review(map[string]any{"action": "accept-segment", "choiceKey": key(store.MaxReviewKey + 1)}, true),
		review(map[string]any{"action": "accept-segment", "choiceKey": key(store.MaxReviewKey)}, false),
		review(map[string]any{"action": "assign-segment", "choiceKey": "k", "item": zero}, true),
		review(map[string]any{"action": "assign-segment", "choiceKey": key(store.MaxReviewKey + 1), "item": one}, true),
		review(map[string]any{"action": "assign-segment", "choiceKey": "k", "item": one}, false),
		review(map[string]any{"action": "accept-finding", "findingId": ""}, true),
		review(map[string]any{"action": "accept-finding", "findingId": key(store.MaxReviewKey + 1)}, true),
		review(map[string]any{"action": "accept-finding", "findingId": key(store.MaxReviewKey)}, false),
		review(map[string]any{"action": "approve-continuation", "expectedStateVersion": -1}, true),
		review(map[string]any{"action": "approve-continuation", "expectedReviewVersion": -1}, true),
		review(map[string]any{"action": "approve-continuation"}, false),
		review(map[string]any{"action": "reject", "expectedRevision": 0, "notes": notes(1)}, true),
		review(map[string]any{"action": "reject", "expectedRevision": 1, "notes": notes(0)}, true),
		review(map[string]any{"action": "reject", "expectedRevision": 1, "notes": notes(201)}, true),
		review(map[string]any{"action": "reject", "expectedRevision": 1, "notes": []map[string]any{{"text": ""}}}, true),
		review(map[string]any{"action": "reject", "expectedRevision": 1, "notes": []map[string]any{{"text": "t", "item": 0}}}, true),
		review(map[string]any{"action": "reject", "expectedRevision": 1, "notes": notes(200)}, false),
		runner(map[string]any{"action": "nope"}, true),
		runner(map[string]any{"action": "cancel"}, true),
		runner(map[string]any{"action": "retry"}, true),
		runner(map[string]any{"action": "run-again"}, true),
		runner(map[string]any{"action": "start", "attemptId": unknownID}, true),
		runner(map[string]any{"action": "cancel", "attemptId": "NOT-AN-ID"}, true),
		runner(map[string]any{"action": "cancel", "attemptId": unknownID}, false),
		runner(map[string]any{"action": "cancel-task"}, false),
		{"/api/plan/import", map[string]any{"task": "demo", "expectedRevision": 0, "plan": `{"format": "codeboost-plan/1", "title": "T", "items": [{"title": "one"}]}`}, true},
		{"/api/plan/import", map[string]any{"task": "demo", "expectedRevision": 1, "plan": `{"format": "nope"}`}, true},
		{"/api/plan/suggestions", map[string]any{"task": "demo", "expectedRevision": 0, "expectedSnapshot": "s1"}, true},
		{"/api/plan/drafts", map[string]any{"task": "demo", "expectedRevision": 1, "expectedSnapshot": ""}, true},
		{"/api/plan/suggestions/" + unknownID + "/apply", map[string]any{"task": "demo", "expectedRevision": 0}, true},
		{"/api/plan/drafts/" + unknownID + "/apply", map[string]any{"task": "demo", "expectedRevision": 1}, false},
	}
	for _, r := range rows {
		r.body["actionId"] = f.actionID()
		before := f.actionCount()
		rec := f.send("POST", r.path, mustJSON(t, r.body), false)
		what := r.path + " " + string(mustJSON(t, r.body))
		if len(what) > 160 {
			what = what[:160] + "…"
		}
		if r.bad {
			wantOneError(t, what, rec, 400, codeBadInput)
			if n := f.actionCount(); n != before {
				t.Errorf("%s: refused as bad input, but %d user actions were recorded", what, n-before)
			}
			continue
		}
		if rec.Code == 400 {
			t.Errorf("%s: within its bound, refused by the check: %s", what, rec.Body)
		}
	}
}
