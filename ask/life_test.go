package ask_test

// A question's life as an attempt holder, walked step by step on the
// simulator's loop and clock, the simulated D and a real SQLite Store with
// failpoints. The contract's holder order for every attempt: "settled → …
// the terminal write … → removeTaskFilesystems → the slot is freed. If
// removal fails, the slot stays held under an unresolved marker, and
// startup recovery removes the storage", with Ask's own words: "two
// question slots (runner/questions.ts)", and shutdown's "a question
// admitted before shutdown still saves its note, but starts no agent and
// gets a retryable "Server stopped" answer (markStopped)".
//
// Left out on purpose: a question whose terminal write fails. finish then
// removes the storage and frees the slot all the same, which breaks "a
// failed terminal write still leaves the storage recoverable"; issue 20
// fixes it by merging the holders, so no test here encodes it as correct.

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// life is one Ask process over a task in review with two items.
type life struct {
	t       *testing.T
	dir     string
	st      *store.Store
	cap     store.Capability
	fp      *failpoints.Set
	loop    *sim.Loop
	clock   *sim.Clock
	d       *simd.D
	c       *ask.Coordinator
	owner   string
	key     string
	actions *ids.Seeded
	trace   []string
}

// lifeOpts shapes a life: wrap replaces the D Ask is given (returning nil
// gives Ask no D), cfg edits the configuration before New.
type lifeOpts struct {
	wrap func(*simd.D) dadapter.D
	cfg  func(*ask.Config)
}

func newLife(t *testing.T, o lifeOpts) *life {
	t.Helper()
	l := &life{t: t, dir: t.TempDir(), fp: failpoints.New(), loop: &sim.Loop{}, actions: ids.NewSeeded(77),
		owner: "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"}
	l.clock = sim.NewClock(l.loop)
	l.d = simd.NewD(func(id string) string { return id }, func(line string) { l.trace = append(l.trace, line) })
	l.d.Now = l.clock.Now
	st, err := store.Open(filepath.Join(l.dir, "db"), store.Options{Now: l.clock.Now, IDs: ids.NewSeeded(5), Failpoints: l.fp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l.st, l.cap = st, st.ShutdownCapability()
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	l.key = id.Key()
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one", "two"}, Status: words.StatusInReview})
	}); err != nil {
		t.Fatal(err)
	}
	l.c = l.process(o, ids.NewSeeded(9))
	return l
}

