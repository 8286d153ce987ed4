package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/livelog"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/internal/mutant"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/sim/simenv"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// The browser tests' world is production-shaped: the real Server over a
// real listener, the real coordinator on its production goroutine loop (so
// concurrent HTTP handlers are safe), a real SQLite file, and the simulated
// D, driven by the test on the coordinator's loop because simd is not safe
// for concurrent use. Time is a manual clock the test owns: no attempt
// deadline fires unless a test advances it.

// uiWorld is one browser test's server and everything behind it.
type uiWorld struct {
	t     *testing.T
	fp    *failpoints.Set // this world's faults (store/terminal-write, …)
	clock *manualClock
	loop  *runner.GoroutineLoop
	d     *simd.D
	store *store.Store
	run   *runner.Coordinator
	ask   *ask.Coordinator // Ask, on the runner's loop and D, under its own owner token
	out   *livelog.Hub
	srv   *Server
	proxy *proxy
	url   string
	tasks map[string]store.Identity

	// suggest is the suggestion coordinator, on the runner's loop, with
	// plan, the simulated planning provider a test settles by hand.
	suggest *suggest.Coordinator
	plan    *simenv.Planner

	// merge is the merge coordinator, on the runner's loop, merging on
	// github, the simulated GitHub; each task's pull request is number 7
	// of owner/<task name>.
	merge  *merge.Coordinator
	github *simenv.GitHub
}

// uiTask is a configured task of the world, created in review with its
// plan's item titles at revision 1.
type uiTask struct {
	name, repository string
	items            []string
}

type worldOptions struct {
	tasks []uiTask
	// pollBaseMS and pollCapMS are the page's polling intervals (index.html's
	// markup); zero keeps the page's own.
	pollBaseMS, pollCapMS int
	// head and commitDiff are Options.Head and Options.CommitDiff.
	head       func(Task) (string, error)
	commitDiff func(ctx context.Context, w io.Writer, t Task, base, commit string, maxBytes int) (bool, error)
}

func newUIWorld(t *testing.T, opt worldOptions) *uiWorld {
	t.Helper()
	dir := t.TempDir()
	clock := newManualClock()
	idSource := ids.NewSeeded(1)
	fp := failpoints.New()
	st, capability, root, token, askToken := openTestStore(t, dir, clock.Now, idSource, fp)
	w := &uiWorld{t: t, fp: fp, clock: clock, loop: runner.NewGoroutineLoop(), store: st, out: livelog.NewHub(0), tasks: map[string]store.Identity{}}
	w.d = simd.NewD(func(id string) string { return id }, func(string) {})
	w.d.Now = clock.Now
	var err error
	w.run, err = runner.New(runner.Config{Slots: 1, Root: root, Owner: token}, runner.Deps{
		Store: st, Capability: capability, D: w.d, Clock: clock, Loop: w.loop, IDs: idSource, Failpoints: fp, Output: w.out.Sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.run.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.ask, err = ask.New(ask.Config{Store: st, Capability: capability, D: w.d, Loop: w.loop, Clock: clock, IDs: idSource, Owner: askToken})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ask.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-w.ask.Opened()
	w.plan = simenv.NewPlanner(func(string) {})
	w.suggest, err = suggest.New(suggest.Config{Store: st, Capability: capability, Loop: w.loop, Clock: clock, IDs: idSource, Provider: w.plan})
	if err != nil {
		t.Fatal(err)
	}
	w.github = simenv.NewGitHub(nil)
	w.merge, err = merge.New(merge.Config{Store: st, Capability: capability, Host: w.github, Loop: w.loop, IDs: idSource,
		PullRequest: func(planKey string) (string, int, bool) {
			for name, id := range w.tasks {
				if id.Key() == planKey {
					return "owner/" + name, 7, true
				}
			}
			return "", 0, false
		}})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []Task
	for i, spec := range opt.tasks {
		id := store.Identity{RepositoryID: "repo" + strconv.Itoa(i+1), TaskID: spec.name, PlanID: "plan"}
		if err := st.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: spec.items, Status: words.StatusInReview})
		}); err != nil {
			t.Fatal(err)
		}
		w.tasks[spec.name] = id
		tasks = append(tasks, Task{Name: spec.name, Repository: spec.repository, Identity: id})
	}
	srv, err := New(Options{Runner: w.run, Store: st, Clock: clock, Tasks: tasks, Output: w.out,
		Diagnostics: DiagnosticsReader(w.run.DiagnosticsDir()), Static: pageFS(t, opt.pollBaseMS, opt.pollCapMS),
		Head: opt.head, CommitDiff: opt.commitDiff, Questions: w.ask, Planning: w.suggest, Merges: w.merge})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = srv
	w.proxy = &proxy{h: srv.Handler()}
	ts := httptest.NewServer(w.proxy)
	w.url = ts.URL
	// Cleanups run last-in first-out: the browser (registered later) goes
	// first, then held requests and live streams end, so that the server's
	// Close, which waits for every request, returns.
	t.Cleanup(func() {
		w.loop.Stop()
		st.Close()
	})
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		w.proxy.releaseAll()
		w.out.Close()
		ts.CloseClientConnections()
	})
	return w
}

