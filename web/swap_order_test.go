package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests for the order of two adjacent steps, where the contract or the
// code's comments require one: each names the swap-steps mutant it kills.

// TestResendAfterTheTaskIsRenamedReplays: a user action's recorded request
// names the plan by its key, never by the task's configured name ("the
// action ID is the key, the task is the plan key"): the name is cleared
// from the request before it is recorded, so a resend of the same action
// after the task was renamed in the configuration (same identity) is the
// same request and replays the saved reply, instead of 409 "Action ID
// already used". This holds for a review action and a plan import.
//
// Kills web/review_api.go:Server.postReview:swap-steps:7a21600e and
// web/plan_api.go:Server.postPlanImport:swap-steps:b1ec6719 (the name
// cleared only after the action was recorded with it).
func TestResendAfterTheTaskIsRenamedReplays(t *testing.T) {
	f := newFixture(t, 1)
	renamed, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock,
		Tasks: []Task{{Name: "renamed", Identity: f.srv.tasks["demo"].Identity}}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(srv *Server, path string, body any) ActionReply {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(b)))
		if rec.Code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
		return decodeReply(t, rec)
	}

	item := 1
	note := ReviewAction{Task: "demo", Action: "change-note", ActionID: f.actionID(), Item: &item, Text: "keep the flag"}
	if r := send(f.srv, "/api/review", note); r.Replayed {
		t.Fatalf("the first note was a replay")
	}
	note.Task = "renamed"
	if r := send(renamed, "/api/review", note); !r.Replayed {
		t.Errorf("the note resent under the task's new name: %+v, want the saved reply replayed", r)
	}

	doc := `{"format":"codeboost-plan/1","title":"Fix the parser","items":[
		{"title":"Handle empty input","instructions":"Return an empty AST.","files":[{"op":"modify","path":"parse/parse.go"}],"scope":["parse/"]}]}`
	imp := PlanImport{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, Plan: doc}
	if r := send(f.srv, "/api/plan/import", imp); r.Replayed || r.Message != "plan revision 2" {
		t.Fatalf("the import: %+v", r)
	}
	imp.Task = "renamed"
	if r := send(renamed, "/api/plan/import", imp); !r.Replayed || r.Message != "plan revision 2" {
		t.Errorf("the import resent under the task's new name: %+v, want the saved reply replayed", r)
	}
}

// writeProbe is a ResponseWriter that runs onBody once, at the first write
// of the reply's body: what a caller of Handler sees when the reply reaches
// it (a writer in front of the server may pass each write on at once).
type writeProbe struct {
	*httptest.ResponseRecorder
	onBody func(p []byte)
}

func (w *writeProbe) Write(p []byte) (int, error) {
	if w.onBody != nil {
		on := w.onBody
		w.onBody = nil
		on(p)
	}
	return w.ResponseRecorder.Write(p)
}

var outcomeLine = regexp.MustCompile(`(?m)^codeboost_user_actions_total\{outcome="([^"]+)"\} (\d+)$`)

// outcomeCounts scrapes GET /metrics for the user-action counter.
func outcomeCounts(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	counts := map[string]string{}
	for _, m := range outcomeLine.FindAllStringSubmatch(rec.Body.String(), -1) {
		counts[m[1]] = m[2]
	}
	return counts
}

