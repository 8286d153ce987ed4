package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestEveryEngineRefusalIsReported is a fault sweep over one whole
// writable attempt (allocate, check the tree, run an agent that edits,
// inspect, export, commit, remove, recover), and over a crash's recovery
// (an agent runs when its runner's adapter is lost; a new adapter recovers
// the runner's leftovers and removes the storage it gets back). Each is
// first run with the engine answering every call, recording each call the
// adapter makes in each step; then, once per call it made, again with
// that call (the same call at the same place in its step) refused by the
// engine, with words of its own ("injected fault N"), the way a full disk
// or a daemon in trouble refuses. Each run must end with the engine's
// words in what the adapter told its caller (an error, or the settlement's
// diagnostic): a failure is reported with its cause, never turned into a
// success or into another failure's words. Only the calls retried lists
// may fail unreported: a removal is retried, and the test checks the
// retry. After every run, a restart's recovery for the runner leaves
// nothing of it on the engine.
//
// It is the adapter's answer to the sweep's ignore-error mutants: one
// guard per engine call, each reached by a refusal of its own.
func TestEveryEngineRefusalIsReported(t *testing.T) {
	w := newWorld(t)
	src := w.source()
	for _, sc := range []struct {
		name string
		run  func(f *faultRun)
	}{{"attempt", wholeAttempt}, {"crash", crashRecovery}} {
		t.Run(sc.name, func(t *testing.T) {
			w := w.sub(t)
			clean := runWithFault(w, src, sc.run, nil)
			if clean.report != "" {
				t.Fatalf("the run failed with every call answered:\n%s", clean.report)
			}
			// Every call of the clean run, by its place among the same
			// calls of its step: each is refused in a run of its own.
			type place struct {
				c   faultCall
				nth int
			}
			var places []place
			made := map[faultCall]int{}
			for _, c := range clean.calls {
				made[c]++
				places = append(places, place{c, made[c]})
			}
			t.Logf("%d requests, %d distinct calls", len(clean.calls), len(made))
			for i, pl := range places {
				c := pl.c
				t.Run(fmt.Sprintf("%02d %s %s #%d", i, c.step, c.call, pl.nth), func(t *testing.T) {
					t.Parallel() // each run has a runner of its own: its objects cannot confuse another's
					token := fmt.Sprintf("injected fault %d", i)
					r := runWithFault(w.sub(t), src, sc.run, &faultPlan{call: c, nth: pl.nth, words: token})
					t.Logf("told:\n%s\ncalls in %s: %v", orNothing(r.report), c.step, r.callsIn(c.step))
					if !r.fired {
						t.Fatalf("the refused call was never made again (calls: %v)", r.calls)
					}
					if retried[c] {
						// One more of the same call in the step than the clean run made.
						if r.report != "" {
							t.Errorf("a refused %s in %s is retried, and the retry is answered; yet the run failed:\n%s", c.call, c.step, r.report)
						}
						if got, want := count(r.callsIn(c.step), c.call), count(clean.callsIn(c.step), c.call)+1; got != want {
							t.Errorf("%s was made %d times in %s, want %d: the refusal and its retry", c.call, got, c.step, want)
						}
						return
					}
					wantTold(t, c, token, r)
				})
				if retried[c] {
					// Refused at every retry: the removal fails, and says so.
					t.Run(fmt.Sprintf("%02d %s %s #%d always", i, c.step, c.call, pl.nth), func(t *testing.T) {
						t.Parallel()
						token := fmt.Sprintf("injected fault %d, always", i)
						r := runWithFault(w.sub(t), src, sc.run, &faultPlan{call: c, nth: pl.nth, always: true, words: token})
						t.Logf("told:\n%s\ncalls in %s: %v", orNothing(r.report), c.step, r.callsIn(c.step))
						if got, clean := count(r.callsIn(c.step), c.call), count(clean.callsIn(c.step), c.call); got < clean+2 {
							t.Errorf("%s was made %d times in %s (%d in the clean run): not retried", c.call, got, c.step, clean)
						}
						wantTold(t, c, token, r)
					})
				}
			}
		})
	}
}

