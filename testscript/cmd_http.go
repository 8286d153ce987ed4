package testscript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/web"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands that drive the review server (package web) inside the simulated
// world: the real handler, called in-process on the scenario's goroutine, so
// a request's events run on the sim loop in the script's order. A task's
// name in a URL or body is its script name in lower case (T1 → t1); the
// plan identity comes from the server's configuration, as in production.
//
// Requests whose bodies arrive in parts (http-begin) run their handler on
// a goroutine of their own; the command returns only once the handler is
// blocked waiting for the rest of the body, or has returned, so the order of
// steps is still the script's.

func init() {
	register(
		Command{Name: "http-runner", Kind: Action, Keys: []Key{K("sv", Int), K("rv", Int), K("action", ActionName), K("as", Name), K("status", Int)}, Usage: "http-runner TASK ACTION [ATTEMPT] [sv=N] [rv=N] [action=NAME|raw:ID] [as=NAME] [status=CODE]",
			Summary: "POST /api/runner: start, resume, cancel, retry, run-again or cancel-task as the screen sends it (sv and rv default to the present versions); prints the HTTP status and the reply, and asserts status (default 200)",
			Example: "http-runner T1 retry A sv=3 action=r1 status=409", Run: cmdHTTPRunner},
		Command{Name: "http-review", Kind: Action, Keys: []Key{K("item", Int), K("text", Text), K("key", Text), K("finding", Text), K("rev", Int), K("rv", Int), K("sv", Int), K("action", ActionName), K("status", Int)}, Usage: "http-review TASK ACTION [item=N] [text=T] [key=K] [finding=F] [rev=N] [rv=N] [sv=N] [action=NAME|raw:ID] [status=CODE]",
			Summary: "POST /api/review: reject (one note with text, on item or the whole plan), change-note, accept-segment, assign-segment, accept-finding, guidance, approve or approve-continuation (with sv and rv, default the present ones); prints the HTTP status and the reply, and asserts status (default 200)",
			Example: "http-review T1 change-note item=1 text='keep the flag' action=n1", Run: cmdHTTPReview},
		Command{Name: "http-begin", Kind: Action, Keys: []Key{K("sent", Int)}, Usage: "http-begin NAME METHOD PATH [BODY] [sent=N]",
			Summary: "starts a request whose declared BODY arrives in parts: its first N bytes, then nothing until http-send; returns once the handler waits for the rest (or has answered). In BODY, {action:X} is action X's ID, {attempt:A} attempt A's ID, {sv:T} and {rv:T} task T's versions, {pad:N} N spaces",
			Example: "http-begin B POST /api/review '{\"task\":\"t1\",\"action\":\"change-note\",\"item\":1,\"text\":\"x\",\"actionId\":\"{action:n1}\"}' sent=10", Run: cmdHTTPBegin},
		Command{Name: "http-send", Kind: Action, Usage: "http-send NAME",
			Summary: "delivers the rest of request NAME's body",
			Example: "http-send B", Run: cmdHTTPSend},
		Command{Name: "http-wait", Kind: Action, Keys: []Key{K("status", Int)}, Usage: "http-wait NAME [status=CODE|destroyed] [close]",
			Summary: "waits for request NAME's handler to return; prints its HTTP status and Connection: close, or destroyed when shutdown destroyed it while it read its body",
			Example: "http-wait B destroyed", Run: cmdHTTPWait},
		Command{Name: "http-active", Kind: Assertion, Usage: "http-active N",
			Summary: "asserts that N admitted requests have not returned yet",
			Example: "http-active 1", Run: cmdHTTPActive},
		Command{Name: "set-head", Kind: Action, Usage: "set-head TASK COMMIT [hold]",
			Summary: "sets the task's repository HEAD, as the review load reads it; with hold, the next read waits (as a slow git would) until head-release, and a request waiting there counts as waiting for http-begin",
			Example: "set-head T1 c2 hold", Run: cmdHead},
		Command{Name: "head-release", Kind: Action, Usage: "head-release TASK",
			Summary: "lets a held HEAD read return",
			Example: "head-release T1", Run: cmdHeadRelease},
	)
}

