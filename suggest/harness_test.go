package suggest_test

// The shared harness of the coordinator's tests: a real Store on a SQLite
// file, the simulator's loop and clock (sim.Loop, sim.Clock), and a fake
// provider whose handles the test settles by hand. Nothing runs unless a
// test step makes it run: a provider's outcome is delivered by settle,
// time moves only by advance, and each step drains the loop, so every
// test is a script of named steps ("controllable promises and timers with
// real SQLite").

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// fakeProvider records every start and hands out handles to settle.
type fakeProvider struct {
	inputs   []suggest.Input
	handles  []*fakeHandle
	startErr error // the next Start fails with it, once
}

func (p *fakeProvider) Start(_ context.Context, in suggest.Input) (suggest.Handle, error) {
	p.inputs = append(p.inputs, in)
	if err := p.startErr; err != nil {
		p.startErr = nil
		return nil, err
	}
	h := &fakeHandle{}
	p.handles = append(p.handles, h)
	return h, nil
}

// fakeHandle is a controllable promise: it settles only when the test
// says so.
type fakeHandle struct {
	fns     []func(suggest.Outcome)
	outcome *suggest.Outcome
	cancels []string
}

func (h *fakeHandle) OnSettled(fn func(suggest.Outcome)) {
	if h.outcome != nil {
		fn(*h.outcome)
		return
	}
	h.fns = append(h.fns, fn)
}

func (h *fakeHandle) Cancel(reason string) { h.cancels = append(h.cancels, reason) }

func (h *fakeHandle) settle(o suggest.Outcome) {
	if h.outcome != nil {
		panic("fakeHandle settled twice")
	}
	h.outcome = &o
	for _, fn := range h.fns {
		fn(o)
	}
}

// world is one process: a Store, its coordinator, the loop and the clock.
type world struct {
	t       *testing.T
	path    string
	loop    *sim.Loop
	clock   *sim.Clock
	fp      *failpoints.Set
	st      *store.Store
	c       *suggest.Coordinator
	prov    *fakeProvider
	trace   []string
	results map[string][]suggest.Result // by request ID, in delivery order
	key     string                      // the plan every test plans
	other   string                      // a second plan identity
	boots   int                         // processes started over path
}

// config tweaks a world's coordinator configuration.
type config func(*suggest.Config)

func noProvider(cfg *suggest.Config) { cfg.Provider = nil }

func newWorld(t *testing.T, opts ...config) *world {
	t.Helper()
	w := &world{t: t, path: filepath.Join(t.TempDir(), "codeboost.db")}
	w.boot(opts...)
	for i, name := range []string{"task1", "task2"} {
		id := store.Identity{RepositoryID: "repo", TaskID: name, PlanID: "plan"}
		if err := w.st.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"one", "two"}})
		}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			w.key = id.Key()
		} else {
			w.other = id.Key()
		}
	}
	return w
}

// boot opens the Store and a coordinator over w.path: a new process.
func (w *world) boot(opts ...config) {
	w.t.Helper()
	w.boots++
	w.loop = &sim.Loop{}
	w.clock = sim.NewClock(w.loop)
	w.fp = failpoints.New()
	st, err := store.Open(w.path, store.Options{Now: w.clock.Now, IDs: ids.NewSeeded(1), Failpoints: w.fp})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { st.Close() })
	w.st = st
	w.prov = &fakeProvider{}
	w.results = map[string][]suggest.Result{}
	cfg := suggest.Config{Store: st, Capability: st.ShutdownCapability(), Loop: w.loop, Clock: w.clock,
		IDs: ids.NewSeeded(uint64(100 + w.boots)), Provider: w.prov, Trace: func(l string) { w.trace = append(w.trace, l) }}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := suggest.New(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.c = c
}

// crash is the process dying: nothing settles, nothing is closed in
// order; the database file stays.
func (w *world) crash() {
	w.t.Helper()
	if err := w.st.Close(); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) plan(key string) store.Plan {
	w.t.Helper()
	var p store.Plan
	if err := w.st.View(func(tx *store.Tx) (err error) { p, err = tx.Plan(key); return err }); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) items(key string) []store.PlanItem {
	w.t.Helper()
	p := w.plan(key)
	var items []store.PlanItem
	if err := w.st.View(func(tx *store.Tx) (err error) { items, err = tx.PlanItems(key, p.Revision); return err }); err != nil {
		w.t.Fatal(err)
	}
	return items
}