// wantTold fails t unless the run told its caller the words the engine
// refused c with (or, for a call whose words the client loses, the
// adapter's own words for it).
func wantTold(t *testing.T, c faultCall, token string, r faultResult) {
	t.Helper()
	want := token
	if w, ok := lostWords[c.call]; ok {
		want = w
	}
	if !strings.Contains(r.report, want) {
		t.Errorf("the engine refused %s in %s with %q, and the adapter's caller was not told so (%q); it was told:\n%s",
			c.call, c.step, token, want, orNothing(r.report))
	}
}

// wholeAttempt is a writable attempt as the runner makes it, each step's
// failure reported: allocate; check the tree; run an agent that edits;
// inspect, export and commit; remove; recover.
func wholeAttempt(f *faultRun) {
	t, d, ctx := f.w.t, f.d, context.Background()
	f.enter("allocate")
	fs, err := answered(t, "PrepareTaskFilesystems", func(done func(dadapter.TaskFilesystems, error)) {
		d.PrepareTaskFilesystems(ctx, f.owner, f.src, nil, done)
	})
	if f.report("allocate", err) {
		f.enter("check")
		_, err = checkTaskTree(t, ctx, d, fs, fs.Base())
		if f.report("check", err) {
			f.enter("start")
			in := dadapter.InvocationInput{RunnerOwner: f.owner.RunnerOwner, AttemptID: f.owner.AttemptID, Phase: "execute",
				Deadline: time.Now().Add(2 * time.Minute), Storage: fs, Prompt: "edit", Profile: f.w.profile("edit"), Output: &dtest.Sink{}}
			f.settled(start(t, d, in).await(2 * time.Minute))
			f.enter("inspect")
			_, err = inspect(t, ctx, d, fs)
			f.report("inspect", err)
			f.enter("export")
			_, err = export(t, ctx, d, fs, 1<<20)
			f.report("export", err)
			f.enter("commit")
			_, err = commit(t, ctx, d, fs)
			f.report("commit", err)
		}
		f.enter("remove")
		f.report("remove", answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { d.RemoveTaskFilesystems(fs, done) }))
	}
	f.enter("recover")
	rep, err := recoverWith(t, d, f.owner.RunnerOwner)
	f.report("recover", err)
	if len(rep.Storage) > 0 {
		f.report("recover", fmt.Errorf("%d storage left after its removal", len(rep.Storage)))
	}
}

// crashRecovery is a restart after a crash: an agent runs on its task
// storage when its runner's adapter is lost; a new adapter's recovery
// removes the agent and gives the storage back, and the storage is
// removed.
func crashRecovery(f *faultRun) {
	t, ctx := f.w.t, context.Background()
	// The lost adapter talks to the engine straight: its handle's calls
	// after the crash are not the restart's.
	lost := f.w.adapter(nil)
	fs, err := answered(t, "PrepareTaskFilesystems", func(done func(dadapter.TaskFilesystems, error)) {
		lost.PrepareTaskFilesystems(ctx, f.owner, f.src, nil, done)
	})
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	in := dadapter.InvocationInput{RunnerOwner: f.owner.RunnerOwner, AttemptID: f.owner.AttemptID, Phase: "execute",
		Deadline: time.Now().Add(2 * time.Minute), Storage: fs, Prompt: "sleep", Profile: f.w.profile("sleep"), Output: &dtest.Sink{}}
	inv := start(t, lost, in)
	inv.awaitOutput("fakeagent: sleep")
	crash(lost)

	f.enter("recover")
	rep, err := recoverWith(t, f.d, f.owner.RunnerOwner)
	if f.report("recover", err) {
		if len(rep.Storage) != 1 || len(rep.Unowned) > 0 {
			f.report("recover", fmt.Errorf("recovered %d storage handles and unowned %v, want the one storage", len(rep.Storage), rep.Unowned))
		}
		f.enter("remove")
		for _, st := range rep.Storage {
			f.report("remove", answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { f.d.RemoveTaskFilesystems(st, done) }))
		}
	}
	// The lost adapter's handle ends once its container is gone, which
	// the restart's recovery makes sure of.
	f.after = func() { inv.await(2 * time.Minute) }
}

// retried are the calls whose refusal does not fail the run: removals,
// which D retries within its cleanup window (cleanup.retry), and the
// volume reads that prove a volume D's own before its removal.
var retried = map[faultCall]bool{
	{"check", "DELETE /containers/{}"}:   true,
	{"start", "DELETE /containers/{}"}:   true,
	{"inspect", "DELETE /containers/{}"}: true,
	{"export", "DELETE /containers/{}"}:  true,
	{"commit", "DELETE /containers/{}"}:  true,
	{"remove", "DELETE /containers/{}"}:  true,
	{"remove", "GET /volumes/{}"}:        true,
	{"remove", "DELETE /volumes/{}"}:     true,
}