// process builds an Ask process over the life's Store and D.
func (l *life) process(o lifeOpts, src ids.Source) *ask.Coordinator {
	l.t.Helper()
	var d dadapter.D = l.d
	if o.wrap != nil {
		d = o.wrap(l.d)
	}
	cfg := ask.Config{Store: l.st, Capability: l.cap, D: d, Loop: l.loop, Clock: l.clock,
		IDs: src, Owner: l.owner, Trace: func(line string) { l.trace = append(l.trace, line) }}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	c, err := ask.New(cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

func (l *life) open() {
	l.t.Helper()
	if err := l.c.Open(context.Background()); err != nil {
		l.t.Fatal(err)
	}
	<-l.c.Opened()
	if err := l.c.OpenErr(context.Background()); err != nil {
		l.t.Fatalf("Ask stayed closed: %v\n%s", err, l.lines())
	}
}

func (l *life) lines() string { return strings.Join(l.trace, "\n") }

// ask asks a question on the whole plan under a fresh action ID.
func (l *life) ask(text string) (store.Response, error) {
	return l.c.Ask(context.Background(), ask.Request{PlanKey: l.key, ActionID: l.actions.UUID(), Text: text})
}

// admitted asks and requires an applied question; it returns its ID.
func (l *life) admitted(text string) string {
	l.t.Helper()
	resp, err := l.ask(text)
	if err != nil || resp.Outcome != "applied" || resp.AttemptID == "" {
		l.t.Fatalf("ask %q: %+v, %v; want it applied\n%s", text, resp, err, l.lines())
	}
	return resp.AttemptID
}

// refused asks and requires a refusal saying want.
func (l *life) refused(text, want string) {
	l.t.Helper()
	resp, err := l.ask(text)
	var r *store.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Message, want) {
		l.t.Fatalf("ask %q: %+v, %v; want a refusal saying %q\n%s", text, resp, err, want, l.lines())
	}
}

func (l *life) question(id string) store.Question {
	l.t.Helper()
	qs, err := l.c.Questions(l.key)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, q := range qs {
		if q.ID == id {
			return q
		}
	}
	l.t.Fatalf("no question %s among %+v", id, qs)
	return store.Question{}
}

func (l *life) count() int {
	l.t.Helper()
	qs, err := l.c.Questions(l.key)
	if err != nil {
		l.t.Fatal(err)
	}
	return len(qs)
}

func (l *life) policy(op, mode, msg string) {
	l.t.Helper()
	if err := l.d.SetPolicy(op, simd.Policy{Mode: mode, Msg: msg}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *life) settle(id string, s dadapter.Settlement) {
	l.t.Helper()
	h := l.d.Handle(id)
	if h == nil {
		l.t.Fatalf("question %s has no agent\n%s", id, l.lines())
	}
	if err := h.Settle(s); err != nil {
		l.t.Fatal(err)
	}
	l.loop.Drain()
}

func (l *life) finishHeld(op, id string, err error) {
	l.t.Helper()
	if e := l.d.Finish(op, id, err); e != nil {
		l.t.Fatal(e)
	}
	l.loop.Drain()
}

// wantEnded requires the question's terminal row and its storage gone.
func (l *life) wantEnded(id, state, reasonOrAnswer string, retryable bool) {
	l.t.Helper()
	q := l.question(id)
	got := q.Reason
	if state == store.QuestionCompleted {
		got = q.Answer
	}
	if q.State != state || !strings.Contains(got, reasonOrAnswer) || q.Retryable != retryable {
		l.t.Fatalf("question = %+v; want %s with %q, retryable %v\n%s", q, state, reasonOrAnswer, retryable, l.lines())
	}
	if l.d.StoragePresent(id) {
		l.t.Fatalf("question %s ended with its storage still there", id)
	}
}

// wantSlotsFree requires both slots free: two questions are admitted.
// It leaves both in flight.
func (l *life) wantSlotsFree() []string {
	l.t.Helper()
	return []string{l.admitted("free slot one?"), l.admitted("free slot two?")}
}

// answer is a valid question result.
func answer(text string) dadapter.Settlement {
	return dadapter.Settlement{Output: []byte(`{"summary":"s","answer":"` + text + `"}`)}
}

// TestQuestionLife walks one question from admission to its terminal row
// for every outcome its agent, D and the Store can give it at each step,
// and checks the contract's outcome: the terminal row saying why (a
// failure is retryable: asking again can help; "No agent is configured"
// is not), the storage removed after that write, and the slot freed only
// then, so two more questions can be asked.
func TestQuestionLife(t *testing.T) {
	cases := []struct {
		name  string
		opts  lifeOpts
		setup func(l *life)
		// run ends the question admitted as id, step by step.
		run              func(l *life, id string)
		state, says      string
		retryable, agent bool // agent: D's agent was started
	}{
		{name: "answered", agent: true, state: store.QuestionCompleted, says: "Item 1 builds the parser",
			run: func(l *life, id string) { l.settle(id, answer("Item 1 builds the parser")) }},
		{name: "answered in its summary", agent: true, state: store.QuestionCompleted, says: "only the summary",
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{Output: []byte(`{"summary":"only the summary"}`)})
			}},
		{name: "an answer that is no question result", agent: true, state: store.QuestionFailed, retryable: true,
			says: "The agent's answer is not a valid question result.",
			run:  func(l *life, id string) { l.settle(id, dadapter.Settlement{Output: []byte(`not json`)}) }},
		{name: "an answer with an answer of another type", agent: true, state: store.QuestionFailed, retryable: true,
			says: "not a valid question result",
			run:  func(l *life, id string) { l.settle(id, dadapter.Settlement{Output: []byte(`{"answer":7}`)}) }},
		// The runner's output check for the question kind: "usage" is an
		// object and "summary" a string when given, even beside an answer.
		{name: "an answer whose usage is no object", agent: true, state: store.QuestionFailed, retryable: true,
			says: "not a valid question result",
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{Output: []byte(`{"answer":"a","usage":5}`)})
			}},
		{name: "an answer whose summary is null", agent: true, state: store.QuestionFailed, retryable: true,
			says: "not a valid question result",
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{Output: []byte(`{"answer":"a","summary":null}`)})
			}},
		{name: "an empty answer", agent: true, state: store.QuestionFailed, retryable: true,
			says: "not a valid question result",
			run:  func(l *life, id string) { l.settle(id, dadapter.Settlement{Output: []byte(`{"answer":""}`)}) }},
		{name: "timed out", agent: true, state: store.QuestionFailed, retryable: true,
			says: "Timed out: the agent did not answer within 10m0s",
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{StopReason: words.StopTimeout, ExitCode: 137, Output: []byte(`{"answer":"late"}`)})
			}},
		{name: "timed out, its own timeout", agent: true, state: store.QuestionFailed, retryable: true,
			opts: lifeOpts{cfg: func(c *ask.Config) { c.Timeout = 3 * time.Minute }},
			says: "did not answer within 3m0s",
			run: func(l *life, id string) {
				if dl := l.d.Handle(id).Input().Deadline; !dl.Equal(sim.Epoch.Add(3 * time.Minute)) {
					t.Errorf("deadline %v; want the question's timeout from now", dl)
				}
				l.settle(id, dadapter.Settlement{StopReason: words.StopTimeout, ExitCode: 137})
			}},
		{name: "the agent exits non-zero", agent: true, state: store.QuestionFailed, retryable: true,
			says: `The agent failed (exit 2, stop ""): boom`,
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{ExitCode: 2, Output: []byte(`{"answer":"a"}`), Diagnostic: "boom"})
			}},
		{name: "D stops the agent", agent: true, state: store.QuestionFailed, retryable: true,
			says: `stop "output-limit"`,
			run: func(l *life, id string) {
				l.settle(id, dadapter.Settlement{StopReason: words.StopOutputLimit, Output: []byte(`{"answer":"a"}`)})
			}},
		{name: "task storage fails", state: store.QuestionFailed, retryable: true, says: "Task storage: disk full",
			setup: func(l *life) { l.policy(simd.OpStorage, "fail", "disk full") },
			run:   func(*life, string) {}},
		{name: "task storage refused before spawning", state: store.QuestionFailed, retryable: true, says: "Task storage: no helper",
			setup: func(l *life) { l.policy(simd.OpStorage, "refuse", "no helper") },
			run:   func(*life, string) {}},
		{name: "the agent cannot start", state: store.QuestionFailed, retryable: true, says: "The agent could not start: no engine",
			setup: func(l *life) { l.policy(simd.OpStart, "fail", "no engine") },
			run:   func(*life, string) {}},
		{name: "the task's head cannot be read", state: store.QuestionFailed, retryable: true,
			says: "The task's head could not be read: store: begin read: failpoint store/view",
			// Ask's own reads go through View; the admission's
			// transaction does not, so only the head's read fails.
			setup: func(l *life) {
				if err := l.fp.Enable("store/view", "1*return"); err != nil {
					t.Fatal(err)
				}
			},
			run: func(l *life, _ string) { l.fp.Disable("store/view") }},
		{name: "no agent configured", state: store.QuestionFailed, retryable: false,
			says: "No agent is configured",
			opts: lifeOpts{wrap: func(*simd.D) dadapter.D { return nil }},
			run:  func(*life, string) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLife(t, c.opts)
			l.open()
			if c.setup != nil {
				c.setup(l)
			}
			id := l.admitted("why does item 1 come first?")
			c.run(l, id)
			if c.agent != (l.d.Handle(id) != nil) {
				t.Fatalf("agent started: %v; want %v\n%s", l.d.Handle(id) != nil, c.agent, l.lines())
			}
			l.wantEnded(id, c.state, c.says, c.retryable)
			l.policy(simd.OpStorage, "auto", "")
			l.policy(simd.OpStart, "auto", "")
			l.wantSlotsFree()
		})
	}
}

