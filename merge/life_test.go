package merge_test

// A merge click's life, walked on the simulator's loop, the simulated
// GitHub and a real SQLite Store with failpoints: the read before
// admission, beginMergeAttempt in the click's user action, the final check
// at the irreversible boundary, the merge command and its settlement, the
// status poll and the startup's reconciliation. The contract's words:
// "Only a confirmed merged outcome closes the task"; "re-read the task's
// state version, the plan's review_version … and the coordinator's
// closing flag after the final await. Stop if any of them changed"; "A
// replayed merge click therefore returns the same attempt's current
// outcome and never starts a second attempt"; "Only outcomes that applied
// nothing for a passing reason are not recorded, so the UI may resend
// them"; step 3 "await request-owned work (the merge coordinator)".

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// gh is the simulated GitHub with faults of its own: the next pull
// request reads fail with errs, in order; onRead runs at each read; a
// read whose context has ended answers its error, as the real client does.
type gh struct {
	*sim.GitHub
	mu     sync.Mutex
	errs   []error
	reads  int
	onRead func(ctx context.Context)
}

func (g *gh) PullRequest(ctx context.Context, repo string, n int) (codehost.PullRequest, error) {
	g.mu.Lock()
	g.reads++
	var err error
	if len(g.errs) > 0 {
		err, g.errs = g.errs[0], g.errs[1:]
	}
	on := g.onRead
	g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return codehost.PullRequest{}, err
	}
	if on != nil {
		on(ctx)
	}
	if err != nil {
		return codehost.PullRequest{}, err
	}
	return g.GitHub.PullRequest(ctx, repo, n)
}

func (g *gh) failNext(errs ...error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.errs = append(g.errs, errs...)
}

func (g *gh) readCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads
}

// flight is a merge coordinator over one approved task in review whose
// pull request is o/r#1, open and mergeable at head abc.
type flight struct {
	t       *testing.T
	st      *store.Store
	fp      *failpoints.Set
	loop    *sim.Loop
	host    *gh
	c       *merge.Coordinator
	key     string
	actions *ids.Seeded
	trace   []string
}

type flightOpts struct {
	noHost bool
	cfg    func(*merge.Config)
}