// lostWords are calls whose refusal the engine's client reports without
// the engine's words, and the words the adapter's report must hold
// instead: a refused attach is a failed upgrade of a hijacked connection
// ("unable to upgrade to tcp, received 500").
var lostWords = map[string]string{"POST /containers/{}/attach": "attach to the"}

func count(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// faultCall is one engine call as a step of the attempt makes it: its
// method and path, with object names and IDs, the API version and the
// query left out.
type faultCall struct{ step, call string }

// faultPlan says which call to refuse (the nth of its step, from 1), and
// with what words.
type faultPlan struct {
	call   faultCall
	nth    int
	always bool // and every time after, in that step
	words  string
}

// faultResult is what one run made and was told.
type faultResult struct {
	calls  []faultCall
	report string // every error and failed settlement's diagnostic, a line each
	fired  bool   // the planned refusal was made
}

// faultRun is one run through a proxy that may refuse a call.
type faultRun struct {
	w     *world
	d     *D // an adapter through the proxy
	src   dadapter.Source
	owner dadapter.StorageOwner
	after func() // if set, called after the restart's recovery

	mu    sync.Mutex
	step  string
	res   faultResult
	lines []string
}

// enter says which step the calls from now on belong to.
func (f *faultRun) enter(step string) {
	f.mu.Lock()
	f.step = step
	f.mu.Unlock()
}

// report notes err as the step's failure, and reports whether it is nil.
func (f *faultRun) report(step string, err error) bool {
	if err != nil {
		f.mu.Lock()
		f.lines = append(f.lines, step+": "+err.Error())
		f.mu.Unlock()
	}
	return err == nil
}

// settled notes a settlement that is not a success, or that left
// something it made.
func (f *faultRun) settled(s settledSnapshot) {
	if s.StopReason != "" || s.ExitCode != 0 || len(s.Unreleased) > 0 {
		f.report("settled", fmt.Errorf("stop %q, exit %d, unreleased %v: %s", s.StopReason, s.ExitCode, s.Unreleased, s.Diagnostic))
	}
}

// runWithFault runs run through a proxy, refusing plan's call if plan is
// not nil, and then removes what is left as a restart would: a new
// adapter's recovery for the runner, straight to the engine, and the
// removal of each storage it recovers. It checks that nothing labelled
// with the runner is left.
func runWithFault(w *world, src dadapter.Source, run func(*faultRun), plan *faultPlan) faultResult {
	t := w.t
	t.Helper()
	p := newProxy(t, w.cli)
	f := &faultRun{w: w, src: src,
		owner: dadapter.StorageOwner{RunnerOwner: dtest.NewToken(), AttemptID: dtest.NewID(), AllocationID: dtest.NewID()}}
	p.Fail(func(request string) string {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.step == "" {
			return ""
		}
		c := faultCall{f.step, engineCall(request)}
		f.res.calls = append(f.res.calls, c)
		if plan != nil && (!f.res.fired || plan.always) && c == plan.call && count(f.res.callsIn(c.step), c.call) >= plan.nth {
			f.res.fired = true
			return plan.words
		}
		return ""
	})
	f.d = w.adapter(p.newClient(t))
	run(f)
	p.Fail(nil)
	f.enter("")

	again := w.adapter(nil)
	left, err := recoverWith(t, again, f.owner.RunnerOwner)
	if err != nil {
		t.Errorf("the restart's recovery: %v", err)
	}
	for _, st := range left.Storage {
		if err := answeredErr(t, "RemoveTaskFilesystems", func(done func(error)) { again.RemoveTaskFilesystems(st, done) }); err != nil {
			t.Errorf("the restart's removal of %s: %v", st.Owner().AllocationID, err)
		}
	}
	if f.after != nil {
		f.after()
	}
	if objs := w.carrying(LabelRunner, f.owner.RunnerOwner); len(objs) > 0 {
		t.Errorf("left on the engine after the restart's recovery: %v", objs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.res.report = strings.Join(f.lines, "\n")
	return f.res
}

// callsIn lists the calls made in step, in order.
func (r faultResult) callsIn(step string) []string {
	var out []string
	for _, c := range r.calls {
		if c.step == step {
			out = append(out, c.call)
		}
	}
	return out
}

// answeredErr runs one of D's calls that answer with an error alone.
func answeredErr(t *testing.T, what string, call func(done func(error))) error {
	t.Helper()
	_, err := answered(t, what, func(done func(struct{}, error)) { call(func(err error) { done(struct{}{}, err) }) })
	return err
}

var (
	apiVersion = regexp.MustCompile(`^/v1\.\d+`)
	// objectSegment is a path segment that names an object: an ID or a
	// name D made (codeboost-<kind>-<uuid>), or an image reference.
	objectSegment = regexp.MustCompile(`^([0-9a-f]{12,}|codeboost-.*|.*:.*|sha256.*)$`)
)

// engineCall is a request line as a call: "POST /containers/{}/start".
func engineCall(request string) string {
	method, rest, _ := strings.Cut(request, " ")
	path, _, _ := strings.Cut(rest, " ")
	path, _, _ = strings.Cut(path, "?")
	path = apiVersion.ReplaceAllString(path, "")
	parts := strings.Split(path, "/")
	for i, s := range parts {
		if objectSegment.MatchString(s) {
			parts[i] = "{}"
		}
	}
	return method + " " + strings.Join(parts, "/")
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}

// TestAllocationFailsWithTheHostsReason: an allocation whose host side
// fails (the runner-owned repository cannot be made, the source
// repository has no commit, the staging directory cannot be made) fails
// with that step's words, after its volumes were made, and backs out:
// nothing of it is left on the engine, and nothing is held.
func TestAllocationFailsWithTheHostsReason(t *testing.T) {
	w := newWorld(t)
	unborn := t.TempDir()
	git(t, unborn, "init", "-q", "-b", "main")
	src := w.source()
	for _, c := range []struct {
		name  string
		repo  string
		block string // a file where the runner's directory of that name goes
		want  string
	}{
		{"no runner-owned repository", src.Repository, "repositories", "/repositories is not a directory"},
		{"no commit", unborn, "", "gitrepo: read HEAD of " + unborn},
		{"staging blocked", src.Repository, "staging", "staging directory: mkdir "},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := w.sub(t)
			d := w.adapter(nil)
			owner := newOwner(dtest.NewToken())
			if c.block != "" {
				if err := os.MkdirAll(filepath.Join(w.root, owner.RunnerOwner), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(w.root, owner.RunnerOwner, c.block), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fs, err := answered(t, "PrepareTaskFilesystems", func(done func(dadapter.TaskFilesystems, error)) {
				d.PrepareTaskFilesystems(context.Background(), owner, dadapter.Source{Repository: c.repo}, nil, done)
			})
			want := strings.ReplaceAll(c.want, "mkdir ", "mkdir "+filepath.Join(w.root, owner.RunnerOwner, c.block)+": ")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("allocation: %v, %v; want it failed with %q", fs, err, want)
			}
			if objs := w.carrying(LabelRunner, owner.RunnerOwner); len(objs) > 0 {
				t.Errorf("left on the engine: %v", objs)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.held) > 0 {
				t.Errorf("held after the failure: %v", d.held)
			}
		})
	}
}

// TestHelperMadeWithoutAnAnswerIsRemoved: a helper container's create
// that the engine carries out but does not answer in time (a loaded
// engine) may have made the container, which D knows only by its name:
// the helper's caller gets the create's error, and the container is
// found by name and removed before the call returns. (A create the
// engine refused made nothing, and is not looked for.)
func TestHelperMadeWithoutAnAnswerIsRemoved(t *testing.T) {
	w := newWorld(t)
	p := newProxy(t, w.cli)
	d := w.adapter(p.newClient(t))
	st := w.prepare(d, dtest.NewToken())
	p.Withhold(func(r string) bool {
		return strings.HasPrefix(r, "POST ") && strings.Contains(r, "/containers/create?")
	})
	_, err := checkTaskTree(t, context.Background(), d, st, st.base)
	p.Withhold(nil)
	if err == nil || !strings.Contains(err.Error(), "create the tree container") {
		t.Fatalf("a tree check whose create was not answered: %v", err)
	}
	if left := w.helpers(st.owner.AllocationID); len(left) > 0 {
		t.Errorf("the tree check returned with its container still there: %v", left)
	}
}