// TestQuestionAgentInput: the question's agent runs in D as a read-only
// question attempt under Ask's own owner, on the storage allocated for the
// question, with the composed prompt (the question's text without one),
// and a deadline of the question's timeout, 10 minutes by default.
func TestQuestionAgentInput(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    func(*ask.Config)
		prompt string
	}{
		{"the question's text", nil, "why?"},
		{"a composed prompt", func(c *ask.Config) {
			c.Prompt = func(q store.Question) string { return "Q: " + q.Text }
			c.Repository = func(string) string { return "o/r" }
		}, "Q: why?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLife(t, lifeOpts{cfg: c.cfg})
			l.open()
			id := l.admitted("why?")
			h := l.d.Handle(id)
			if h == nil {
				t.Fatalf("no agent started\n%s", l.lines())
			}
			in := h.Input()
			if in.Prompt != c.prompt || in.Phase != words.PhaseQuestions || in.RunnerOwner != l.owner ||
				!in.Deadline.Equal(sim.Epoch.Add(10*time.Minute)) || in.Storage == nil || in.Storage.Owner().AttemptID != id {
				t.Fatalf("the agent's input %+v; want prompt %q, phase questions, owner %s, deadline in 10m, the question's storage",
					in, c.prompt, l.owner)
			}
			if q := l.question(id); q.State != store.QuestionRunning {
				t.Fatalf("question %+v; want running once its agent started", q)
			}
		})
	}
}