// TestActionCountedBeforeItsReply: the user-action counter counts an
// outcome "as the server answers" it (metrics.go), so a client that has
// its reply and then scrapes /metrics finds it counted: the count is made
// before the reply is written, for the runner's reply (reply), a planning
// action's (planReply) and an admitted question's (postQuestion).
//
// Kills web/runner_api.go:Server.reply:swap-steps:df7fb3a0,
// web/plan_requests_api.go:Server.planReply:swap-steps:df7fb3a0 and
// web/questions_api.go:Server.postQuestion:swap-steps:9e26ce79.
func TestActionCountedBeforeItsReply(t *testing.T) {
	f := allRoutesFixture(t)
	if err := f.w.Ask.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.w.Loop.Drain()
	<-f.w.Ask.Opened()
	item := 1
	for _, c := range []struct {
		name, path string
		body       any
	}{
		{"a review action (reply)", "/api/review", ReviewAction{Task: "demo", Action: "change-note", ActionID: f.actionID(), Item: &item, Text: "note"}},
		{"a planning start (planReply)", "/api/plan/suggestions", PlanStart{Task: "demo", ActionID: f.actionID(), ExpectedRevision: 1, ExpectedSnapshot: "s1"}},
		{"a question (postQuestion)", "/api/questions", QuestionRequest{Task: "demo", ActionID: f.actionID(), Text: "why this order?"}},
	} {
		h := f.srv.Handler()
		before := outcomeCounts(t, h)
		var atReply map[string]string
		w := &writeProbe{ResponseRecorder: httptest.NewRecorder(), onBody: func([]byte) { atReply = outcomeCounts(t, h) }}
		h.ServeHTTP(w, httptest.NewRequest("POST", c.path, bytes.NewReader(mustJSON(t, c.body))))
		var reply struct {
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &reply); err != nil || reply.Outcome == "" || w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s (%v)", c.name, w.Code, w.Body, err)
		}
		after := outcomeCounts(t, h)
		if after[reply.Outcome] == before[reply.Outcome] {
			t.Fatalf("%s: outcome %q was not counted at all (%v)", c.name, reply.Outcome, after)
		}
		if atReply[reply.Outcome] != after[reply.Outcome] {
			t.Errorf("%s: when its reply was written, outcome %q counted %q; afterwards %q: the reply went out before the count",
				c.name, reply.Outcome, atReply[reply.Outcome], after[reply.Outcome])
		}
	}
}

// syncBuffer is a log destination read while the server writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestDiffViewLogsBeforeItSaysTheLogSaysWhy: when the diff view cannot read
// a commit, what it sends says "the server log says why" — the 500 before
// anything was sent, and the line that ends a diff broken off midway. The
// log line is written first, so that a person who reads that reply and
// then the log finds the reason there.
//
// Kills web/stream.go:Server.getDiff:swap-steps:769e5a74 and
// web/stream.go:Server.getDiff:swap-steps:6ab39d9d.
func TestDiffViewLogsBeforeItSaysTheLogSaysWhy(t *testing.T) {
	var fail func(w io.Writer) error
	w, attempt := completedAttempt(t, func(ctx context.Context, out io.Writer, _ Task, base, commit string, maxBytes int) (bool, error) {
		if fail != nil {
			return false, fail(out)
		}
		_, err := io.WriteString(out, "diff --git a/x b/x\n")
		return false, err
	})
	for _, c := range []struct {
		name    string
		fail    func(w io.Writer) error
		status  int
		logWord string
	}{
		{"a commit that cannot be read", func(io.Writer) error { return errors.New("git: no such object") }, http.StatusInternalServerError, "could not be read"},
		{"a diff broken off midway", func(out io.Writer) error {
			io.WriteString(out, "diff --git a/x b/x\n")
			return errors.New("git: killed")
		}, http.StatusOK, "broke off"},
	} {
		fail = c.fail
		logs := &syncBuffer{}
		srv, err := New(Options{Runner: w.run, Store: w.store, Clock: w.clock, Log: slog.New(slog.NewTextHandler(logs, nil)),
			Tasks: []Task{{Name: "parser-fix", Identity: w.tasks["parser-fix"]}}, CommitDiff: w.srv.opt.CommitDiff})
		if err != nil {
			t.Fatal(err)
		}
		var loggedAtReply []string
		probe := &writeProbe{ResponseRecorder: httptest.NewRecorder()}
		probe.onBody = func(p []byte) {
			if strings.Contains(string(p), "the server log says why") {
				loggedAtReply = append(loggedAtReply, logs.String())
			} else {
				probe.onBody = probe.onBodyAgain(logs, &loggedAtReply)
			}
		}
		srv.Handler().ServeHTTP(probe, httptest.NewRequest("GET", "/api/diff?task=parser-fix&attempt="+attempt, nil))
		if probe.Code != c.status || !strings.Contains(probe.Body.String(), "the server log says why") {
			t.Fatalf("%s: %d %s", c.name, probe.Code, probe.Body)
		}
		if !strings.Contains(logs.String(), c.logWord) {
			t.Fatalf("%s: the log lacks %q:\n%s", c.name, c.logWord, logs)
		}
		if len(loggedAtReply) != 1 || !strings.Contains(loggedAtReply[0], c.logWord) {
			t.Errorf("%s: when the reply said the server log says why, the log held %q", c.name, loggedAtReply)
		}
	}
}

