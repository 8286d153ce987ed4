package demo

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/sim/simenv"
	"github.com/codeboost/codeboost/words"
)

// The demo agent runs here on the simulator's loop and virtual clock, which
// the test advances by hand: each timer fires in order and its step runs on
// the loop before Advance returns. No test sleeps.

// recorder is a live output sink that keeps what it gets.
type recorder struct {
	out    strings.Builder
	closes int
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.closes > 0 {
		panic("write after close")
	}
	return r.out.Write(p)
}
func (r *recorder) Close() error { r.closes++; return nil }

// world is one demo agent on a hand-driven clock.
type world struct {
	t     *testing.T
	loop  *simenv.Loop
	clock *simenv.Clock
	agent *Agent
	d     dadapter.D
}

func newWorld(t *testing.T, seed uint64) *world {
	loop := &simenv.Loop{}
	clock := simenv.NewClock(loop)
	a := New(Options{Loop: loop, Clock: clock, Seed: seed})
	return &world{t: t, loop: loop, clock: clock, agent: a, d: a.D()}
}

// seedWhere returns the first seed whose first run fails, or does not.
func seedWhere(t *testing.T, fail bool) uint64 {
	for seed := uint64(1); seed < 100; seed++ {
		if newScript(seed, 1).fail == fail {
			return seed
		}
	}
	t.Fatalf("no seed under 100 whose first run has fail=%v", fail)
	return 0
}

const attemptID = "0b8f2d6e-5a4c-4e1b-9d3f-7a2c1e0f4b6d"

// owner is the runner owner token the tests' attempts run under.
var owner = strings.Repeat("a", 32)

// prepared allocates storage for the attempt and clones, each after the
// half second preparation takes.
func (w *world) prepared(id string) dadapter.TaskFilesystems {
	w.t.Helper()
	var fs dadapter.TaskFilesystems
	w.d.PrepareTaskFilesystems(context.Background(), dadapter.StorageOwner{RunnerOwner: owner, AttemptID: id, AllocationID: "a11c" + id[4:]},
		dadapter.Source{}, nil, func(f dadapter.TaskFilesystems, err error) {
			if err != nil {
				w.t.Fatal(err)
			}
			fs = f
		})
	w.clock.Advance(preparationTime - time.Millisecond)
	if fs != nil {
		w.t.Fatal("storage was ready before preparation took its time")
	}
	w.clock.Advance(time.Millisecond)
	if fs == nil {
		w.t.Fatal("storage not ready after half a second")
	}
	var cloned bool
	w.d.CreateTaskClone(context.Background(), "/root/owner/attempts/"+id, dadapter.Source{}, nil, func(c dadapter.Clone, err error) {
		cloned = err == nil
	})
	w.clock.Advance(preparationTime)
	if !cloned {
		w.t.Fatal("clone not ready after half a second")
	}
	return fs
}

// started prepares and starts an attempt.
func (w *world) started(id string, sink dadapter.OutputSink, deadline time.Time) (dadapter.Handle, dadapter.TaskFilesystems) {
	w.t.Helper()
	fs := w.prepared(id)
	h, err := w.d.Start(dadapter.InvocationInput{RunnerOwner: owner, AttemptID: id, Storage: fs, Output: sink, Deadline: deadline})
	if err != nil {
		w.t.Fatal(err)
	}
	return h, fs
}

// settlement is the handle's settlement so far, or nil.
func (w *world) settlement(h dadapter.Handle) *dadapter.Settlement {
	var s *dadapter.Settlement
	h.OnSettled(func(got dadapter.Settlement) { s = &got })
	return s
}

func (w *world) export(fs dadapter.TaskFilesystems, max int) dadapter.ExportResult {
	w.t.Helper()
	var r dadapter.ExportResult
	w.d.ExportTaskDiff(context.Background(), fs, max, func(got dadapter.ExportResult, err error) {
		if err != nil {
			w.t.Fatal(err)
		}
		r = got
	})
	return r
}