// hangLimit is how long, in real time, a command waits for a handler that
// runs on its own goroutine to reach the state the script expects. It is
// never a step of a scenario: every wait ends at once when the code is
// right (the handler answers or blocks on the script), and the limit only
// turns a hang under a mutant into a failure instead of a stuck test.
const hangLimit = 30 * time.Second

// httpState is the scenario's review server and its requests in flight.
type httpState struct {
	mu      sync.Mutex
	heads   map[string]*headState // by plan key
	srv     *web.Server
	world   *sim.World
	runner  *runner.Coordinator // the process srv serves: a restart makes a new one
	tasks   int
	pending map[string]*partialRequest
}

func (s *scenario) web(ts *gts.TestScript) *web.Server {
	w := s.world(ts)
	h := &s.http
	// A restart is a new process, with a new runner and a new server; in
	// the same process the server is rebuilt only when a task was added.
	sameProcess := h.srv != nil && h.world == w && h.runner == w.Runner
	if sameProcess && h.tasks == len(s.tasks) {
		return h.srv
	}
	if sameProcess && h.srv.Stopping() {
		return h.srv // a stopping server is not rebuilt: its state is the point
	}
	names := make([]string, 0, len(s.tasks))
	for name := range s.tasks {
		names = append(names, name)
	}
	sort.Strings(names)
	tasks := make([]web.Task, 0, len(names))
	for _, name := range names {
		tasks = append(tasks, web.Task{Name: strings.ToLower(name), Identity: s.plan(ts, s.tasks[name]).Identity})
	}
	srv, err := web.New(web.Options{Runner: w.Runner, Store: w.Store, Clock: w.Clock, Tasks: tasks,
		Diagnostics: web.DiagnosticsReader(w.Runner.DiagnosticsDir()), Head: h.head, Questions: w.Ask, Merges: w.Merge,
		Planning: planning(w)})
	if err != nil {
		ts.Fatalf("web: %v", err)
	}
	h.srv, h.world, h.runner, h.tasks = srv, w, w.Runner, len(s.tasks)
	w.Server = srv // the process's: its shutdown reaches it
	if h.pending == nil {
		h.pending = map[string]*partialRequest{}
	}
	return srv
}

// headState is a task's repository HEAD as the script sets it.
type headState struct {
	commit  string
	hold    chan struct{} // nil: reads return at once; else they wait until it is closed
	waiting chan struct{} // closed when a read first waits on hold
	once    sync.Once
}

// head is the server's Head: the script's HEAD for the task, waiting while
// it is held. It runs on a handler's goroutine; the script's goroutine
// releases it, so every field it reads was set before the request began.
func (h *httpState) head(t web.Task) (string, error) {
	h.mu.Lock()
	st := h.heads[t.Identity.Key()]
	h.mu.Unlock()
	if st == nil {
		return "", nil
	}
	if st.hold != nil {
		st.once.Do(func() { close(st.waiting) })
		<-st.hold
	}
	return st.commit, nil
}

func cmdHead(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) < 2 || len(a.pos) > 3 || (len(a.pos) == 3 && a.pos[2] != "hold") {
		ts.Fatalf("usage: set-head TASK COMMIT [hold]")
	}
	st := &headState{commit: a.pos[1]}
	if len(a.pos) == 3 {
		st.hold, st.waiting = make(chan struct{}), make(chan struct{})
	}
	s.http.mu.Lock()
	if s.http.heads == nil {
		s.http.heads = map[string]*headState{}
	}
	s.http.heads[s.planKey(ts, a.pos[0])] = st
	s.http.mu.Unlock()
}

func cmdHeadRelease(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: head-release TASK")
	}
	s.http.mu.Lock()
	st := s.http.heads[s.planKey(ts, a.pos[0])]
	s.http.mu.Unlock()
	if st == nil || st.hold == nil || isClosed(st.hold) {
		ts.Fatalf("the HEAD of %s is not held", a.pos[0])
	}
	close(st.hold)
}