// onBodyAgain watches the next write for the words that send a person to
// the log.
func (w *writeProbe) onBodyAgain(logs *syncBuffer, seen *[]string) func([]byte) {
	return func(p []byte) {
		if strings.Contains(string(p), "the server log says why") {
			*seen = append(*seen, logs.String())
			return
		}
		w.onBody = w.onBodyAgain(logs, seen)
	}
}

// serveOnLoopback starts f's server on 127.0.0.1 and waits until Serve has
// published its http.Server (what step 3 shuts down).
func serveOnLoopback(t *testing.T, s *Server) <-chan error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	waitFor(t, "Serve to start", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.httpSrv != nil
	})
	return served
}

// TestStepThreeRunTwiceShutsDownOnce: AbortRequests starts net/http's
// Shutdown once (s.shut records that it started, under s.mu, in the same
// step that makes the channel); a second call aborts what is left without
// starting another Shutdown — which would run the OnShutdown hook again and
// close its channel twice, a panic — and Close (step 6) waits for that one
// Shutdown to return.
//
// Kills web/server.go:Server.AbortRequests:swap-steps:729523ca (s.shut is
// assigned the still-nil channel, so every call starts a Shutdown and Close
// waits for none), which TestShutdownClosesIdleConnections kills too.
func TestStepThreeRunTwiceShutsDownOnce(t *testing.T) {
	f := newServedFixture(t)
	served := serveOnLoopback(t, f.srv)
	f.srv.SetStopping()
	f.srv.AbortRequests()
	f.srv.AbortRequests()
	f.srv.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	f.srv.mu.Lock()
	shut := f.srv.shut
	f.srv.mu.Unlock()
	select {
	case <-shut:
	default:
		t.Errorf("Close returned before step 3's Shutdown did")
	}
	// A second Shutdown's hook runs on a goroutine of its own: give it the
	// time to run (and panic) before the test ends.
	time.Sleep(50 * time.Millisecond)
}

