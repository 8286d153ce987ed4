package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// The guards every route shares, walked over the whole route list at once:
// a refusal is exactly one JSON error reply with the right status and
// code, and stores nothing. A handler whose guard answered and then went
// on would append a second reply (or act on a task that is not there), so
// each row decodes the body as one JSON value.

// guardRoute is one route of the API as the table walks it. A POST has a
// body builder (a valid body for task and actionID, with extra fields
// merged in) and its body limit; a GET a query or path with "{task}" and
// "{id}" to fill.
type guardRoute struct {
	method, path string
	limit        int64
	body         func(task, actionID string) map[string]any
}

// unknownID is a lowercase UUID v4 that names no attempt and no planning
// request.
const unknownID = "00000000-0000-4000-8000-00000000abcd"

func guardRoutes() []guardRoute {
	action := func(extra map[string]any) func(task, actionID string) map[string]any {
		return func(task, actionID string) map[string]any {
			b := map[string]any{"task": task, "actionId": actionID}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
	}
	doc := `{"format": "codeboost-plan/1", "title": "T", "items": [{"title": "one"}]}`
	return []guardRoute{
		{"GET", "/api/runner?task={task}", 0, nil},
		{"GET", "/api/review?task={task}", 0, nil},
		{"GET", "/api/output?task={task}&attempt={id}", 0, nil},
		{"GET", "/api/diff?task={task}&attempt={id}", 0, nil},
		{"GET", "/api/merge?task={task}", 0, nil},
		{"GET", "/api/questions?task={task}", 0, nil},
		{"GET", "/api/plan/requests?task={task}", 0, nil},
		{"GET", "/api/plan/suggestions/{id}", 0, nil},
		{"GET", "/api/plan/drafts/{id}", 0, nil},
		{"POST", "/api/runner", maxRunnerBody, action(map[string]any{"action": "start", "expectedStateVersion": 0})},
		{"POST", "/api/review", maxReviewBody, action(map[string]any{"action": "approve", "item": 1, "expectedReviewVersion": 0})},
		{"POST", "/api/plan/import", maxImportBody, action(map[string]any{"expectedRevision": 1, "plan": doc})},
		{"POST", "/api/merge", maxReviewBody, action(map[string]any{"expectedStateVersion": 0, "expectedReviewVersion": 0})},
		{"POST", "/api/questions", maxQuestionBody, action(map[string]any{"text": "why?"})},
		{"POST", "/api/plan/suggestions", maxPlanRequestBody, action(map[string]any{"expectedRevision": 1, "expectedSnapshot": "s1"})},
		{"POST", "/api/plan/drafts", maxPlanRequestBody, action(map[string]any{"expectedRevision": 1, "expectedSnapshot": "s1"})},
		{"POST", "/api/plan/suggestions/{id}/cancel", maxPlanRequestBody, action(nil)},
		{"POST", "/api/plan/drafts/{id}/cancel", maxPlanRequestBody, action(nil)},
		{"POST", "/api/plan/suggestions/{id}/apply", maxPlanRequestBody, action(map[string]any{"expectedRevision": 1})},
		{"POST", "/api/plan/drafts/{id}/apply", maxPlanRequestBody, action(map[string]any{"expectedRevision": 1})},
	}
}

func (g guardRoute) url(task, id string) string {
	return strings.NewReplacer("{task}", task, "{id}", id).Replace(g.path)
}

func (g guardRoute) String() string { return g.method + " " + g.path }

// allRoutesFixture is the fixture's server with every optional part
// configured (merge, questions, planning), so that every route exists.
func allRoutesFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, 2)
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Tasks: []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}},
		Merges: f.w.Merge, Questions: f.w.Ask, Planning: f.w.Suggest})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	return f
}

// send serves one request in-process; body is sent as it is, with its
// length declared unless undeclared is set.
func (f *fixture) send(method, url string, body []byte, undeclared bool) *httptest.ResponseRecorder {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
		if undeclared {
			r = io.MultiReader(r) // no length: read until the limit cuts it
		}
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, httptest.NewRequest(method, url, r))
	return rec
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantOneError checks that rec is exactly one JSON error reply with this
// status and code, sent as JSON.
func wantOneError(t *testing.T, what string, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	e := oneError(t, what, rec.Body.Bytes())
	if rec.Code != status || e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("%s: %d %s, want %d %s", what, rec.Code, rec.Body, status, code)
	}
	if ct := rec.Result().Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want JSON", what, ct)
	}
}