// heldHeads are the waiting channels of the HEAD reads held now.
func (s *scenario) heldHeads() []chan struct{} {
	s.http.mu.Lock()
	defer s.http.mu.Unlock()
	var out []chan struct{}
	for _, st := range s.http.heads {
		// A hold a request already waits on says nothing about the next
		// request: only the holds nobody has reached yet are watched.
		if st.hold != nil && !isClosed(st.hold) && !isClosed(st.waiting) {
			out = append(out, st.waiting)
		}
	}
	return out
}

// githubWait is closed once one more read than now waits on a gh-hold
// (nil when no pull request is held): a request started after it was
// made has reached GitHub.
func (s *scenario) githubWait(stop <-chan struct{}) <-chan struct{} {
	if s.w == nil || len(s.w.GitHub.Waiting()) == 0 {
		return nil
	}
	before, _ := s.w.GitHub.Waiters()
	reached := make(chan struct{})
	go func() {
		for {
			n, arrived := s.w.GitHub.Waiters()
			if n > before {
				close(reached)
				return
			}
			select {
			case <-arrived:
			case <-stop:
				return
			}
		}
	}()
	return reached
}

func cmdHTTPActive(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: http-active N")
	}
	if n, want := s.web(ts).Active(), atoi(ts, "N", a.pos[0]); n != want {
		s.fatal(ts, "%d requests active, want %d", n, want)
	}
}

// httpAction is the action ID a command sends: action=len:N is N bytes
// of "a", to show a long value is refused whole; otherwise as s.action.
func (s *scenario) httpAction(a argSet) string {
	if v, ok := strings.CutPrefix(a.str("action"), "len:"); ok {
		n, _ := strconv.Atoi(v)
		return strings.Repeat("a", n)
	}
	return s.action(a)
}

// do sends one request in-process and returns the recorder.
func (s *scenario) do(ts *gts.TestScript, method, path string, body []byte) *httptest.ResponseRecorder {
	srv := s.web(ts)
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	return rec
}

// checkStatus prints the status line and asserts it against status= (200
// unless given).
func (s *scenario) checkStatus(ts *gts.TestScript, a argSet, rec *httptest.ResponseRecorder) {
	fmt.Fprintf(ts.Stdout(), "http %d\n", rec.Code)
	want := 200
	if n, ok := a.num("status"); ok {
		want = n
	}
	if rec.Code != want {
		s.fatal(ts, "HTTP %d, want %d: %s", rec.Code, want, strings.TrimSpace(rec.Body.String()))
	}
}