// TestQuestionSlots: "two question slots". A third question finds none and
// is refused with nothing saved; a slot is held from admission until the
// question's storage is removed, which comes after its terminal write; a
// removal that fails keeps its slot held until restart.
func TestQuestionSlots(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.open()
	q1, q2 := l.admitted("one?"), l.admitted("two?")
	l.refused("three?", "two questions are being answered already")
	if n := l.count(); n != 2 {
		t.Fatalf("%d questions saved; the refused one must save nothing", n)
	}

	// Q1 answers: its terminal row is written first, its storage's
	// removal is held, and its slot with it.
	l.policy(simd.OpRemove, "hold", "")
	l.settle(q1, answer("yes"))
	if q := l.question(q1); q.State != store.QuestionCompleted || !l.d.StoragePresent(q1) {
		t.Fatalf("question %+v, storage present %v; want its answer saved before its storage goes", q, l.d.StoragePresent(q1))
	}
	l.refused("three?", "two questions are being answered already")
	l.finishHeld(simd.OpRemove, q1, nil)
	l.wantEnded(q1, store.QuestionCompleted, "yes", false)
	q3 := l.admitted("three?")

	// Q2's storage cannot be removed: its slot stays held.
	l.policy(simd.OpRemove, "fail", "volume busy")
	l.settle(q2, answer("no"))
	if q := l.question(q2); q.State != store.QuestionCompleted {
		t.Fatalf("question %+v; want its answer saved", q)
	}
	l.policy(simd.OpRemove, "auto", "")
	l.refused("four?", "Needs restart: task storage could not be removed (question "+q2+")")
	l.settle(q3, answer("maybe"))
	l.wantEnded(q3, store.QuestionCompleted, "maybe", false)
	l.admitted("four?")
	l.refused("five?", "Needs restart: task storage could not be removed")
}

// TestUnreleasedResourcesCloseAsk: D reports a resource it could not
// remove: the question still gets its answer, and Ask takes no new
// question until restart. A settlement that leaves nothing behind keeps it
// open.
func TestUnreleasedResourcesCloseAsk(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.open()
	q1 := l.admitted("one?")
	l.settle(q1, answer("clean"))
	q2 := l.admitted("two?")
	s := answer("dirty")
	s.Unreleased = []dadapter.Resource{{Kind: dadapter.ResourceKind("container"), ID: "c1"}}
	l.settle(q2, s)
	l.wantEnded(q2, store.QuestionCompleted, "dirty", false)
	l.refused("three?", "D could not remove some resources")
}

