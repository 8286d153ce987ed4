package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The handler runs in-process against a simulated world: the real
// coordinator and a real SQLite file, with the sim loop delivering every
// event on the test's goroutine, so each request's effects are complete
// when it returns.

type fixture struct {
	t   testing.TB
	w   *simWorld
	srv *Server
	key string
	n   int // action IDs handed out
}

func newFixture(t testing.TB, items int) *fixture {
	t.Helper()
	w := newSimWorld(t)
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	titles := make([]string, items)
	for i := range titles {
		titles[i] = fmt.Sprintf("item %d", i+1)
	}
	if err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: titles, Status: words.StatusInReview})
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Runner: w.Runner, Store: w.Store, Clock: w.Clock, Tasks: []Task{{Name: "demo", Repository: "demo-repo", Identity: id}}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, w: w, srv: srv, key: id.Key()}
}

// actionID is a fresh lowercase UUID v4, distinct per call.
func (f *fixture) actionID() string {
	f.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", f.n)
}

func (f *fixture) do(method, path string, body any) *httptest.ResponseRecorder {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, r)
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return rec
}

func (f *fixture) status() TaskStatus {
	f.t.Helper()
	rec := f.do("GET", "/api/runner?task=demo", nil)
	if rec.Code != 200 {
		f.t.Fatalf("GET /api/runner: %d %s", rec.Code, rec.Body)
	}
	var r RunnerReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || len(r.Tasks) != 1 {
		f.t.Fatalf("GET /api/runner: %v %s", err, rec.Body)
	}
	return r.Tasks[0]
}

func (f *fixture) actionCount() int {
	f.t.Helper()
	var n int
	if err := f.w.Store.View(func(tx *store.Tx) (err error) { n, err = tx.UserActionCount(f.key); return err }); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) attempts() int {
	f.t.Helper()
	as, err := f.w.Store.Attempts(f.key)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(as)
}