// pageFS is the review screen as the browser tests serve it: the embedded
// page, with each web/ui file that the mutant overlay named by
// CODEBOOST_TEST_OVERLAY (internal/mutant.OverlayEnv) replaces read from its
// replacement, because go:embed ignores -overlay (golang/go#59406); and
// index.html's polling intervals set for the test, in the markup where the
// page reads them (the script has no test switch).
func pageFS(t *testing.T, baseMS, capMS int) fs.FS {
	t.Helper()
	replace := map[string]string{}
	if p := os.Getenv(mutant.OverlayEnv); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var o struct{ Replace map[string]string }
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		replace = o.Replace
	}
	uiDir, err := filepath.Abs("ui")
	if err != nil {
		t.Fatal(err)
	}
	page := fstest.MapFS{}
	err = fs.WalkDir(ui, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(path, "ui/")
		data, err := ui.ReadFile(path)
		if err != nil {
			return err
		}
		if r, ok := replace[filepath.Join(uiDir, filepath.FromSlash(rel))]; ok {
			if data, err = os.ReadFile(r); err != nil {
				return err
			}
			t.Logf("serving %s from the overlay's %s", rel, r)
		}
		page[rel] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if baseMS > 0 {
		const markup = `data-poll-base-ms="1000" data-poll-cap-ms="8000"`
		html := string(page["index.html"].Data)
		if !strings.Contains(html, markup) {
			t.Fatalf("index.html no longer says %s: update pageFS", markup)
		}
		html = strings.Replace(html, markup, fmt.Sprintf(`data-poll-base-ms="%d" data-poll-cap-ms="%d"`, baseMS, capMS), 1)
		page["index.html"].Data = []byte(html)
	}
	return page
}

// onLoop runs fn on the coordinator's loop: every simd call and script
// step goes through here.
func (w *uiWorld) onLoop(fn func()) {
	w.t.Helper()
	if err := w.loop.Call(context.Background(), fn); err != nil {
		w.t.Fatal(err)
	}
}

// settle settles the attempt's invocation as D would report it, once D
// has started it (preparation runs on the loop after admission).
func (w *uiWorld) settle(attemptID string, s dadapter.Settlement) {
	w.t.Helper()
	var err error
	waitUntil(w.t, "D's start of "+attemptID, func() bool {
		var started bool
		w.onLoop(func() { started = w.d.Handle(attemptID) != nil })
		return started
	})
	w.onLoop(func() { err = w.d.Handle(attemptID).Settle(s) })
	if err != nil {
		w.t.Fatal(err)
	}
}