// TestRunTakesTimeStreamsAndCompletes: a run prints its work over several
// seconds, then exits 0 with a result carrying a summary and usage; its
// diff holds every change of its item, and the commit is a bundle of it.
func TestRunTakesTimeStreamsAndCompletes(t *testing.T) {
	seed := seedWhere(t, false)
	w := newWorld(t, seed)
	sink := &recorder{}
	h, fs := w.started(attemptID, sink, time.Time{})
	script := newScript(seed, 1)

	w.clock.Advance(2 * time.Second)
	early := sink.out.String()
	if !strings.HasPrefix(early, "demo agent: "+items[0].title+"\n") || w.settlement(h) != nil {
		t.Fatalf("after 2 s: settled %v, output %q", w.settlement(h) != nil, early)
	}
	w.clock.Advance(minRun - 2*time.Second - time.Millisecond)
	if w.settlement(h) != nil {
		t.Fatal("settled before the shortest run's length")
	}
	w.clock.Advance(runRange)
	s := w.settlement(h)
	if s == nil {
		t.Fatal("not settled after the longest run's length")
	}
	if s.StopReason != "" || s.ExitCode != 0 {
		t.Errorf("settlement: stop %q exit %d", s.StopReason, s.ExitCode)
	}
	var result dadapter.Result
	if err := json.Unmarshal(s.Output, &result); err != nil || result.Summary != items[0].summary {
		t.Errorf("result %s: %v", s.Output, err)
	}
	if u, ok := dadapter.ParseUsage(s.Output); !ok || u != script.usage || u.InputTokens == 0 || u.CostUSD == 0 {
		t.Errorf("usage %+v, %v; want %+v", u, ok, script.usage)
	}
	out := sink.out.String()
	for _, want := range []string{"reading count.go\n", "tool: grep", "editing count.go (+1 -0)\n", "running go test ./...\nok  \t", "done: " + items[0].summary + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if sink.closes != 1 {
		t.Errorf("sink closed %d times", sink.closes)
	}

	if r := w.export(fs, 1<<20); string(r.Diff) != items[0].diff(len(items[0].hunks)) || r.Truncated {
		t.Errorf("export:\n%s", r.Diff)
	}
	var b dadapter.Bundle
	w.d.CommitTaskChanges(context.Background(), fs, func(got dadapter.Bundle, err error) {
		if err != nil {
			t.Fatal(err)
		}
		b = got
	})
	if _, err := hex.DecodeString(b.Commit); err != nil || len(b.Commit) != 40 || string(b.Data) != items[0].diff(3) {
		t.Errorf("bundle: commit %q, %d bytes", b.Commit, len(b.Data))
	}
	removed := false
	w.d.RemoveTaskFilesystems(fs, func(err error) { removed = err == nil })
	if !removed || w.agent.runs[attemptID] != nil {
		t.Errorf("storage removed %v; run kept %v", removed, w.agent.runs[attemptID] != nil)
	}
}

// TestRunFailsItsTests: a failing run exits 1 and its last output, which
// the runner keeps as the diagnostic, names the failing test.
func TestRunFailsItsTests(t *testing.T) {
	w := newWorld(t, seedWhere(t, true))
	sink := &recorder{}
	h, _ := w.started(attemptID, sink, time.Time{})
	w.clock.Advance(minRun + runRange)
	s := w.settlement(h)
	if s == nil || s.ExitCode != 1 || s.StopReason != "" {
		t.Fatalf("settlement %+v", s)
	}
	if got := string(s.Output); got != "go test ./... failed: TestCount/no-break_space" {
		t.Errorf("output %q", got)
	}
	if out := sink.out.String(); !strings.Contains(out, "--- FAIL: TestCount/no-break_space") || strings.Contains(out, "done: ") {
		t.Errorf("streamed output:\n%s", out)
	}
}

// TestCancelStopsWithinHalfASecond: a Cancel is a SIGTERM: the agent stops
// its script and exits after the grace, with D's first stop reason (a
// second Cancel does not replace it); the export holds what it changed so
// far, and nothing is written after the capture stopped.
func TestCancelStopsWithinHalfASecond(t *testing.T) {
	w := newWorld(t, seedWhere(t, false))
	sink := &recorder{}
	h, fs := w.started(attemptID, sink, time.Time{})
	for w.agent.diff(attemptID) == "" {
		w.clock.Advance(100 * time.Millisecond)
	}
	made := w.agent.runs[attemptID].edits
	h.Cancel(words.StopCancelled)
	h.Cancel(words.StopShutdown)
	w.clock.Advance(stopGrace - time.Millisecond)
	if w.settlement(h) != nil {
		t.Fatal("settled before the stop's grace")
	}
	before := sink.out.String()
	w.clock.Advance(time.Millisecond)
	s := w.settlement(h)
	if s == nil || s.StopReason != words.StopCancelled || s.ExitCode != 143 {
		t.Fatalf("settlement %+v", s)
	}
	if got := strings.TrimPrefix(sink.out.String(), before); got != "received SIGTERM: stopping\n" {
		t.Errorf("after the cancel the agent printed %q", got)
	}
	w.clock.Advance(minRun + runRange) // the rest of its script never runs
	if sink.closes != 1 || w.agent.runs[attemptID].edits != made {
		t.Errorf("after the stop: closes %d, edits %d → %d", sink.closes, made, w.agent.runs[attemptID].edits)
	}
	full := items[0].diff(made)
	if r := w.export(fs, 1<<20); string(r.Diff) != full || r.Truncated {
		t.Errorf("partial export:\n%s", r.Diff)
	}
	if r := w.export(fs, 20); string(r.Diff) != full[:20] || !r.Truncated {
		t.Errorf("bounded export: %q, truncated %v", r.Diff, r.Truncated)
	}
}

// TestDeadlineStopsTheRun: D enforces the invocation's deadline itself,
// with stop reason timeout.
func TestDeadlineStopsTheRun(t *testing.T) {
	w := newWorld(t, seedWhere(t, false))
	deadline := w.clock.Now().Add(preparationTime*2 + 3*time.Second)
	h, _ := w.started(attemptID, nil, deadline)
	w.clock.Advance(3*time.Second + stopGrace)
	if s := w.settlement(h); s == nil || s.StopReason != words.StopTimeout {
		t.Fatalf("settlement %+v", s)
	}
}

// TestAbortedPreparationEndsWithTheStep: an aborted preparation step still
// ends only when its helper does, and reports the abort.
func TestAbortedPreparationEndsWithTheStep(t *testing.T) {
	w := newWorld(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var got error
	ended := false
	w.d.PrepareTaskFilesystems(ctx, dadapter.StorageOwner{RunnerOwner: owner, AttemptID: attemptID, AllocationID: "a11c" + attemptID[4:]}, dadapter.Source{}, nil, func(_ dadapter.TaskFilesystems, err error) {
		got, ended = err, true
	})
	cancel()
	w.clock.Advance(preparationTime)
	if !ended || got == nil {
		t.Errorf("aborted allocation: ended %v, err %v", ended, got)
	}
}

// TestScriptsAreDeterministic: a run follows from the seed and its
// ordinal alone; about one in four fails; each takes 6 to 12 seconds, and
// the items come in the plan's order.
func TestScriptsAreDeterministic(t *testing.T) {
	fails := 0
	const n = 400
	for ordinal := 1; ordinal <= n; ordinal++ {
		s := newScript(7, ordinal)
		if !reflect.DeepEqual(s, newScript(7, ordinal)) {
			t.Fatalf("run %d differs between two draws", ordinal)
		}
		if s.fail {
			fails++
		}
		total := s.settleAfter
		for _, st := range s.steps {
			if st.after <= 0 {
				t.Errorf("run %d: a step after %v", ordinal, st.after)
			}
			total += st.after
		}
		if total < minRun || total >= minRun+runRange || s.settleAfter <= 0 {
			t.Errorf("run %d takes %v", ordinal, total)
		}
		if s.item.title != items[(ordinal-1)%3].title {
			t.Errorf("run %d works on %q", ordinal, s.item.title)
		}
	}
	if fails < n/4-n/10 || fails > n/4+n/10 {
		t.Errorf("%d of %d runs fail, want about one in four", fails, n)
	}
	if reflect.DeepEqual(newScript(1, 1), newScript(2, 1)) {
		t.Error("two seeds give the same run")
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+),(\d+) \+(\d+),(\d+) @@`)

// TestDiffsParse: every diff the agent can export is a unified diff whose
// hunk headers count their lines, over the item's declared files (its
// plan scope), one hunk more per change.
func TestDiffsParse(t *testing.T) {
	for _, it := range items {
		if it.diff(0) != "" {
			t.Errorf("%s: a diff with no change", it.title)
		}
		for n := 1; n <= len(it.hunks); n++ {
			diff := it.diff(n)
			if got := strings.Count(diff, "\n@@ -"); got != n {
				t.Errorf("%s, %d changes: %d hunks", it.title, n, got)
			}
			checkDiff(t, it, diff)
		}
	}
}

func checkDiff(t *testing.T, it item, diff string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git a/"):
			file := strings.Fields(l)[2][2:]
			if !slices.Contains(it.files, file) {
				t.Errorf("%s: diff touches %s, outside its scope %v", it.title, file, it.files)
			}
			if lines[i+1] != "--- a/"+file || lines[i+2] != "+++ b/"+file {
				t.Errorf("%s: bad file header at %q", it.title, l)
			}
			i += 2
		case hunkHeader.MatchString(l):
			m := hunkHeader.FindStringSubmatch(l)
			oldN, _ := strconv.Atoi(m[2])
			newN, _ := strconv.Atoi(m[4])
			for oldN > 0 || newN > 0 {
				i++
				if i >= len(lines) {
					t.Fatalf("%s: hunk %q runs past the end", it.title, l)
				}
				switch lines[i][0] {
				case ' ':
					oldN--
					newN--
				case '-':
					oldN--
				case '+':
					newN--
				default:
					t.Fatalf("%s: %q in a hunk", it.title, lines[i])
				}
			}
			if oldN != 0 || newN != 0 {
				t.Errorf("%s: hunk %q miscounts its lines", it.title, l)
			}
		default:
			t.Errorf("%s: unexpected line %q", it.title, l)
		}
	}
}

// TestPlan: the demo plan is a plan document with three items, each
// modifying the files the agent changes for it.
func TestPlan(t *testing.T) {
	var doc struct {
		Format string
		Title  string
		Items  []struct {
			Title, Instructions string
			Files               []struct{ Op, Path string }
			Scope               []string
		}
	}
	if err := json.Unmarshal(Plan(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != "codeboost-plan/1" || doc.Title == "" || len(doc.Items) != 3 {
		t.Fatalf("plan %s", Plan())
	}
	for i, p := range doc.Items {
		if p.Title != items[i].title || p.Instructions == "" {
			t.Errorf("item %d: %+v", i, p)
		}
		var changed []string
		for _, h := range items[i].hunks {
			if !slices.Contains(changed, h.file) {
				changed = append(changed, h.file)
			}
		}
		var declared []string
		for _, f := range p.Files {
			if f.Op != "modify" {
				t.Errorf("item %d: op %q", i, f.Op)
			}
			declared = append(declared, f.Path)
		}
		slices.Sort(changed)
		slices.Sort(declared)
		if !slices.Equal(changed, declared) || !slices.Equal(slices.Sorted(slices.Values(p.Scope)), declared) {
			t.Errorf("item %d: declares %v, scope %v, changes %v", i, declared, p.Scope, changed)
		}
	}
	if Repository() == "" {
		t.Error("no repository name")
	}
}

// ExamplePlan shows the demo plan's first item.
func ExamplePlan() {
	var doc struct{ Items []struct{ Title string } }
	json.Unmarshal(Plan(), &doc)
	fmt.Println(len(doc.Items), doc.Items[0].Title)
	// Output: 3 Count words separated by any Unicode space
}