func decodeReply(t *testing.T, rec *httptest.ResponseRecorder) ActionReply {
	t.Helper()
	var r ActionReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return r
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (code, message string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return e.Error.Code, e.Error.Message
}

func (f *fixture) approveAll(items int) {
	f.t.Helper()
	for i := 1; i <= items; i++ {
		item := i
		rv := f.status().ReviewVersion
		rec := f.do("POST", "/api/review", ReviewAction{Task: "demo", Action: "approve", ActionID: f.actionID(), Item: &item, ExpectedReviewVersion: rv})
		if rec.Code != 200 {
			f.t.Fatalf("approve %d: %d %s", i, rec.Code, rec.Body)
		}
	}
}

func TestRunnerStatusFields(t *testing.T) {
	f := newFixture(t, 1)
	rec := f.do("GET", "/api/runner", nil)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var raw struct {
		Tasks []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || len(raw.Tasks) != 1 {
		t.Fatalf("%v %s", err, rec.Body)
	}
	for _, field := range []string{"task", "attempts", "available", "stateVersion", "reviewVersion", "retryable", "startable", "resumable", "unresolved", "stopRequested"} {
		if _, ok := raw.Tasks[0][field]; !ok {
			t.Errorf("GET /api/runner lacks %q: %s", field, rec.Body)
		}
	}
	if st := f.status(); st.Startable {
		t.Errorf("startable before any item is approved: %+v", st)
	}
	f.approveAll(1)
	if st := f.status(); !st.Startable || st.Task.Status != string(words.StatusInReview) {
		t.Errorf("not startable once every item is approved: %+v", st)
	}
	if rec := f.do("GET", "/api/runner?task=nope", nil); rec.Code != 404 {
		t.Errorf("unknown task: %d", rec.Code)
	}
}

// TestActionIDChecked is R088's server half: a 10 KB action ID, one that is
// not a UUID and an uppercase one are 400, and nothing is stored.
func TestActionIDChecked(t *testing.T) {
	f := newFixture(t, 1)
	for _, id := range []string{strings.Repeat("a", 10<<10), "not-a-uuid", "", "00000000-0000-4000-8000-00000000000A", "00000000-0000-1000-8000-000000000001"} {
		sv := f.status().StateVersion
		rec := f.do("POST", "/api/runner", RunnerAction{Task: "demo", Action: "start", ExpectedStateVersion: sv, ActionID: id})
		if rec.Code != 400 {
			t.Errorf("action ID %.20q: %d %s", id, rec.Code, rec.Body)
		}
		if len(rec.Body.String()) > 1024 {
			t.Errorf("action ID %.20q: the reply echoes it: %d bytes", id, rec.Body.Len())
		}
		item := 1
		rec = f.do("POST", "/api/review", ReviewAction{Task: "demo", Action: "change-note", ActionID: id, Item: &item, Text: "x"})
		if rec.Code != 400 {
			t.Errorf("review with action ID %.20q: %d %s", id, rec.Code, rec.Body)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user_actions rows after refused action IDs", n)
	}
	if f.status().StateVersion != 0 {
		t.Errorf("state version moved")
	}
}

// TestStartReplayAndReuse: start admits one attempt; the same action ID and
// request replays the saved response with no second attempt (R042); the
// same ID with another request is 409 "Action ID already used" and applies
// nothing (R043).
func TestStartReplayAndReuse(t *testing.T) {
	f := newFixture(t, 1)
	f.approveAll(1)
	st := f.status()
	start := RunnerAction{Task: "demo", Action: "start", ExpectedStateVersion: st.StateVersion, ExpectedReviewVersion: st.ReviewVersion, ActionID: f.actionID()}
	rec := f.do("POST", "/api/runner", start)
	if rec.Code != 200 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	first := decodeReply(t, rec)
	if first.Replayed || first.AttemptID == "" || first.Status == nil || len(first.Status.Attempts) != 1 {
		t.Fatalf("start reply: %s", rec.Body)
	}
	actions := f.actionCount()
	rec = f.do("POST", "/api/runner", start)
	again := decodeReply(t, rec)
	if rec.Code != 200 || !again.Replayed || again.Outcome != first.Outcome || again.AttemptID != first.AttemptID {
		t.Fatalf("replay: %d %s, first %+v", rec.Code, rec.Body, first)
	}
	if f.attempts() != 1 || f.actionCount() != actions {
		t.Fatalf("replay applied something: %d attempts, %d actions (was %d)", f.attempts(), f.actionCount(), actions)
	}
	other := start
	other.Action = "cancel-task"
	rec = f.do("POST", "/api/runner", other)
	if rec.Code != 409 {
		t.Fatalf("reused action ID: %d %s", rec.Code, rec.Body)
	}
	if r := decodeReply(t, rec); r.Message != words.ActionIDAlreadyUsed || r.Status == nil {
		t.Errorf("reused action ID reply: %s", rec.Body)
	}
	if f.attempts() != 1 || f.actionCount() != actions || f.status().Task.CancelRequested {
		t.Errorf("reused action ID applied something")
	}
}

// TestStaleVersionRecorded: a stale expectedStateVersion is 409 with the
// current state; the refusal is recorded, so its replay after the state
// moved returns the same 409 and applies nothing (R047).
func TestStaleVersionRecorded(t *testing.T) {
	f := newFixture(t, 1)
	f.approveAll(1)
	st := f.status()
	stale := RunnerAction{Task: "demo", Action: "start", ExpectedStateVersion: st.StateVersion - 1, ExpectedReviewVersion: st.ReviewVersion, ActionID: f.actionID()}
	rec := f.do("POST", "/api/runner", stale)
	r := decodeReply(t, rec)
	if rec.Code != 409 || r.Code != store.CodeStaleVersion || r.Status == nil || r.Status.StateVersion != st.StateVersion {
		t.Fatalf("stale start: %d %s", rec.Code, rec.Body)
	}
	rec = f.do("POST", "/api/runner", RunnerAction{Task: "demo", Action: "start", ExpectedStateVersion: st.StateVersion, ExpectedReviewVersion: st.ReviewVersion, ActionID: f.actionID()})
	if rec.Code != 200 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	rec = f.do("POST", "/api/runner", stale)
	again := decodeReply(t, rec)
	if rec.Code != 409 || !again.Replayed || again.Code != store.CodeStaleVersion || again.Message != r.Message {
		t.Fatalf("replayed refusal: %d %s", rec.Code, rec.Body)
	}
	if f.attempts() != 1 {
		t.Errorf("%d attempts", f.attempts())
	}
}

// TestReviewActionWithEvent: a change note saves its note and its
// feedback event in one transaction; a replay adds neither (R038).
func TestReviewActionWithEvent(t *testing.T) {
	f := newFixture(t, 2)
	item := 2
	note := ReviewAction{Task: "demo", Action: "change-note", ActionID: f.actionID(), Item: &item, Text: "keep the old flag"}
	for i := 0; i < 2; i++ {
		rec := f.do("POST", "/api/review", note)
		if rec.Code != 200 {
			t.Fatalf("change note: %d %s", rec.Code, rec.Body)
		}
		if r := decodeReply(t, rec); r.Replayed != (i == 1) {
			t.Fatalf("send %d: replayed=%v", i, r.Replayed)
		}
	}
	var events, notes int
	if err := f.w.Store.View(func(tx *store.Tx) error {
		var err error
		if events, err = tx.EventCount(f.key, "change-request"); err != nil {
			return err
		}
		ns, err := tx.Notes(f.key)
		notes = len(ns)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if events != 1 || notes != 1 {
		t.Errorf("%d events, %d notes after a resend, want 1 and 1", events, notes)
	}
	rec := f.do("GET", "/api/review?task=demo", nil)
	var rv ReviewReply
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || len(rv.Notes) != 1 || len(rv.Items) != 2 {
		t.Errorf("review load: %v %s", err, rec.Body)
	}
}

// TestBadInputStoresNothing: malformed bodies, unknown fields, unknown
// actions and out-of-bound texts are 400 before any transaction.
func TestBadInputStoresNothing(t *testing.T) {
	f := newFixture(t, 1)
	id := f.actionID()
	for _, c := range []struct{ body, want string }{
		{`not json`, ""},
		{`{"task":"demo","action":"start","actionId":"` + id + `","extra":1}`, `unknown field \"extra\"`},
		{`{"task":"demo","action":"explode","actionId":"` + id + `"}`, `unknown runner action \"explode\"`},
		{`{"task":"demo","action":"cancel","actionId":"` + id + `"}`, "cancel needs an attemptId"},
		{`{"task":"demo","action":"start","attemptId":"x","actionId":"` + id + `"}`, "start takes no attemptId"},
		{`{"task":"demo","action":"retry","attemptId":"x","actionId":"` + id + `"}`, "attemptId is not an attempt ID"},
		{`{"task":"demo","action":"start","actionId":"` + id + `"} {}`, ""},
	} {
		req := httptest.NewRequest("POST", "/api/runner", strings.NewReader(c.body))
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.body, rec.Code, rec.Body, c.want)
		}
	}
	item := 1
	long := strings.Repeat("é", store.MaxFeedbackText+1)
	rec := f.do("POST", "/api/review", ReviewAction{Task: "demo", Action: "change-note", ActionID: id, Item: &item, Text: long})
	if rec.Code != 400 {
		t.Errorf("over-long note: %d", rec.Code)
	}
	if rec := f.do("POST", "/api/runner", RunnerAction{Task: "other", Action: "start", ActionID: id}); rec.Code != 404 {
		t.Errorf("unknown task: %d", rec.Code)
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user_actions rows after bad input", n)
	}
}

// TestBodiesAreStrictJSON: an API body's keys match exactly and once, and
// none is unknown (issue 19: {"Task": …} was processed as "task"): each is
// 400 naming the key, and nothing is stored.
// kills: mutant/json-keys-case-insensitive mutant/json-duplicate-keys-allowed
func TestBodiesAreStrictJSON(t *testing.T) {
	f := newFixture(t, 1)
	f.approveAll(1)
	st := f.status()
	before := f.actionCount()
	id := f.actionID()
	start := fmt.Sprintf(`"action":"start","expectedStateVersion":%d,"expectedReviewVersion":%d,"actionId":"%s"`, st.StateVersion, st.ReviewVersion, id)
	note := `"action":"change-note","item":1,"text":"keep it","actionId":"` + id + `"`
	for _, tc := range []struct{ path, body, want string }{
		{"/api/runner", `{"Task":"demo",` + start + `}`, `unknown field "Task" (keys match exactly, case included)`},
		{"/api/runner", `{"task":"demo","task":"demo",` + start + `}`, `duplicate key "task"`},
		{"/api/runner", `{"task":"demo","TASK":"other",` + start + `}`, `unknown field "TASK"`},
		{"/api/runner", `{"task":"demo",` + start + `,"force":true}`, `unknown field "force"`},
		{"/api/review", `{"Task":"demo",` + note + `}`, `unknown field "Task"`},
		{"/api/review", `{"task":"demo",` + note + `,"text":"other"}`, `duplicate key "text"`},
		{"/api/review", `{"task":"demo",` + note + `,"Text":"other"}`, `unknown field "Text"`},
		{"/api/review", `{"task":"demo","action":"reject","actionId":"` + id + `","notes":[{"text":"a","Text":"b"}]}`, `notes[0]: unknown field "Text"`},
	} {
		req := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		code, msg := errorOf(t, rec)
		if rec.Code != 400 || code != codeBadInput || !strings.Contains(msg, tc.want) {
			t.Errorf("POST %s %s: %d %s %q, want 400 naming %q", tc.path, tc.body, rec.Code, code, msg, tc.want)
		}
	}
	if n := f.actionCount(); n != before || f.attempts() != 0 {
		t.Errorf("%d user actions (was %d), %d attempts after refused bodies", n, before, f.attempts())
	}
	var notes int
	if err := f.w.Store.View(func(tx *store.Tx) error { ns, err := tx.Notes(f.key); notes = len(ns); return err }); err != nil {
		t.Fatal(err)
	}
	if notes != 0 {
		t.Errorf("%d notes after refused bodies", notes)
	}
}

// TestOversizedBodyNotRead: a body declared over its limit is 413 before
// a byte of it is read, and a body with no declared length is read to
// just past its limit and no further; both 413s close the connection
// (issue 19; tcp_test.go has the same over a real connection).
func TestOversizedBodyNotRead(t *testing.T) {
	f := newFixture(t, 1)
	for _, declared := range []bool{true, false} {
		src := &countingReader{r: strings.NewReader(strings.Repeat("x", maxRunnerBody*4))}
		req := httptest.NewRequest("POST", "/api/runner", src)
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
		if declared {
			req.ContentLength, req.TransferEncoding = maxRunnerBody*4, nil
		}
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 413 {
			t.Fatalf("declared=%v: %d %s", declared, rec.Code, rec.Body)
		}
		if want := map[bool]int{true: 0, false: maxRunnerBody + 1}[declared]; src.n != want {
			t.Errorf("declared=%v: read %d bytes before the 413, want %d", declared, src.n, want)
		}
		if rec.Header().Get("Connection") != "close" {
			t.Errorf("declared=%v: the 413 keeps a connection whose body was not read", declared)
		}
	}
	if n := f.actionCount(); n != 0 {
		t.Errorf("%d user actions after refused bodies", n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestStoppingIs503: once stopping is set, every new request is 503 with
// the contract's words and records nothing; a reply sent before a declared
// body was read says Connection: close (R004).
func TestStoppingIs503(t *testing.T) {
	f := newFixture(t, 1)
	f.srv.SetStopping()
	for _, path := range []string{"/api/runner", "/api/review?task=demo"} {
		rec := f.do("GET", path, nil)
		if code, msg := errorOf(t, rec); rec.Code != 503 || code != codeShuttingDown || msg != words.ServerShuttingDown {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := f.do("POST", "/api/runner", RunnerAction{Task: "demo", Action: "start", ActionID: f.actionID()})
	if rec.Code != 503 || rec.Header().Get("Connection") != "close" {
		t.Errorf("POST while stopping: %d, Connection %q", rec.Code, rec.Header().Get("Connection"))
	}
	if f.actionCount() != 0 {
		t.Errorf("a 503 was recorded")
	}
}

// TestStepOneWhileRequestsArrive: step 1 is set while two goroutines keep
// sending requests; each request is admitted or answered 503, and once one
// is 503 every later one is. The flag is written and read under one lock:
// under -race (make race, and the mutation sweep's race pass) a write or
// read outside it is reported here, where requests' reads and step 1's
// write meet.
func TestStepOneWhileRequestsArrive(t *testing.T) {
	// Each round's meeting is left to the scheduler; three rounds make
	// the race detector's chance of missing a bad order about 1 in 1000
	// (measured: it saw one in 9 of 10 single rounds).
	for range 3 {
		stepOneWhileRequestsArrive(t)
	}
}

func stepOneWhileRequestsArrive(t *testing.T) {
	f := newFixture(t, 1)
	h := f.srv.Handler()
	var sent atomic.Int64
	codes := make(chan []int, 2)
	send := func(count bool) {
		var got []int
		for {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/no-such-page", nil))
			if count {
				sent.Add(1)
			}
			got = append(got, rec.Code)
			if rec.Code == http.StatusServiceUnavailable && len(got) > 1 {
				break
			}
		}
		codes <- got
	}
	go send(false)
	go send(true)
	for sent.Load() < 50 {
		runtime.Gosched()
	}
	// Let both send on, without synchronizing with them again: the reads
	// they make meanwhile are ordered before step 1's write only by s.mu.
	for range 2000 {
		runtime.Gosched()
	}
	f.srv.SetStopping()
	for range 2 {
		got := <-codes
		first := slices.Index(got, http.StatusServiceUnavailable)
		for i, c := range got {
			if (i < first && c != http.StatusNotFound) || (i >= first && c != http.StatusServiceUnavailable) {
				t.Fatalf("request %d of %d answered %d (the first 503 was request %d)", i+1, len(got), c, first+1)
			}
		}
	}
}

// TestMethodNotAllowedClosesUnreadBody: a 405 sent before a declared body
// was read closes the connection.
func TestMethodNotAllowedClosesUnreadBody(t *testing.T) {
	f := newFixture(t, 1)
	rec := f.do("PUT", "/api/runner", map[string]string{"a": "b"})
	if rec.Code != 405 || rec.Header().Get("Connection") != "close" {
		t.Errorf("PUT: %d, Connection %q", rec.Code, rec.Header().Get("Connection"))
	}
	rec = f.do("GET", "/api/runner", nil)
	if rec.Header().Get("Connection") == "close" {
		t.Errorf("a GET without a body closes its connection")
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, 1)
	f.do("POST", "/api/runner", RunnerAction{Task: "demo", Action: "start", ActionID: "bad"})
	rec := f.do("GET", "/metrics", nil)
	body := rec.Body.String()
	for _, want := range []string{`codeboost_attempts{state="running"} 0`, "codeboost_runner_slots_in_use 0", "codeboost_unresolved_markers 0",
		`codeboost_user_actions_total{outcome="bad-input"} 1`, "codeboost_recovery_duration_seconds", "codeboost_leftover_objects_reported"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestStaticScreen(t *testing.T) {
	f := newFixture(t, 1)
	rec := f.do("GET", "/", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "codeboost") {
		t.Errorf("GET /: %d %.200s", rec.Code, rec.Body)
	}
}

// TestPlanImport: a plan document becomes the next revision, with its
// items' specs; a bad document is 400 and stores nothing; a stale expected
// revision is a recorded 409.
func TestPlanImport(t *testing.T) {
	f := newFixture(t, 1)
	doc := `{"format":"codeboost-plan/1","title":"Fix the parser","items":[
		{"title":"Handle empty input","instructions":"Return an empty AST.","files":[{"op":"modify","path":"parse/parse.go"}],"scope":["parse/"]},
		{"title":"Test it","instructions":"Add a table test.","files":[{"op":"create","path":"parse/empty_test.go"}],"scope":["parse/"],"links":[{"item":1,"kind":"depends-on"}]}]}`
	rec := f.do("POST", "/api/plan/import", PlanImport{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, Plan: `{"format":"nope"}`})
	if rec.Code != 400 {
		t.Fatalf("bad document: %d %s", rec.Code, rec.Body)
	}
	if f.actionCount() != 0 {
		t.Fatalf("a bad document was recorded")
	}
	imp := PlanImport{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, Plan: doc}
	rec = f.do("POST", "/api/plan/import", imp)
	if rec.Code != 200 || decodeReply(t, rec).Message != "plan revision 2" {
		t.Fatalf("import: %d %s", rec.Code, rec.Body)
	}
	var rv ReviewReply
	rec = f.do("GET", "/api/review?task=demo", nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rv.Revision != 2 || len(rv.Items) != 2 || !strings.Contains(string(rv.Items[1].Spec), `"parse/empty_test.go"`) {
		t.Fatalf("review after import: %v %s", err, rec.Body)
	}
	imp.ActionID = f.actionID()
	rec = f.do("POST", "/api/plan/import", imp)
	if r := decodeReply(t, rec); rec.Code != 409 || r.Code != store.CodeStaleVersion {
		t.Fatalf("stale import: %d %s", rec.Code, rec.Body)
	}
	if f.actionCount() != 2 {
		t.Errorf("%d actions, want the import and the recorded refusal", f.actionCount())
	}
}