func newFlight(t *testing.T, o flightOpts) *flight {
	t.Helper()
	f := &flight{t: t, fp: failpoints.New(), loop: &sim.Loop{}, actions: ids.NewSeeded(41)}
	clock := sim.NewClock(f.loop)
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: clock.Now, IDs: ids.NewSeeded(4), Failpoints: f.fp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	f.host = &gh{GitHub: sim.NewGitHub(func(line string) { f.trace = append(f.trace, line) })}
	yes := true
	f.host.SetPullRequest("o/r", codehost.PullRequest{Number: 1, State: "open", HeadSHA: "abc", Mergeable: &yes})
	f.key = approvedTaskInReview(t, st)
	cfg := merge.Config{Store: st, Capability: st.ShutdownCapability(), Host: f.host, Loop: f.loop, IDs: ids.NewSeeded(8),
		PullRequest: func(string) (string, int, bool) { return "o/r", 1, true }, Failpoints: f.fp,
		Trace: func(line string) { f.trace = append(f.trace, line) }}
	if o.noHost {
		cfg.Host = nil
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	f.c, err = merge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *flight) lines() string { return strings.Join(f.trace, "\n") }

// request is a click at the versions the task shows now.
func (f *flight) request() merge.Request {
	f.t.Helper()
	var r merge.Request
	if err := f.st.View(func(tx *store.Tx) error {
		task, err := tx.Task(f.key)
		if err != nil {
			return err
		}
		p, err := tx.Plan(f.key)
		r = merge.Request{PlanKey: f.key, ActionID: f.actions.UUID(), ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: p.ReviewVersion}
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *flight) merge(r merge.Request) (store.Response, error) {
	return f.c.Merge(context.Background(), r)
}

// latest is the task's latest merge attempt (ok false: none).
func (f *flight) latest() (m store.MergeAttempt, ok bool) {
	f.t.Helper()
	if err := f.st.View(func(tx *store.Tx) (err error) { m, ok, err = tx.LatestMerge(f.key); return err }); err != nil {
		f.t.Fatal(err)
	}
	return
}

func (f *flight) status() words.TaskStatus {
	f.t.Helper()
	var task store.Task
	if err := f.st.View(func(tx *store.Tx) (err error) { task, err = tx.Task(f.key); return err }); err != nil {
		f.t.Fatal(err)
	}
	return task.Status
}

func (f *flight) setPR(fn func(*codehost.PullRequest)) {
	f.t.Helper()
	if err := f.host.Update("o/r", 1, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *flight) hook(name string, fn func()) {
	f.t.Helper()
	if err := f.fp.SetHook(name, fn); err != nil {
		f.t.Fatal(err)
	}
}

// bumpStateVersion saves a note on the task (a question), which moves its
// state version and nothing a reviewer approved.
func (f *flight) bumpStateVersion() {
	f.t.Helper()
	q := ids.NewSeeded(99)
	if err := f.st.Update(func(tx *store.Tx) error {
		_, err := tx.AskQuestion(f.key, q.UUID(), q.UUID(), nil, "still fine?")
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
}

// admitted merges and requires "in progress".
func (f *flight) admitted() (merge.Request, store.MergeAttempt) {
	f.t.Helper()
	r := f.request()
	resp, err := f.merge(r)
	if err != nil || resp.Outcome != "in progress" {
		f.t.Fatalf("merge: %+v, %v; want in progress\n%s", resp, err, f.lines())
	}
	m, ok := f.latest()
	if !ok || m.ID != resp.AttemptID {
		f.t.Fatalf("latest merge %+v; want attempt %s", m, resp.AttemptID)
	}
	return r, m
}

// TestMergeFlight walks an admitted merge through every outcome its final
// check and its merge command can have, and checks the attempt's state
// and reason, the task's status (only a confirmed merge closes it), the
// click's saved response (it follows the outcome), and that the
// coordinator is idle once the outcome is written.
func TestMergeFlight(t *testing.T) {
	unavailable := errors.New("GitHub is down")
	cases := []struct {
		name   string
		opts   flightOpts
		arm    func(f *flight)
		state  string
		reason string
	}{
		{name: "merged", state: store.MergeMerged},
		{name: "queued", state: store.MergeQueued, arm: func(f *flight) { f.host.NextMerge("queued") }},
		{name: "refused by GitHub", state: store.MergeFailed, reason: "GitHub refused the merge: ",
			arm: func(f *flight) { f.host.NextMerge("refused") }},
		{name: "no answer, nothing merged", state: store.MergeSubmitting,
			arm: func(f *flight) { f.host.NextMerge("unknown") }},
		{name: "no answer, merged", state: store.MergeSubmitting,
			arm: func(f *flight) { f.host.NextMerge("unknown-merged") }},
		{name: "the final check cannot read GitHub", state: store.MergeFailed,
			reason: "GitHub could not be read for the final check (GitHub is down); nothing was merged",
			arm: func(f *flight) {
				f.host.onRead = func(context.Context) { f.host.failNext(unavailable); f.host.onRead = nil }
			}},
		{name: "merged on GitHub before the command", state: store.MergeMerged,
			arm: func(f *flight) {
				f.host.onRead = func(context.Context) {
					f.host.onRead = func(context.Context) {
						f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" })
					}
				}
			}},
		{name: "closed before the command", state: store.MergeRemoved, reason: "the pull request was closed before the merge",
			arm: func(f *flight) {
				f.host.onRead = func(context.Context) {
					f.host.onRead = func(context.Context) { f.setPR(func(pr *codehost.PullRequest) { pr.State = "closed" }) }
				}
			}},
		{name: "the head moved", state: store.MergeFailed, reason: "the pull request's head moved since the merge was asked for",
			arm: func(f *flight) {
				f.host.onRead = func(context.Context) {
					f.host.onRead = func(context.Context) { f.setPR(func(pr *codehost.PullRequest) { pr.HeadSHA = "def" }) }
				}
			}},
		{name: "the task changed during the final check", state: store.MergeFailed,
			reason: "the review changed during the final check; nothing was merged",
			arm:    func(f *flight) { f.hook("merge/before-final-reread", f.bumpStateVersion) }},
		{name: "the task cannot be read again", state: store.MergeFailed,
			reason: "the task could not be read again before the merge: store: statement failed",
			arm: func(f *flight) {
				f.hook("merge/before-final-reread", func() {
					if err := f.fp.Enable("store/statement", "1*return"); err != nil {
						t.Fatal(err)
					}
				})
			}},
		{name: "shutdown began during the final check", state: store.MergeFailed,
			reason: "codeboost began shutting down before the merge was sent",
			arm:    func(f *flight) { f.hook("merge/before-final-reread", f.c.Stop) }},
		{name: "the default timeout bounds each call", state: store.MergeMerged,
			opts: flightOpts{cfg: func(c *merge.Config) { c.Timeout = 0 }}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFlight(t, c.opts)
			if c.arm != nil {
				c.arm(f)
			}
			_, m := f.admitted()
			f.fp.Disable("store/statement")
			m, _ = f.latest()
			if m.State != c.state || !strings.Contains(m.Reason, c.reason) {
				t.Fatalf("attempt %+v; want %s with %q\n%s", m, c.state, c.reason, f.lines())
			}
			wantStatus := words.StatusInReview
			if c.state == store.MergeMerged {
				wantStatus = words.StatusMerged
			}
			if s := f.status(); s != wantStatus {
				t.Fatalf("task status %s; want %s", s, wantStatus)
			}
			idle, _ := f.c.AwaitIdle(context.Background())
			select {
			case <-idle:
			default:
				t.Fatal("not idle once the merge's outcome is written")
			}
		})
	}
}

// TestMergeBeforeAdmission: the pull request is read before admission. A
// pull request that cannot be merged is a recorded refusal (a replay
// answers the same refusal, even once it could merge); a GitHub that does
// not answer, or is still working out mergeability, is ErrUnavailable and
// records nothing, so the same click may be sent again. Neither begins an
// attempt.
func TestMergeBeforeAdmission(t *testing.T) {
	no := false
	cases := []struct {
		name     string
		opts     flightOpts
		arm      func(f *flight)
		recorded string // the refusal's words; "" for ErrUnavailable
	}{
		{name: "no GitHub block", opts: flightOpts{noHost: true}, recorded: "no GitHub block is configured"},
		{name: "no pull request named", recorded: "this task names no pull request to merge",
			opts: flightOpts{cfg: func(c *merge.Config) { c.PullRequest = nil }}},
		{name: "the pull request is not found", recorded: "the pull request cannot be read",
			arm: func(f *flight) { f.host.failNext(codehost.ErrNotFound) }},
		{name: "already merged", recorded: "o/r#1 is already merged",
			arm: func(f *flight) { f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" }) }},
		{name: "closed", recorded: "o/r#1 is closed",
			arm: func(f *flight) { f.setPR(func(pr *codehost.PullRequest) { pr.State = "closed" }) }},
		{name: "a draft", recorded: "o/r#1 is a draft",
			arm: func(f *flight) { f.setPR(func(pr *codehost.PullRequest) { pr.Draft = true }) }},
		{name: "cannot merge", recorded: "GitHub cannot merge o/r#1",
			arm: func(f *flight) { f.setPR(func(pr *codehost.PullRequest) { pr.Mergeable = &no }) }},
		{name: "GitHub does not answer",
			arm: func(f *flight) { f.host.failNext(codehost.ErrUnavailable) }},
		{name: "mergeability still unknown",
			arm: func(f *flight) { f.setPR(func(pr *codehost.PullRequest) { pr.Mergeable = nil }) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFlight(t, c.opts)
			if c.arm != nil {
				c.arm(f)
			}
			r := f.request()
			resp, err := f.merge(r)
			if _, ok := f.latest(); ok {
				t.Fatalf("an attempt was begun: %+v, %v", resp, err)
			}
			if c.recorded == "" {
				if !errors.Is(err, merge.ErrUnavailable) {
					t.Fatalf("merge: %+v, %v; want ErrUnavailable", resp, err)
				}
				// Nothing recorded: the same click now merges.
				yes := true
				f.setPR(func(pr *codehost.PullRequest) { pr.Mergeable = &yes })
				if resp, err := f.merge(r); err != nil || resp.Outcome != "in progress" || resp.Replayed {
					t.Fatalf("the click sent again: %+v, %v; want it admitted", resp, err)
				}
				return
			}
			var ref *store.Refusal
			if !errors.As(err, &ref) || !strings.Contains(ref.Message, c.recorded) || resp.Outcome != "refused" {
				t.Fatalf("merge: %+v, %v; want a recorded refusal saying %q", resp, err, c.recorded)
			}
			f.setPR(func(pr *codehost.PullRequest) {
				yes := true
				pr.Merged, pr.State, pr.Draft, pr.Mergeable = false, "open", false, &yes
			})
			resp, err = f.merge(r)
			if !errors.As(err, &ref) || !strings.Contains(ref.Message, c.recorded) || !resp.Replayed {
				t.Fatalf("the replayed click: %+v, %v; want the saved refusal", resp, err)
			}
			if _, ok := f.latest(); ok {
				t.Fatal("a replayed refusal began an attempt")
			}
		})
	}
}

// TestMergeClickReplayed: a replayed click returns the same attempt's
// current outcome and never starts a second attempt or reads GitHub.
func TestMergeClickReplayed(t *testing.T) {
	f := newFlight(t, flightOpts{})
	f.host.NextMerge("queued")
	r, m := f.admitted()
	reads := f.host.readCount()
	resp, err := f.merge(r)
	if err != nil || !resp.Replayed || resp.AttemptID != m.ID {
		t.Fatalf("replay: %+v, %v; want attempt %s replayed", resp, err, m.ID)
	}
	if f.host.readCount() != reads {
		t.Fatal("a replay read GitHub")
	}
	if again, _ := f.latest(); again.ID != m.ID {
		t.Fatalf("a replay began attempt %s", again.ID)
	}
}

// TestMergeRefusedInItsTransaction: beginMergeAttempt's guards refuse a
// click at a stale state version; the refusal is recorded and nothing
// is begun. Its saved-action read failing is a storage error, which
// records nothing.
func TestMergeRefusedInItsTransaction(t *testing.T) {
	f := newFlight(t, flightOpts{})
	r := f.request()
	r.ExpectedStateVersion--
	resp, err := f.merge(r)
	var ref *store.Refusal
	if !errors.As(err, &ref) || ref.Code != store.CodeStaleVersion || resp.Outcome != "refused" {
		t.Fatalf("merge at a stale version: %+v, %v; want the stale-version refusal", resp, err)
	}
	if _, ok := f.latest(); ok {
		t.Fatal("a refused click began an attempt")
	}

	r = f.request()
	if err := f.fp.Enable("store/view", "1*return"); err != nil {
		t.Fatal(err)
	}
	resp, err = f.merge(r)
	f.fp.Disable("store/view")
	if err == nil {
		t.Fatalf("merge whose saved-action read failed: %+v and no error", resp)
	}
	if _, ok := f.latest(); ok {
		t.Fatal("a click whose saved-action read failed began an attempt")
	}
}

// TestMergeAdmissionStatementFaults fails each statement of the click's
// admission in turn. Each faulted click either reports the storage error
// and begins nothing, or (a fault past the commit, in the merge's own
// writes) is admitted; a storage fault never reads as a review that
// changed.
func TestMergeAdmissionStatementFaults(t *testing.T) {
	for k := 1; ; k++ {
		f := newFlight(t, flightOpts{})
		r := f.request()
		terms := "1*return"
		if k > 1 {
			terms = strconv.Itoa(k-1) + "*off->1*return"
		}
		if err := f.fp.Enable("store/statement", terms); err != nil {
			t.Fatal(err)
		}
		resp, err := f.merge(r)
		reached := true
		for i := 0; i < k; i++ {
			if f.fp.Fire("store/statement") {
				reached = false
				break
			}
		}
		f.fp.Disable("store/statement")
		m, ok := f.latest()
		if !reached {
			if err != nil || m.State != store.MergeMerged {
				t.Fatalf("the unfaulted click: %+v, %v, attempt %+v; want merged", resp, err, m)
			}
			return
		}
		if err != nil {
			if ok {
				t.Fatalf("statement %d failed: %v, yet attempt %+v was begun", k, err, m)
			}
			continue
		}
		if strings.Contains(m.Reason, "review changed") {
			t.Fatalf("statement %d failed: attempt %+v; a storage fault read as a changed review\n%s", k, m, f.lines())
		}
	}
}

// TestMergeAfterStop: once shutdown step 1 stopped the coordinator, a
// click is answered ErrShuttingDown, a replayed one too, and nothing is
// begun; a stop that lands while GitHub answers the read before admission
// still stops it ("no merge is admitted and no merge command is sent
// after it").
func TestMergeAfterStop(t *testing.T) {
	f := newFlight(t, flightOpts{})
	f.host.NextMerge("queued")
	r, _ := f.admitted()
	f.c.Stop()
	if resp, err := f.merge(r); !errors.Is(err, merge.ErrShuttingDown) {
		t.Fatalf("a replayed click after Stop: %+v, %v; want ErrShuttingDown", resp, err)
	}

	g := newFlight(t, flightOpts{})
	g.host.onRead = func(context.Context) { g.c.Stop() }
	resp, err := g.merge(g.request())
	if !errors.Is(err, merge.ErrShuttingDown) {
		t.Fatalf("a click whose read before admission met Stop: %+v, %v; want ErrShuttingDown", resp, err)
	}
	if _, ok := g.latest(); ok {
		t.Fatal("a merge was begun after Stop")
	}
	idle, _ := g.c.AwaitIdle(context.Background())
	select {
	case <-idle:
	default:
		t.Fatal("not idle: the refused click is still counted in flight")
	}
}

// TestAwaitIdleWaitsForTheMergeInFlight: step 3 awaits the merges in
// flight. Stopped during a merge's final check, the merge is not sent and
// Idle closes only once its outcome is written; stopped while a click is
// being refused in its transaction, Idle closes once that click is done.
func TestAwaitIdleWaitsForTheMergeInFlight(t *testing.T) {
	f := newFlight(t, flightOpts{})
	// A click refused before any stop closes nothing: Idle is for Stop.
	stale := f.request()
	stale.ExpectedStateVersion--
	if _, err := f.merge(stale); err == nil {
		t.Fatal("a stale click was admitted")
	}
	var idle <-chan struct{}
	f.hook("merge/before-final-reread", func() {
		idle, _ = f.c.AwaitIdle(context.Background())
		select {
		case <-idle:
			t.Error("idle while a merge is in flight")
		default:
		}
	})
	f.admitted()
	if m, _ := f.latest(); m.State != store.MergeFailed {
		t.Fatalf("attempt %+v; want failed: shutdown began before the merge was sent", m)
	}
	select {
	case <-idle:
	default:
		t.Fatal("not idle after the last merge in flight ended")
	}

	g := newFlight(t, flightOpts{})
	g.hook("store/before-commit", func() {
		if idle == nil {
			idle, _ = g.c.AwaitIdle(context.Background())
		}
	})
	idle = nil
	r := g.request()
	r.ExpectedStateVersion--
	if _, err := g.merge(r); err == nil {
		t.Fatal("a stale click was admitted")
	}
	select {
	case <-idle:
	default:
		t.Fatal("not idle after the refused click ended")
	}
}

// TestNewChecksItsConfiguration: New refuses a configuration without its
// Store, Loop or IDs.
func TestNewChecksItsConfiguration(t *testing.T) {
	f := newFlight(t, flightOpts{})
	good := merge.Config{Store: f.st, Loop: f.loop, IDs: ids.NewSeeded(1)}
	if _, err := merge.New(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	for name, edit := range map[string]func(*merge.Config){
		"no Store": func(c *merge.Config) { c.Store = nil },
		"no Loop":  func(c *merge.Config) { c.Loop = nil },
		"no IDs":   func(c *merge.Config) { c.IDs = nil },
	} {
		cfg := good
		edit(&cfg)
		if _, err := merge.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestDisplayStatusObservesGitHub: the status poll of an attempt still
// queued (or submitting) with no call of its own in flight reads GitHub
// and records what it shows: merged closes the task; closed without a
// merge is removed; open changes nothing; a read that fails shows the
// attempt as it is. A terminal attempt is shown without reading GitHub.
func TestDisplayStatusObservesGitHub(t *testing.T) {
	cases := []struct {
		name  string
		arm   func(f *flight)
		state string
		tstat words.TaskStatus
	}{
		{"merged on GitHub", func(f *flight) {
			f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" })
		}, store.MergeMerged, words.StatusMerged},
		{"closed on GitHub", func(f *flight) {
			f.setPR(func(pr *codehost.PullRequest) { pr.State = "closed" })
		}, store.MergeRemoved, words.StatusInReview},
		{"still open", nil, store.MergeQueued, words.StatusInReview},
		{"GitHub cannot be read", func(f *flight) { f.host.failNext(codehost.ErrUnavailable) }, store.MergeQueued, words.StatusInReview},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFlight(t, flightOpts{})
			f.host.NextMerge("queued")
			_, m := f.admitted()
			if c.arm != nil {
				c.arm(f)
			}
			s, err := f.c.DisplayStatus(context.Background(), f.key)
			if err != nil || s.Attempt == nil || s.Attempt.ID != m.ID || s.Attempt.State != c.state {
				t.Fatalf("DisplayStatus: %+v, %v; want attempt %s %s", s.Attempt, err, m.ID, c.state)
			}
			if got, _ := f.latest(); got.State != c.state || f.status() != c.tstat {
				t.Fatalf("attempt %+v, task %s; want %s, %s", got, f.status(), c.state, c.tstat)
			}
			if c.state == store.MergeQueued {
				return
			}
			reads := f.host.readCount()
			if s, err := f.c.DisplayStatus(context.Background(), f.key); err != nil || s.Attempt.State != c.state {
				t.Fatalf("DisplayStatus of the ended attempt: %+v, %v", s.Attempt, err)
			}
			if f.host.readCount() != reads {
				t.Fatal("the status of an ended attempt read GitHub")
			}
		})
	}
}

// TestDisplayStatusDuringTheMergesOwnCalls: while the merge's own GitHub
// calls are in flight, the status poll shows the attempt as it is and
// reads nothing: the merge's settlement writes its outcome.
func TestDisplayStatusDuringTheMergesOwnCalls(t *testing.T) {
	f := newFlight(t, flightOpts{})
	var shown *store.MergeAttempt
	var reads int
	f.hook("merge/before-final-reread", func() {
		reads = f.host.readCount()
		f.loop.Interleave(func() {
			s, err := f.c.DisplayStatus(context.Background(), f.key)
			if err != nil {
				t.Error(err)
			}
			shown = s.Attempt
		})
		if f.host.readCount() != reads {
			t.Error("the status poll read GitHub while the merge's own calls were in flight")
		}
	})
	f.admitted()
	if shown == nil || shown.State != store.MergeSubmitting {
		t.Fatalf("shown %+v; want the attempt submitting", shown)
	}
}

// TestDisplayStatusErrors: a status poll whose observed outcome cannot be
// written (the write gate closed at shutdown step 3) returns that error,
// never a 200 that swallowed it; one whose loop call never ran returns
// the context's error.
func TestDisplayStatusErrors(t *testing.T) {
	f := newFlight(t, flightOpts{})
	f.host.NextMerge("queued")
	f.admitted()
	f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" })
	f.st.CloseWriteGate()
	if s, err := f.c.DisplayStatus(context.Background(), f.key); !errors.Is(err, store.ErrShuttingDown) {
		t.Fatalf("DisplayStatus after the gate closed: %+v, %v; want ErrShuttingDown", s.Attempt, err)
	}

	g := newFlight(t, flightOpts{})
	g.host.NextMerge("queued")
	g.admitted()
	g.setPR(func(pr *codehost.PullRequest) { pr.State = "closed" })
	ctx, cancel := context.WithCancel(context.Background())
	g.host.onRead = func(context.Context) { cancel() }
	if s, err := g.c.DisplayStatus(ctx, g.key); err == nil {
		t.Fatalf("DisplayStatus whose context ended during the read: %+v and no error", s.Attempt)
	}
}

// TestReconcileAtStartup: every attempt still submitting or queued is read
// on GitHub: merged closes the task, closed is removed, a submitting one
// whose pull request is still open was never merged and fails, a queued
// one waits. An attempt written before the coordinator (no pull request)
// is not read. Without a GitHub block nothing is read; a storage error is
// returned.
func TestReconcileAtStartup(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		arm    func(f *flight)
		state  string
	}{
		{"submitting, still open", "unknown", nil, store.MergeFailed},
		{"submitting, merged", "unknown", func(f *flight) {
			f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" })
		}, store.MergeMerged},
		{"queued, still open", "queued", nil, store.MergeQueued},
		{"queued, closed", "queued", func(f *flight) {
			f.setPR(func(pr *codehost.PullRequest) { pr.State = "closed" })
		}, store.MergeRemoved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFlight(t, flightOpts{})
			f.host.NextMerge(c.answer)
			f.admitted()
			if c.arm != nil {
				c.arm(f)
			}
			if err := f.c.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			if m, _ := f.latest(); m.State != c.state {
				t.Fatalf("attempt %+v; want %s", m, c.state)
			}
		})
	}
	t.Run("no GitHub block", func(t *testing.T) {
		f := newFlight(t, flightOpts{})
		f.host.NextMerge("unknown")
		f.admitted()
		nohost, err := merge.New(merge.Config{Store: f.st, Loop: f.loop, IDs: ids.NewSeeded(2)})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.fp.Enable("store/view", "1*return"); err != nil {
			t.Fatal(err)
		}
		err = nohost.Reconcile(context.Background())
		f.fp.Disable("store/view")
		if err != nil {
			t.Fatalf("Reconcile without GitHub: %v; want nothing read", err)
		}
		if m, _ := f.latest(); m.State != store.MergeSubmitting {
			t.Fatalf("attempt %+v; want it left submitting", m)
		}
	})
	t.Run("the active attempts cannot be read", func(t *testing.T) {
		f := newFlight(t, flightOpts{})
		f.host.NextMerge("unknown")
		f.admitted()
		if err := f.fp.Enable("store/view", "1*return"); err != nil {
			t.Fatal(err)
		}
		err := f.c.Reconcile(context.Background())
		f.fp.Disable("store/view")
		if err == nil {
			t.Fatal("Reconcile whose read failed: no error")
		}
		if m, _ := f.latest(); m.State != store.MergeSubmitting {
			t.Fatalf("attempt %+v; want it left submitting", m)
		}
	})
	t.Run("an attempt from before the coordinator", func(t *testing.T) {
		f := newFlight(t, flightOpts{})
		mid := ids.NewSeeded(3).UUID()
		if err := f.st.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(f.key, mid) }); err != nil {
			t.Fatal(err)
		}
		reads := f.host.readCount()
		if err := f.c.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if f.host.readCount() != reads {
			t.Fatal("an attempt naming no pull request was read on GitHub")
		}
		if m, _ := f.latest(); m.State != store.MergeSubmitting {
			t.Fatalf("attempt %+v; want it left submitting", m)
		}
	})
}

// TestDisplayStatusOfAnAttemptThatEndedMeanwhile: the status poll reads
// the attempt again inside its transaction, so an outcome recorded while
// it read GitHub (here, the attempt failed) is not written over: the poll
// shows it as it ended, with no error.
func TestDisplayStatusOfAnAttemptThatEndedMeanwhile(t *testing.T) {
	f := newFlight(t, flightOpts{})
	f.host.NextMerge("queued")
	_, m := f.admitted()
	f.setPR(func(pr *codehost.PullRequest) { pr.Merged, pr.State = true, "closed" })
	f.host.onRead = func(context.Context) {
		f.host.onRead = nil
		if err := f.st.Update(func(tx *store.Tx) error { return tx.EndMerge(m.ID, store.MergeFailed, "ended meanwhile") }); err != nil {
			t.Error(err)
		}
	}
	s, err := f.c.DisplayStatus(context.Background(), f.key)
	if err != nil || s.Attempt == nil || s.Attempt.State != store.MergeFailed {
		t.Fatalf("DisplayStatus: %+v, %v; want the attempt as it ended meanwhile", s.Attempt, err)
	}
	if f.status() != words.StatusInReview {
		t.Fatalf("task %s; an ended attempt's task must not close", f.status())
	}
}