// TestStoppedAdmission: once admission stopped (shutdown step 1), a
// question the server admitted before "still saves its note, but starts
// no agent and gets a retryable "Server stopped" answer", in the same
// transaction, and holds no slot; once Close began, a question is answered
// ErrShuttingDown with nothing saved.
func TestStoppedAdmission(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.open()
	l.c.StopAdmission()
	l.c.StopAdmission()      // a second stop changes nothing
	for i := 0; i < 3; i++ { // more than the slots: none is held
		resp, err := l.ask("after the stop?")
		if err != nil || resp.Outcome != "applied" {
			t.Fatalf("ask after StopAdmission: %+v, %v; want the note saved", resp, err)
		}
		if l.d.Handle(resp.AttemptID) != nil || l.d.StoragePresent(resp.AttemptID) {
			t.Fatalf("question %s admitted after the stop started an agent or allocated storage", resp.AttemptID)
		}
		l.wantEnded(resp.AttemptID, store.QuestionFailed, words.ServerStopped, true)
	}
	if _, err := l.c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := l.count()
	if resp, err := l.ask("after close?"); !errors.Is(err, ask.ErrShuttingDown) {
		t.Fatalf("ask after Close: %+v, %v; want ErrShuttingDown", resp, err)
	}
	if l.count() != n {
		t.Fatalf("a question asked after Close was saved")
	}
}

// TestAskBeforeOpen: admission opens only after Ask's recovery: a question
// asked before Open is refused and saves nothing.
func TestAskBeforeOpen(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.refused("early?", "Ask's recovery is still running")
	if l.count() != 0 {
		t.Fatal("a question asked before Open was saved")
	}
	l.open()
	l.admitted("now?")
}

// TestAdmissionStatementFaults fails each statement of a question's
// admission in turn (the store/statement failpoint): the user action then
// reports the storage error and saves nothing, starts no agent and holds
// no slot; the run past the last statement admits it. The same for a
// question admitted after admission stopped, whose "Server stopped" answer
// is written in the admission's transaction: never a saved question left
// pending.
func TestAdmissionStatementFaults(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		l := newLife(t, lifeOpts{})
		l.open()
		if stopped {
			l.c.StopAdmission()
		}
		for k := 1; ; k++ {
			terms := "1*return"
			if k > 1 {
				terms = strconv.Itoa(k-1) + "*off->1*return"
			}
			before := l.count()
			if err := l.fp.Enable("store/statement", terms); err != nil {
				t.Fatal(err)
			}
			resp, err := l.ask("faulted?")
			reached := true
			for i := 0; i < k; i++ {
				if l.fp.Fire("store/statement") {
					reached = false
					break
				}
			}
			l.fp.Disable("store/statement")
			if !reached {
				if err != nil {
					t.Fatalf("stopped %v: the unfaulted run: %v", stopped, err)
				}
				want := store.QuestionRunning
				if stopped {
					want = store.QuestionFailed
				}
				if q := l.question(resp.AttemptID); q.State != want {
					t.Fatalf("stopped %v: question %+v; want %s", stopped, q, want)
				}
				break
			}
			if err != nil {
				if l.count() != before || len(l.d.Held()) > 0 {
					t.Fatalf("stopped %v, statement %d failed: %v, yet a question was saved or storage asked for", stopped, k, err)
				}
				continue
			}
			// The fault landed after the commit, in the question's own
			// start: the question is saved, and ends as it can.
			q := l.question(resp.AttemptID)
			if stopped && (q.State != store.QuestionFailed || q.Reason != words.ServerStopped) {
				t.Fatalf("statement %d failed: question %+v; want its Server stopped answer saved with it", k, q)
			}
			h := l.d.Handle(q.ID)
			if h == nil {
				continue
			}
			if q.State != store.QuestionPending {
				l.settle(q.ID, answer("done"))
				continue
			}
			// The fault failed its pending → running write: D is asked to
			// stop (capture-failure), and once it settled the row stays
			// pending and its slot is held under a marker until restart,
			// as an attempt's ("The pending → running write fails → slot
			// and marker remain until restart").
			if c := h.Cancels(); len(c) != 1 || c[0] != words.StopCaptureFailure {
				t.Fatalf("statement %d failed the start write: cancels %v; want capture-failure", k, c)
			}
			l.settle(q.ID, answer("done"))
			if q := l.question(q.ID); q.State != store.QuestionPending {
				t.Fatalf("statement %d failed the start write: question %+v after settlement; want it left pending for restart", k, q)
			}
			if !strings.Contains(l.lines(), "unresolved start-not-saved") {
				t.Fatalf("statement %d failed the start write: no marker holds its slot\n%s", k, l.lines())
			}
			t.Logf("statement %d failed the start write: D stopped, the slot held under a marker", k)
			// Only a restart clears the marker: the next statement is
			// faulted in a fresh life.
			l = newLife(t, lifeOpts{})
			l.open()
		}
		if !stopped {
			// Nothing faulted held a slot: one more fits beside the
			// admitted one.
			l.admitted("the second?")
		}
	}
}