// printReply prints an action reply, or an error reply, with attempt IDs
// as the script's names.
func (s *scenario) printReply(ts *gts.TestScript, body []byte) {
	var e struct {
		Error *struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		fmt.Fprintf(ts.Stdout(), "error: %s: %s\n", e.Error.Code, e.Error.Message)
		return
	}
	var r web.ActionReply
	if err := json.Unmarshal(body, &r); err != nil {
		// net/http's own replies (405, 404 of the mux) are plain text.
		fmt.Fprintf(ts.Stdout(), "body: %.200s\n", strings.TrimSpace(string(body)))
		return
	}
	fmt.Fprintf(ts.Stdout(), "outcome: %s\n", r.Outcome)
	if r.Code != "" {
		fmt.Fprintf(ts.Stdout(), "code: %s\n", r.Code)
	}
	if r.Message != "" {
		fmt.Fprintf(ts.Stdout(), "message: %s\n", s.names(r.Message))
	}
	if r.Replayed {
		fmt.Fprintln(ts.Stdout(), "replayed")
	}
	if r.AttemptID != "" {
		fmt.Fprintf(ts.Stdout(), "attempt: %s\n", s.w.Name(r.AttemptID))
	}
	if r.Status != nil {
		fmt.Fprintf(ts.Stdout(), "stateVersion: %d\n", r.Status.StateVersion)
	}
	var q struct {
		Question *web.QuestionRow `json:"question"`
	}
	if json.Unmarshal(body, &q) == nil && q.Question != nil {
		fmt.Fprintf(ts.Stdout(), "question: %s state=%s retryable=%v reason=%q\n", s.w.Name(q.Question.ID), q.Question.State,
			q.Question.Retryable, q.Question.Reason)
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)

// names replaces attempt IDs in a message by the script's names.
func (s *scenario) names(msg string) string {
	return uuidRE.ReplaceAllStringFunc(msg, s.w.Name)
}

func cmdHTTPRunner(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) < 2 || len(a.pos) > 3 {
		ts.Fatalf("usage: http-runner TASK ACTION [ATTEMPT] [k=v...]")
	}
	key := s.planKey(ts, a.pos[0])
	body := web.RunnerAction{Task: strings.ToLower(a.pos[0]), Action: a.pos[1], ExpectedStateVersion: s.stateVersion(ts, key, a),
		ExpectedReviewVersion: s.reviewVersion(ts, key, a), ActionID: s.httpAction(a)}
	if len(a.pos) == 3 {
		body.AttemptID = s.attempt(ts, a.pos[2])
	}
	if name := a.str("as"); name != "" {
		if err := s.world(ts).NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	b, _ := json.Marshal(body)
	rec := s.do(ts, "POST", "/api/runner", b)
	s.checkStatus(ts, a, rec)
	s.printReply(ts, rec.Body.Bytes())
}

func cmdHTTPReview(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: http-review TASK ACTION [k=v...]")
	}
	key := s.planKey(ts, a.pos[0])
	body := web.ReviewAction{Task: strings.ToLower(a.pos[0]), Action: a.pos[1], ActionID: s.httpAction(a),
		Text: a.str("text"), ChoiceKey: a.str("key"), FindingID: a.str("finding")}
	var item *int
	if n, ok := a.num("item"); ok {
		item = &n
	}
	switch a.pos[1] {
	case "reject":
		body.ExpectedRevision = s.plan(ts, key).Revision
		if n, ok := a.num("rev"); ok {
			body.ExpectedRevision = n
		}
		body.Notes = []web.ActionNote{{Item: item, Text: a.str("text")}}
		body.Text = ""
	case "approve":
		body.ExpectedReviewVersion = s.reviewVersion(ts, key, a)
		body.Item = item
	case "approve-continuation":
		body.ExpectedReviewVersion = s.reviewVersion(ts, key, a)
		body.ExpectedStateVersion = s.stateVersion(ts, key, a)
	default:
		body.Item = item
	}
	b, _ := json.Marshal(body)
	rec := s.do(ts, "POST", "/api/review", b)
	s.checkStatus(ts, a, rec)
	s.printReply(ts, rec.Body.Bytes())
}

// partialRequest is a request whose body arrives in parts.
type partialRequest struct {
	body    *partBody
	rec     *httptest.ResponseRecorder
	done    chan struct{}
	waiting chan struct{} // closed when the handler first waits for more body
}

// partBody gives its first part, then blocks until released or closed.
type partBody struct {
	mu       sync.Mutex
	first    []byte
	rest     []byte
	released chan struct{}
	closed   chan struct{}
	waiting  chan struct{}
	once     sync.Once
	destroy  bool
}