// TestAbortRequestsAsServePublishesItsServer: Serve registers the
// OnShutdown hook that closes unlisten before it releases s.mu, so that an
// AbortRequests which finds the http.Server under s.mu always finds the hook
// registered: its Shutdown runs it, and AbortRequests (which waits for it)
// returns. The scheduling is forced: with one P, s.mu is driven into
// starvation mode, where each Unlock hands the lock to the next waiter and
// yields to it, so AbortRequests takes s.mu the moment Serve releases it,
// and its Shutdown goroutine runs before Serve's goroutine runs again.
//
// Kills web/server.go:Server.Serve:swap-steps:6379151b (the hook
// registered only after the unlock: that Shutdown runs no hook, and
// AbortRequests waits forever).
func TestAbortRequestsAsServePublishesItsServer(t *testing.T) {
	f := newServedFixture(t)
	s := f.srv
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	served := make(chan error, 1)
	aborted := make(chan struct{})
	s.mu.Lock()
	go func() { served <- s.Serve(l) }()
	time.Sleep(2 * time.Millisecond) // Serve waits for s.mu first
	go func() {
		s.mu.Lock() // handed over by Serve's Unlock
		//lint:ignore SA2001 the lock is taken only to wait for Serve's Unlock to hand it over
		s.mu.Unlock()
		s.AbortRequests()
		close(aborted)
	}()
	time.Sleep(5 * time.Millisecond) // both have waited past 1 ms
	s.mu.Unlock()
	s.mu.Lock() // Serve wakes to a held lock: starvation mode
	time.Sleep(5 * time.Millisecond)
	s.mu.Unlock() // to Serve, which hands it to AbortRequests's goroutine
	select {
	case <-aborted:
	case <-time.After(10 * time.Second):
		s.Close()
		t.Fatal("AbortRequests did not return: its Shutdown ran before Serve registered the hook it waits for")
	}
	s.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestJSONRepliesAreNotCached: every JSON reply (a poll, an action's
// answer, an error) is sent with Content-Type JSON and Cache-Control:
// no-store, set before WriteHeader sends the header: each carries the
// task's live state, and a cached poll would show the screen an old state.
// Read from the header as sent (Result), not the writer's map.
//
// Kills web/request.go:writeJSON:swap-steps:550f23d9 (Cache-Control set
// after WriteHeader, so never sent).
func TestJSONRepliesAreNotCached(t *testing.T) {
	f := newFixture(t, 1)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/runner?task=demo", nil},
		{"GET", "/api/review?task=demo", nil},
		{"POST", "/api/runner", RunnerAction{Task: "demo", Action: "start", ActionID: "bad"}},
	} {
		rec := f.do(c.method, c.path, c.body)
		h := rec.Result().Header
		if h.Get("Cache-Control") != "no-store" || h.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s %s: %d sent Cache-Control %q, Content-Type %q", c.method, c.path, rec.Code, h.Get("Cache-Control"), h.Get("Content-Type"))
		}
	}
}

// TestDiffViewHeadersAreSentWithIt: the diff view is plain text the
// browser must not sniff as anything else (it is the agent's output, which
// could look like HTML) and must not cache: Content-Type, Cache-Control
// and X-Content-Type-Options are all set before WriteHeader sends the
// header, whether the view is a commit's diff or saved partial output.
//
// Kills web/stream.go:diffWriter.start:swap-steps:1c55a0be
// (X-Content-Type-Options set after WriteHeader, so never sent).
func TestDiffViewHeadersAreSentWithIt(t *testing.T) {
	w, attempt := completedAttempt(t, func(ctx context.Context, out io.Writer, _ Task, base, commit string, maxBytes int) (bool, error) {
		_, err := io.WriteString(out, "diff --git a/x b/x\n<script>alert(1)</script>\n")
		return false, err
	})
	r := getDiffView(t, w.url, attempt)
	if r.status != http.StatusOK || !strings.Contains(r.body, "diff --git") {
		t.Fatalf("the diff view: %d %s", r.status, r.body)
	}
	for k, v := range map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := r.header.Get(k); got != v {
			t.Errorf("the diff view sent %s %q, want %q", k, got, v)
		}
	}
}

// TestRunningAttemptRowSaysLive: GET /api/runner marks a running attempt's
// row live (its output can be followed; the screen opens the stream only
// for such a row), so the flag is set on the row before the row is added
// to the list.
//
// Kills web/runner_api.go:Server.status:swap-steps:a1bc87d7 (live set on
// the local row after a copy of it was appended), which only the browser
// test TestBrowserScreens killed before (it needs a browser).
func TestRunningAttemptRowSaysLive(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	waitRunning(w, a)
	resp, err := http.Get(w.url + "/api/runner?task=parser-fix")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r RunnerReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Tasks) != 1 {
		t.Fatalf("GET /api/runner: %d %v", resp.StatusCode, err)
	}
	for _, row := range r.Tasks[0].Attempts {
		if row.ID == a && !row.Live {
			t.Errorf("the running attempt's row: %+v, want live", row)
		}
		if row.ID == a {
			return
		}
	}
	t.Fatalf("no row for attempt %s in %+v", a, r.Tasks[0].Attempts)
}