// TestCloseAbortsEveryQuestion: Close stops admission, aborts each
// question in flight (D's Cancel("shutdown") of a running one, the
// storage allocation of one still allocating), and its channel closes
// only once each has settled, written its retryable "Server stopped"
// answer and had its storage removed. A second Close changes nothing.
func TestCloseAbortsEveryQuestion(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.open()
	running := l.admitted("running?")
	l.policy(simd.OpStorage, "hold", "")
	allocating := l.admitted("allocating?")
	closed, err := l.c.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := l.d.Handle(running).Cancels(); len(c) != 1 || c[0] != words.StopShutdown {
		t.Fatalf("the running question's cancels: %v; want shutdown", c)
	}
	if aborted, err := l.d.Aborted(simd.OpStorage, allocating); err != nil || !aborted {
		t.Fatalf("the allocating question's storage: aborted %v, %v; want aborted", aborted, err)
	}
	if _, err := l.c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := l.d.Handle(running).Cancels(); len(c) != 1 {
		t.Fatalf("a second Close cancelled again: %v", c)
	}
	select {
	case <-closed:
		t.Fatal("closed before any question settled")
	default:
	}
	l.settle(running, dadapter.Settlement{ExitCode: 137})
	l.wantEnded(running, store.QuestionFailed, words.ServerStopped, true)
	select {
	case <-closed:
		t.Fatal("closed while a storage allocation is in flight")
	default:
	}
	l.finishHeld(simd.OpStorage, allocating, nil)
	if l.d.Handle(allocating) != nil {
		t.Fatal("an aborted question started its agent")
	}
	if q := l.question(allocating); q.State != store.QuestionFailed || !q.Retryable {
		t.Fatalf("question %+v; want failed, retryable", q)
	}
	select {
	case <-closed:
	default:
		t.Fatalf("not closed after every question ended\n%s", l.lines())
	}
}

// lateStorageD allocates storage when asked but reports it only when the
// test says so, whatever the abort: a helper that finished its work just
// as the abort came.
type lateStorageD struct {
	*simd.D
	deliver func()
}

func (d *lateStorageD) PrepareTaskFilesystems(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	d.D.PrepareTaskFilesystems(context.Background(), owner, src, onGroup, func(fs dadapter.TaskFilesystems, err error) {
		d.deliver = func() { done(fs, err) }
	})
}

// TestStorageReadyAfterClose: storage whose allocation completed although
// Close aborted it starts no agent: the question gets "Server stopped",
// the storage is removed, and Close's channel then closes.
func TestStorageReadyAfterClose(t *testing.T) {
	var late *lateStorageD
	l := newLife(t, lifeOpts{wrap: func(d *simd.D) dadapter.D { late = &lateStorageD{D: d}; return late }})
	l.open()
	id := l.admitted("late?")
	closed, err := l.c.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	late.deliver()
	l.loop.Drain()
	if l.d.Handle(id) != nil {
		t.Fatalf("an agent started after Close\n%s", l.lines())
	}
	l.wantEnded(id, store.QuestionFailed, words.ServerStopped, true)
	select {
	case <-closed:
	default:
		t.Fatal("not closed after the last question ended")
	}
}

// TestEntryPointsWhoseEventNeverRan: Close and OpenErr hand their work to
// the loop; when their context has ended first, the event never ran and
// they say so instead of answering as if it had.
func TestEntryPointsWhoseEventNeverRan(t *testing.T) {
	l := newLife(t, lifeOpts{})
	l.open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ch, err := l.c.Close(ctx); err == nil || ch != nil {
		t.Errorf("Close with its context ended: %v, %v; want the context's error", ch, err)
	}
	if err := l.c.OpenErr(ctx); err == nil {
		t.Errorf("OpenErr with its context ended: no error")
	}
}