// TestEveryRouteRefusesBadInputWithOneError: "The server validates it
// [the actionId] before opening any transaction: it must be a lowercase
// UUID v4 ..., or the request is refused with HTTP 400 and nothing is
// stored"; a task the configuration does not name is 404; a body that is
// not strict JSON for the action is 400 and one over the route's limit is
// 413 (declared or not); a path ID that is not a lowercase UUID v4 is 400
// before any transaction (plan_requests_api.go). For every route, each
// refusal is one error reply and nothing is recorded.
func TestEveryRouteRefusesBadInputWithOneError(t *testing.T) {
	f := allRoutesFixture(t)
	for _, g := range guardRoutes() {
		if g.body == nil {
			wantOneError(t, g.String()+" unknown task", f.send("GET", g.url("nope", unknownID), nil, false), 404, codeNotFound)
			if strings.Contains(g.path, "{id}") {
				wantOneError(t, g.String()+" bad ID", f.send("GET", g.url("demo", "NOT-A-UUID"), nil, false), 400, codeBadInput)
				wantOneError(t, g.String()+" upper-case ID", f.send("GET", g.url("demo", strings.ToUpper("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")), nil, false), 400, codeBadInput)
			}
			continue
		}
		url := g.url("demo", unknownID)
		valid := func(extra map[string]any) []byte {
			b := g.body("demo", f.actionID())
			for k, v := range extra {
				b[k] = v
			}
			return mustJSON(t, b)
		}
		raw := string(valid(nil))
		for _, c := range []struct {
			name       string
			body       []byte
			undeclared bool
			status     int
			code       string
		}{
			{"unknown task", mustJSON(t, g.body("nope", f.actionID())), false, 404, codeNotFound},
			{"action ID not a UUID", valid(map[string]any{"actionId": "not-a-uuid"}), false, 400, codeBadInput},
			{"upper-case action ID", valid(map[string]any{"actionId": "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"}), false, 400, codeBadInput},
			{"no action ID", valid(map[string]any{"actionId": ""}), false, 400, codeBadInput},
			{"unknown key", valid(map[string]any{"surprise": 1}), false, 400, codeBadInput},
			{"duplicate key", []byte(strings.Replace(raw, "{", `{"task":"demo",`, 1)), false, 400, codeBadInput},
			{"trailing value", []byte(raw + "{}"), false, 400, codeBadInput},
			{"not JSON", []byte("task=demo"), false, 400, codeBadInput},
			{"no body", nil, false, 400, codeBadInput},
			{"over the limit", bytes.Repeat([]byte(" "), int(g.limit)+1), false, 413, codeTooLarge},
			{"over the limit, undeclared", bytes.Repeat([]byte(" "), int(g.limit)+1), true, 413, codeTooLarge},
		} {
			wantOneError(t, g.String()+" "+c.name, f.send("POST", url, c.body, c.undeclared), c.status, c.code)
		}
		if strings.Contains(g.path, "{id}") {
			wantOneError(t, g.String()+" bad path ID", f.send("POST", g.url("demo", "NOT-A-UUID"), valid(nil), false), 400, codeBadInput)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user actions recorded by refused input, want none", n)
	}
	if n := f.attempts(); n != 0 {
		t.Errorf("%d attempts admitted by refused input, want none", n)
	}
}

// TestEveryRouteAnswersAFailedStoreReadAs500: a read or write the Store
// cannot do is a storage error, "not recorded", answered 500
// storage-error and never a partial or empty 200 (an ignored read error
// would answer the empty list); the live output and the diff view say 404
// for an attempt they cannot read ("404 means no such attempt").
func TestEveryRouteAnswersAFailedStoreReadAs500(t *testing.T) {
	f := allRoutesFixture(t)
	for _, g := range guardRoutes() {
		var body []byte
		if g.body != nil {
			body = mustJSON(t, g.body("demo", f.actionID()))
		}
		status, code := 500, codeStorage
		if strings.Contains(g.path, "attempt=") {
			status, code = 404, codeNotFound
		}
		for _, spec := range []string{"return", "1*return"} {
			if err := f.w.FP.Enable("store/statement", spec); err != nil {
				t.Fatal(err)
			}
			rec := f.send(g.method, g.url("demo", unknownID), body, false)
			f.w.FP.Disable("store/statement")
			wantOneError(t, g.String()+" with store/statement "+spec, rec, status, code)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user actions recorded by failed writes, want none", n)
	}
}

// TestEveryRouteIs503WhileStopping: shutdown step 1, "New API requests
// get HTTP 503" ("The review server is shutting down."), every route
// alike, and nothing is recorded ("HTTP 503 during shutdown" is not).
func TestEveryRouteIs503WhileStopping(t *testing.T) {
	f := allRoutesFixture(t)
	f.srv.SetStopping()
	for _, g := range guardRoutes() {
		var body []byte
		if g.body != nil {
			body = mustJSON(t, g.body("demo", f.actionID()))
		}
		wantOneError(t, g.String()+" while stopping", f.send(g.method, g.url("demo", unknownID), body, false), http.StatusServiceUnavailable, codeShuttingDown)
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user actions recorded during shutdown, want none", n)
	}
}

// TestEveryRouteAnswersAValidRequestOnce: the same table's valid requests
// get past every guard: each answers one JSON value with the status the
// route gives a task with no history (200, or the recorded 409 of a
// refused action, or 404 for an attempt or planning request that is not
// there), never an error of the guards above.
func TestEveryRouteAnswersAValidRequestOnce(t *testing.T) {
	f := allRoutesFixture(t)
	for _, g := range guardRoutes() {
		var body []byte
		if g.body != nil {
			body = mustJSON(t, g.body("demo", f.actionID()))
		}
		rec := f.send(g.method, g.url("demo", unknownID), body, false)
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Errorf("%s: not one JSON value (%v): %s", g, err, rec.Body)
			continue
		}
		switch {
		case rec.Code == 200, rec.Code == 409 && v["outcome"] == "refused":
		case rec.Code == 404 && strings.Contains(g.path, "{id}") && g.method == "GET":
		default:
			t.Errorf("%s: %d %s", g, rec.Code, rec.Body)
		}
	}
}

// TestPlanRequestsOfATaskWithNoPlanAreNone: GET /api/plan/requests for a
// configured task the Store has no plan for yet is "no plan yet: no
// request either", an empty 200, not a storage error.
func TestPlanRequestsOfATaskWithNoPlanAreNone(t *testing.T) {
	f := newFixture(t, 1)
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Planning: f.w.Suggest,
		Tasks: []Task{{Name: "fresh", Identity: store.Identity{RepositoryID: "repo", TaskID: "t-new", PlanID: "plan"}}}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	rec := f.send("GET", "/api/plan/requests?task=fresh", nil, false)
	var r PlanRequestsReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); rec.Code != 200 || err != nil || r.Revision != 0 || len(r.Requests) != 0 || r.Requests == nil {
		t.Fatalf("no plan yet: %d %s", rec.Code, rec.Body)
	}
}

// TestReviewLoadOfAFullViewNeverHidesAFailedRead: the review load is
// "never a partial view" also when every part of the view has something
// to lose: with an approval a later choice made stale and a saved choice,
// whichever of the load's statements fails, the answer is 500
// storage-error or the whole view, never the view without them.
func TestReviewLoadOfAFullViewNeverHidesAFailedRead(t *testing.T) {
	f := newFixture(t, 2)
	if err := f.w.Store.Update(func(tx *store.Tx) error {
		if _, err := tx.Approve(f.key, 1); err != nil {
			return err
		}
		return tx.AcceptSegment(f.key, f.actionID(), "segment-1")
	}); err != nil {
		t.Fatal(err)
	}
	base := f.send("GET", "/api/review?task=demo", nil, false)
	var view ReviewReply
	if err := json.Unmarshal(base.Body.Bytes(), &view); err != nil || base.Code != 200 || len(view.Choices) == 0 || !view.Items[0].StaleApproval {
		t.Fatalf("the base view has no stale approval or no choice: %v %d %s", err, base.Code, base.Body)
	}
	reviewLoadIsWholeOr500(t, f, base)
}