func (b *partBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		b.mu.Unlock()
		return n, nil
	}
	b.mu.Unlock()
	select {
	case <-b.released:
	default:
		b.once.Do(func() { close(b.waiting) })
		select {
		case <-b.released:
		case <-b.closed:
			b.mu.Lock()
			b.destroy = true
			b.mu.Unlock()
			return 0, io.ErrClosedPipe
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *partBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return nil
}

var placeholder = regexp.MustCompile(`\{(action|attempt|sv|rv|pad):([^}]+)\}`)

func (s *scenario) expand(ts *gts.TestScript, body string) []byte {
	return []byte(placeholder.ReplaceAllStringFunc(body, func(m string) string {
		p := placeholder.FindStringSubmatch(m)
		switch p[1] {
		case "action":
			return actionID(p[2])
		case "attempt":
			return s.attempt(ts, p[2])
		case "sv":
			return strconv.FormatInt(s.presentStateVersion(ts, s.planKey(ts, p[2])), 10)
		case "rv":
			return strconv.Itoa(s.presentReviewVersion(ts, s.planKey(ts, p[2])))
		default:
			return strings.Repeat(" ", atoi(ts, "pad", p[2]))
		}
	}))
}

func cmdHTTPBegin(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	// A path (it starts with /) and a body (with {) never look like k=v.
	if len(a.pos) == 3 { // no body: an empty one
		a.pos = append(a.pos, "")
	}
	if len(a.pos) != 4 {
		ts.Fatalf("usage: http-begin NAME METHOD PATH [BODY] [sent=N]")
	}
	name := a.pos[0]
	srv := s.web(ts)
	if _, dup := s.http.pending[name]; dup {
		ts.Fatalf("a request named %s is already in flight", name)
	}
	full := s.expand(ts, a.pos[3])
	sent, _ := a.num("sent")
	if sent > len(full) {
		ts.Fatalf("sent=%d is more than the body's %d bytes", sent, len(full))
	}
	b := &partBody{first: full[:sent], rest: full[sent:], released: make(chan struct{}), closed: make(chan struct{}), waiting: make(chan struct{})}
	req := httptest.NewRequest(a.pos[1], a.pos[2], nil)
	req.Body, req.ContentLength = b, int64(len(full))
	p := &partialRequest{body: b, rec: httptest.NewRecorder(), done: make(chan struct{}), waiting: b.waiting}
	s.http.pending[name] = p
	held := s.heldHeads()
	ghWaits := s.githubWait(p.done)
	go func() {
		defer close(p.done)
		srv.Handler().ServeHTTP(p.rec, req)
	}()
	headWaits := make(chan struct{})
	if len(held) > 0 {
		go func() {
			for _, c := range held {
				select {
				case <-c:
					close(headWaits)
					return
				case <-p.done:
					return
				}
			}
		}()
	}
	select {
	case <-p.waiting:
	case <-headWaits:
	case <-ghWaits:
	case <-p.done:
	case <-time.After(hangLimit):
		s.fatal(ts, "request %s neither waited for its body nor answered", name)
	}
}

func (s *scenario) partial(ts *gts.TestScript, name string) *partialRequest {
	p, ok := s.http.pending[name]
	if !ok {
		ts.Fatalf("no request named %s (start one with http-begin)", name)
	}
	return p
}

func cmdHTTPSend(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: http-send NAME")
	}
	close(s.partial(ts, a.pos[0]).body.released)
}

func cmdHTTPWait(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) < 1 {
		ts.Fatalf("usage: http-wait NAME [status=CODE|destroyed] [close]")
	}
	for _, w := range a.pos[1:] {
		if w != "destroyed" && w != "close" {
			ts.Fatalf("http-wait: %q is neither destroyed nor close", w)
		}
	}
	p := s.partial(ts, a.pos[0])
	wantDestroyed := slicesContains(a.pos[1:], "destroyed")
	if wantDestroyed && !isClosed(p.body.closed) {
		// Step 3 destroys a request in the same turn as it aborts it, so
		// by shutdown await-gate its body is closed: no need to wait.
		s.fatal(ts, "request %s was not destroyed", a.pos[0])
	}
	select {
	case <-p.done:
	case <-time.After(hangLimit):
		s.fatal(ts, "request %s did not end", a.pos[0])
	}
	delete(s.http.pending, a.pos[0])
	p.body.mu.Lock()
	destroyed := p.body.destroy
	p.body.mu.Unlock()
	if destroyed {
		fmt.Fprintln(ts.Stdout(), "destroyed")
		if !wantDestroyed {
			s.fatal(ts, "request %s was destroyed", a.pos[0])
		}
		return
	}
	if wantDestroyed {
		s.fatal(ts, "request %s answered %d, want destroyed", a.pos[0], p.rec.Code)
	}
	s.checkStatus(ts, a, p.rec)
	closes := p.rec.Header().Get("Connection") == "close"
	if closes {
		fmt.Fprintln(ts.Stdout(), "connection: close")
	}
	if wantClose := slicesContains(a.pos[1:], "close"); wantClose != closes {
		s.fatal(ts, "Connection: close is %v, want %v", closes, wantClose)
	}
	s.printReply(ts, p.rec.Body.Bytes())
}