// TestNewChecksItsConfiguration: New refuses a configuration without its
// Store, Loop, Clock or IDs, or with an owner token that is not 32
// lowercase hex.
func TestNewChecksItsConfiguration(t *testing.T) {
	l := newLife(t, lifeOpts{})
	good := ask.Config{Store: l.st, Loop: l.loop, Clock: l.clock, IDs: ids.NewSeeded(1), Owner: l.owner}
	if _, err := ask.New(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	for name, edit := range map[string]func(*ask.Config){
		"no Store": func(c *ask.Config) { c.Store = nil },
		"no Loop":  func(c *ask.Config) { c.Loop = nil },
		"no Clock": func(c *ask.Config) { c.Clock = nil },
		"no IDs":   func(c *ask.Config) { c.IDs = nil },
		"no owner": func(c *ask.Config) { c.Owner = "" },
		"owner in capitals": func(c *ask.Config) {
			c.Owner = strings.ToUpper(l.owner)
		},
	} {
		cfg := good
		edit(&cfg)
		if _, err := ask.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestOpenAfterACrash: Open is Ask's startup: every question an earlier
// process left pending or running is failed (retryable: asking again can
// help), then D's recovery for Ask's owner, and each leftover storage
// whose question and allocation match a question of this database is
// removed; any other is left alone. Only then does admission open. A
// recovery that fails leaves Ask closed, saying why.
func TestOpenAfterACrash(t *testing.T) {
	stranger := dadapter.StorageOwner{AttemptID: "dddddddd-dddd-4ddd-8ddd-ddddddddddd1", AllocationID: "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeee1"}
	for _, c := range []struct {
		name   string
		fault  func(l *life)
		closed string // "" when Ask opens
	}{
		{name: "recovered"},
		{name: "the leftover questions cannot be failed", closed: "fail the questions an earlier process left",
			fault: func(l *life) {
				if err := l.fp.Enable("store/statement", "1*return"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "D's recovery fails", closed: "recover leftovers: engine gone",
			fault: func(l *life) { l.policy(simd.OpRecover, "fail", "engine gone") }},
		{name: "a leftover storage cannot be removed", closed: "remove the leftover storage of question",
			fault: func(l *life) { l.policy(simd.OpRemove, "fail", "volume busy") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLife(t, lifeOpts{})
			l.open()
			left := l.admitted("left running?")
			l.policy(simd.OpStorage, "hold", "")
			allocating := l.admitted("left allocating?")
			// An earlier process of another database left storage
			// under the same owner: not this database's question.
			stranger.RunnerOwner = l.owner
			l.d.AddStorage(stranger)
			l.policy(simd.OpStorage, "auto", "")
			// The process dies, one question running and one
			// allocating; a new one starts over the same file.
			l.d.ProcessDied()
			l.loop = &sim.Loop{}
			l.clock = sim.NewClock(l.loop)
			l.c = l.process(lifeOpts{}, ids.NewSeeded(10))
			if c.fault != nil {
				c.fault(l)
			}
			if err := l.c.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			<-l.c.Opened()
			l.fp.Disable("store/statement")
			err := l.c.OpenErr(context.Background())
			if c.closed != "" {
				if err == nil || !strings.Contains(err.Error(), c.closed) {
					t.Fatalf("OpenErr %v; want Ask closed saying %q\n%s", err, c.closed, l.lines())
				}
				l.policy(simd.OpRemove, "auto", "")
				l.refused("after?", "questions are closed until restart")
				return
			}
			if err != nil {
				t.Fatalf("OpenErr %v\n%s", err, l.lines())
			}
			for _, id := range []string{left, allocating} {
				l.wantEnded(id, store.QuestionFailed, words.QuestionLeftover, true)
			}
			if !l.d.StoragePresent(stranger.AttemptID) {
				t.Fatal("storage matching no question of this database was removed")
			}
			l.admitted("after?")
		})
	}
}