// request is a start of mode for key at the plan's present revision and
// snapshot, recording its outcome.
func (w *world) request(key, mode string) suggest.StartRequest {
	p := w.plan(key)
	return suggest.StartRequest{PlanKey: key, Mode: mode, ExpectedRevision: p.Revision, ExpectedSnapshot: p.SnapshotID,
		Items: w.items(key), OnSettled: func(r suggest.Result) { w.results[r.RequestID] = append(w.results[r.RequestID], r) }}
}

func (w *world) tryStart(key, mode string) (string, error) {
	return w.c.Start(context.Background(), w.request(key, mode))
}

// start starts a request and returns its ID and its provider handle.
func (w *world) start(key, mode string) (string, *fakeHandle) {
	w.t.Helper()
	id, err := w.tryStart(key, mode)
	if err != nil {
		w.t.Fatalf("Start(%s): %v", mode, err)
	}
	return id, w.prov.handles[len(w.prov.handles)-1]
}

// settle delivers the provider's outcome and runs what it posts.
func (w *world) settle(h *fakeHandle, o suggest.Outcome) {
	h.settle(o)
	w.loop.Drain()
}

func (w *world) reply(h *fakeHandle, reply string) {
	w.settle(h, suggest.Outcome{Reply: []byte(reply)})
}

func (w *world) fail(h *fakeHandle, msg string) { w.settle(h, suggest.Outcome{Err: errors.New(msg)}) }

func (w *world) advance(d time.Duration) { w.clock.Advance(d); w.loop.Drain() }

func (w *world) cancel(id, reason string) store.PlanRequest {
	w.t.Helper()
	row, err := w.c.Cancel(context.Background(), id, reason)
	if err != nil {
		w.t.Fatalf("Cancel(%s): %v", id, err)
	}
	return row
}

// row reads the durable request.
func (w *world) row(id string) store.PlanRequest {
	w.t.Helper()
	var r store.PlanRequest
	if err := w.st.View(func(tx *store.Tx) (err error) { r, err = tx.PlanRequest(id); return err }); err != nil {
		w.t.Fatal(err)
	}
	return r
}

// result is the one outcome delivered for id.
func (w *world) result(id string) suggest.Result {
	w.t.Helper()
	rs := w.results[id]
	if len(rs) != 1 {
		w.t.Fatalf("request %s: %d outcomes delivered, want exactly 1: %+v\ntrace:\n%s", id, len(rs), rs, w.dumpTrace())
	}
	return rs[0]
}

// noResult fails if id has an outcome: its provider has not settled.
func (w *world) noResult(id string) {
	w.t.Helper()
	if rs := w.results[id]; len(rs) != 0 {
		w.t.Fatalf("request %s settled before its provider did: %+v", id, rs)
	}
}

func (w *world) dumpTrace() string {
	s := ""
	for _, l := range w.trace {
		s += "  " + l + "\n"
	}
	return s
}

// want checks the outcome the caller sees and the durable row together.
func (w *world) want(id string, state words.State, rowState, reason string) suggest.Result {
	w.t.Helper()
	r := w.result(id)
	row := w.row(id)
	if r.State != state || row.State != rowState || (reason != "" && r.Reason != reason) {
		w.t.Fatalf("request %s: outcome %s (%q, diagnostic %q), row %s (%q, cause %q); want %s, row %s, reason %q\ntrace:\n%s",
			id, r.State, r.Reason, r.Diagnostic, row.State, row.Reason, row.Cause, state, rowState, reason, w.dumpTrace())
	}
	if r.Request.State != row.State {
		w.t.Fatalf("the outcome's row is %s, the durable row %s", r.Request.State, row.State)
	}
	return r
}

// wantRefusal fails unless err is a *store.Refusal with code.
func wantRefusal(t *testing.T, err error, code string) *store.Refusal {
	t.Helper()
	r, ok := store.IsRefusal(err)
	if !ok || r.Code != code {
		t.Fatalf("want refusal %q, got %v", code, err)
	}
	return r
}

const (
	cards = `[{"item": 2, "title": "two, sharper", "instructions": "Say what done means.", "kind": "change"},
		{"item": 0, "title": "three", "instructions": "Add tests.", "kind": "add"}]`
	draft = `{"items": [{"title": "first", "instructions": "Do it."}]}`
)

func requestsOf(w *world, key string) []store.PlanRequest {
	w.t.Helper()
	var rs []store.PlanRequest
	if err := w.st.View(func(tx *store.Tx) (err error) { rs, err = tx.PlanRequests(key); return err }); err != nil {
		w.t.Fatal(err)
	}
	return rs
}