// emit writes a line of the attempt's live output as D reads it: through
// the simulated D's handle, into the sink the runner gave it, so the page
// follows the real hub (dadapter/livelog) the server reads.
func (w *uiWorld) emit(attemptID, text string) {
	w.t.Helper()
	waitUntil(w.t, "D's start of "+attemptID, func() bool {
		var started bool
		w.onLoop(func() { started = w.d.Handle(attemptID) != nil })
		return started
	})
	w.onLoop(func() { w.d.Handle(attemptID).Emit([]byte(text)) })
}

// setDiff sets what exporting the attempt's partial output returns.
func (w *uiWorld) setDiff(attemptID, diff string) {
	w.onLoop(func() { w.d.SetDiff(attemptID, diff) })
}

// changeSnapshot records a new review snapshot for the task's plan
// through the runner, which stops the active attempt as stale.
func (w *uiWorld) changeSnapshot(task, snapshot string) {
	w.t.Helper()
	key := w.tasks[task].Key()
	if err := w.run.ChangeContext(context.Background(), key, func(tx *store.Tx) error {
		return tx.ChangeSnapshot(key, snapshot)
	}); err != nil {
		w.t.Fatal(err)
	}
}

// status reads a task's GET /api/runner status, in-process.
func (w *uiWorld) status(task string) TaskStatus {
	w.t.Helper()
	var reply RunnerReply
	w.api("GET", "/api/runner?task="+task, nil, http.StatusOK, &reply)
	return reply.Tasks[0]
}

// currentAttempt is the task's current attempt ID.
func (w *uiWorld) currentAttempt(task string) string {
	w.t.Helper()
	id := w.status(task).Task.CurrentAttemptID
	if id == "" {
		w.t.Fatalf("task %s has no current attempt", task)
	}
	return id
}

func (w *uiWorld) attemptCount(task string) int {
	w.t.Helper()
	as, err := w.store.Attempts(w.tasks[task].Key())
	if err != nil {
		w.t.Fatal(err)
	}
	return len(as)
}

func (w *uiWorld) actionCount(task string) int {
	w.t.Helper()
	var n int
	if err := w.store.View(func(tx *store.Tx) (err error) { n, err = tx.UserActionCount(w.tasks[task].Key()); return err }); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// api sends one request to the server as another client would (past the
// proxy's rules, which only the browser's requests meet).
func (w *uiWorld) api(method, path string, body any, want int, reply any) {
	w.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			w.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, r)
	rec := httptest.NewRecorder()
	w.proxy.h.ServeHTTP(rec, req)
	if rec.Code != want {
		w.t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if reply != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), reply); err != nil {
			w.t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
		}
	}
}

var testActions int

func newTestActionID() string {
	testActions++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", testActions)
}

// approveAll approves every plan item of the task through the API.
func (w *uiWorld) approveAll(task string) {
	w.t.Helper()
	var review ReviewReply
	w.api("GET", "/api/review?task="+task, nil, http.StatusOK, &review)
	for _, it := range review.Items {
		item := it.Item
		rv := w.status(task).ReviewVersion
		w.api("POST", "/api/review", ReviewAction{Task: task, Action: "approve", ActionID: newTestActionID(), Item: &item, ExpectedReviewVersion: rv}, http.StatusOK, nil)
	}
}

// start starts the task's plan through the API and returns its first
// attempt.
func (w *uiWorld) start(task string) string {
	w.t.Helper()
	st := w.status(task)
	var reply ActionReply
	w.api("POST", "/api/runner", RunnerAction{Task: task, Action: "start", ExpectedStateVersion: st.StateVersion,
		ExpectedReviewVersion: st.ReviewVersion, ActionID: newTestActionID()}, http.StatusOK, &reply)
	return reply.AttemptID
}

// resume resumes the task's plan through the API and returns the attempt
// it admitted.
func (w *uiWorld) resume(task string) string {
	w.t.Helper()
	st := w.status(task)
	var reply ActionReply
	w.api("POST", "/api/runner", RunnerAction{Task: task, Action: "resume", ExpectedStateVersion: st.StateVersion,
		ExpectedReviewVersion: st.ReviewVersion, ActionID: newTestActionID()}, http.StatusOK, &reply)
	return reply.AttemptID
}

// ---- The manual clock ----

// manualClock is runner.Clock with time that moves only when the test says.
// It starts at the wall-clock second it was made, so the page, which
// measures a running attempt's elapsed time on its own clock, shows
// sensible numbers.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c    *manualClock
	at   time.Time
	fn   func()
	done bool // fired or stopped
}

func newManualClock() *manualClock { return &manualClock{now: time.Now().UTC().Truncate(time.Second)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, fn func()) runner.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), fn: fn}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves time on and fires every timer that came due, in order.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.fn()
	}
}

// ---- Live output ----

// ---- The proxy ----

// proxy wraps the server's handler for the browser: it numbers every
// request (X-Test-Request on its reply, which the page's fetch wrapper
// records once the page has dealt with the answer), records when each
// arrived, and, when a test arms a rule, holds a request before or after
// the server handled it, or cuts its reply off after the server handled it.
type proxy struct {
	h http.Handler

	mu    sync.Mutex
	n     int
	reqs  []arrival
	rules []*rule
}

type arrival struct {
	n            int
	method, path string
	body         string
	at           time.Time
}

type ruleMode int

const (
	holdBefore ruleMode = iota // the server sees the request only when released
	holdAfter                  // the server answers at once; the reply waits to be released
	cutAfter                   // the server answers; the reply is cut off mid-body
)

// rule applies to the first browser request that matches it after it is
// armed.
type rule struct {
	method, path string
	mode         ruleMode
	hit          chan int // the request's number, once one matched
	release      chan struct{}
	once         sync.Once
	used         bool // guarded by proxy.mu
}

func (p *proxy) arm(method, path string, mode ruleMode) *rule {
	r := &rule{method: method, path: path, mode: mode, hit: make(chan int, 1), release: make(chan struct{})}
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return r
}

// wait waits for the rule's request and returns its number.
func (r *rule) wait(t *testing.T) int {
	t.Helper()
	select {
	case n := <-r.hit:
		return n
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s %s reached the server", r.method, r.path)
		return 0
	}
}

func (r *rule) free() { r.once.Do(func() { close(r.release) }) }

func (p *proxy) releaseAll() {
	p.mu.Lock()
	rules := append([]*rule(nil), p.rules...)
	p.mu.Unlock()
	for _, r := range rules {
		r.free()
	}
}

// arrivals lists the requests of method and path received so far.
func (p *proxy) arrivals(method, path string) []arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []arrival
	for _, a := range p.reqs {
		if a.method == method && a.path == path {
			out = append(out, a)
		}
	}
	return out
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.n++
	n := p.n
	p.reqs = append(p.reqs, arrival{n: n, method: r.Method, path: r.URL.Path, body: string(body), at: time.Now()})
	var match *rule
	for _, rl := range p.rules {
		if !rl.used && rl.method == r.Method && rl.path == r.URL.Path {
			rl.used, match = true, rl
			break
		}
	}
	p.mu.Unlock()
	w.Header().Set("X-Test-Request", strconv.Itoa(n))
	if match == nil {
		p.h.ServeHTTP(w, r)
		return
	}
	if match.mode == holdBefore {
		match.hit <- n
		<-match.release
		p.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	match.hit <- n
	if match.mode == holdAfter {
		<-match.release
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	// cutAfter: the status line and headers arrive, then half the body,
	// then the connection drops. Because the headers arrived, the browser
	// does not quietly resend the request itself: the page sees the loss.
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	b := rec.Body.Bytes()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Test-Request: %d\r\n\r\n",
		rec.Code, http.StatusText(rec.Code), len(b), n)
	buf.Write(b[:len(b)/2])
	buf.Flush()
}

// revision is the task's plan revision, as GET /api/review reads it.
func (w *uiWorld) revision(task string) int {
	w.t.Helper()
	var review ReviewReply
	w.api("GET", "/api/review?task="+task, nil, http.StatusOK, &review)
	return review.Revision
}
