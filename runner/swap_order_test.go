package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// This file holds the tests of the order of two steps that the swap-steps
// mutants of the runner showed no test checked. Each says which order the
// contract or the code's own comments require, and what a person (or the
// durable rows) would see were the two steps the other way round.

// settleHandle settles the D handle of attemptID (goD's) with s.
func settleHandle(t *testing.T, d *goD, attemptID string, s dadapter.Settlement) {
	t.Helper()
	d.mu.Lock()
	h := d.handles[attemptID]
	d.mu.Unlock()
	if h == nil {
		t.Fatalf("D never started %s", attemptID)
	}
	h.settle(s)
}

// awaitSlotsFree waits until c holds no slot.
func awaitSlotsFree(t *testing.T, c *Coordinator) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.SlotsUsed() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held", c.SlotsUsed())
		}
		time.Sleep(time.Millisecond)
	}
}

// cancelAndWait cancels attemptID and waits until its slot is free.
func cancelAndWait(t *testing.T, c *Coordinator, st *store.Store, key, attemptID string) {
	t.Helper()
	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelAttempt(context.Background(), ActionRequest{PlanKey: key, AttemptID: attemptID,
		ExpectedStateVersion: task.StateVersion, ActionID: ids.Random{}.UUID()}); err != nil {
		t.Fatal(err)
	}
	awaitSlotsFree(t, c)
}

// TestRetryAdmitsWithTheRunnersDeadlineAndAllocation: a retry is an
// admission like any other ("Retry admits a new attempt"): its row carries
// the attempt deadline (now + the configured attempt timeout) and the
// allocation ID that AdmitRequest.AllocationID says must be "durable before
// allocation starts". admitAction fills both in before tx.Admit writes the
// row; filled in after it, the retried attempt would be saved with a
// deadline of "now" and no allocation ID, so its preparation would time out
// at once and startup recovery could match no task storage to it.
//
// Kills the sweep's runner/actions.go:Coordinator.admitAction:swap-steps:e986bb06.
func TestRetryAdmitsWithTheRunnersDeadlineAndAllocation(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, key, first := runningAttempt(t, d, words.KindReview)
	cancelAndWait(t, c, st, key, first)

	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Retry(t.Context(), ActionRequest{PlanKey: key, AttemptID: first,
		ExpectedStateVersion: task.StateVersion, ActionID: ids.Random{}.UUID()})
	if err != nil || resp.Outcome != "admitted" {
		t.Fatalf("retry: %+v, %v; want admitted", resp, err)
	}
	a, err := st.Attempt(resp.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	if a.AllocationID == "" {
		t.Error("the retried attempt was saved without an allocation ID")
	}
	if got := a.Deadline.Sub(a.CreatedAt); got < c.cfg.AttemptTimeout-time.Second || got > c.cfg.AttemptTimeout+time.Second {
		t.Errorf("the retried attempt's deadline is %v after its admission, want the attempt timeout %v", got, c.cfg.AttemptTimeout)
	}
	awaitState(t, st, resp.AttemptID, words.Running)
	cancelAndWait(t, c, st, key, resp.AttemptID)
}

// TestStatusLabelsTheCurrentAttemptAsItsLabel: Status.Labels is "every
// attempt's screen label, by attempt ID: the current one's is Label". The
// current attempt's entry is written from Label once Label is computed
// (with the stop and marker facts); written before, it would hold the
// empty string, and the page would show the running attempt with no label.
//
// Kills the sweep's runner/status.go:Coordinator.Status:swap-steps:38aa9549.
func TestStatusLabelsTheCurrentAttemptAsItsLabel(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, key, id := runningAttempt(t, d, words.KindReview)
	s, err := c.Status(key)
	if err != nil {
		t.Fatal(err)
	}
	if s.Label != words.LabelRunning || s.Labels[id] != s.Label {
		t.Errorf("Label %q, Labels[current] %q; want both %q", s.Label, s.Labels[id], words.LabelRunning)
	}
	cancelAndWait(t, c, st, key, id)
}

// manualClock is a Clock whose timers fire only when the test advances it.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	fn      func()
	stopped bool
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) AfterFunc(d time.Duration, fn func()) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{c: m, at: m.now.Add(d), fn: fn}
	m.timers = append(m.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	live := !t.stopped
	t.stopped = true
	return live
}

// advance moves time on by d and fires, in the order they were armed,
// the timers that fell due and were not stopped.
func (m *manualClock) advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	var due []func()
	for _, t := range m.timers {
		if !t.stopped && !t.at.After(m.now) {
			t.stopped = true
			due = append(due, t.fn)
		}
	}
	m.mu.Unlock()
	for _, fn := range due {
		fn()
	}
}

// heldGoLoop is the production loop whose off-loop work (Loop.Go: the
// removal of host files) waits, while held, until the test releases it:
// the window production has while os.RemoveAll runs on its goroutine.
type heldGoLoop struct {
	*GoroutineLoop
	mu   sync.Mutex
	hold bool
	held []func()
}

func (l *heldGoLoop) Go(work func(), then func()) {
	l.mu.Lock()
	if l.hold {
		l.held = append(l.held, func() { l.GoroutineLoop.Go(work, then) })
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.GoroutineLoop.Go(work, then)
}

func (l *heldGoLoop) setHold(on bool) {
	l.mu.Lock()
	held := l.held
	l.hold, l.held = on, nil
	l.mu.Unlock()
	for _, f := range held {
		f()
	}
}

// TestAJobThatEndsInItsAdmissionLeavesNoTimerBehind: startJob arms the
// attempt deadline and the task budget before preparation starts, so that a
// job whose preparation ends it in that same event (here its "preparation
// starting" write fails: failed "preparation mark: …") has its timers
// stopped by endWithoutHandle with everything else. Armed after, they would
// outlive the ending job, and a budget running out while its host files
// are still being removed would record first reason time-limit on the row
// and turn the failure into a cancel (and the task into needs human),
// although the job had already ended for another reason.
//
// Kills the sweep's runner/admission.go:Coordinator.startJob:swap-steps:9c262835.
func TestAJobThatEndsInItsAdmissionLeavesNoTimerBehind(t *testing.T) {
	dir := t.TempDir()
	clock := &manualClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	fps := failpoints.New()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: clock.Now, IDs: ids.Random{}, Failpoints: fps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := &heldGoLoop{GoroutineLoop: NewGoroutineLoop()}
	t.Cleanup(loop.Stop)
	c, err := New(Config{Root: dir, Owner: ids.Random{}.Token(), Slots: 1, AttemptTimeout: 30 * time.Minute, Budget: time.Hour},
		Deps{Store: st, Capability: st.ShutdownCapability(), D: &goD{handles: map[string]*goHandle{}}, Clock: clock, Loop: loop,
			IDs: ids.Random{}, Failpoints: fps})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	key := createTask(t, st)
	if err := fps.Enable("store/preparation-mark", "1*return"); err != nil {
		t.Fatal(err)
	}
	loop.setHold(true)
	id, err := c.Admit(t.Context(), AdmitRequest{PlanKey: key, Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	// The job has ended; its host files are being removed. Both limits
	// pass now, and any event their timers post runs before the removal
	// goes on.
	clock.advance(2 * time.Hour)
	if err := loop.Call(t.Context(), func() {}); err != nil {
		t.Fatal(err)
	}
	loop.setHold(false)
	awaitSlotsFree(t, c)

	a, err := st.Attempt(id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != words.Failed || a.FirstReason != "" || !strings.Contains(a.Diagnostic, "preparation mark") {
		t.Errorf("row: %s, first reason %q, diagnostic %q; want failed by its preparation mark, with no first reason",
			a.State, a.FirstReason, a.Diagnostic)
	}
	if task, err := st.Task(key); err != nil || task.Status == words.StatusNeedsHuman {
		t.Errorf("task: %+v, %v; the budget of an ended job sent it to needs human", task, err)
	}
}

// findingD is goD whose inspection reports a new ignored file: the audit's
// safety finding.
type findingD struct{ *goD }

func (findingD) InspectTaskChanges(_ context.Context, _ dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	go done(dadapter.ChangeManifest{Ignored: []string{"build/out.o"}}, nil)
}

// TestAnAuditFindingIsWrittenWithThePublication: "An audit finding is
// written instead of a commit: the attempt completes, the task goes to
// needs human". publishResult holds the finding on the job before
// publication, whose transaction records it (withFinding) with the
// completed row; held after, the publication would run without it, and
// the attempt would complete with no finding and the task would not stop
// for a person.
//
// Kills the sweep's runner/settlement.go:Coordinator.publishResult:swap-steps:b338e836.
func TestAnAuditFindingIsWrittenWithThePublication(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, key, id := runningAttempt(t, findingD{d}, words.KindExecute)
	settleHandle(t, d, id, dadapter.Settlement{Output: []byte(`{"ok":true}`)})
	awaitSlotsFree(t, c)

	a, err := st.Attempt(id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != words.Completed || !strings.Contains(a.SafetyFinding, "ignores") {
		t.Errorf("row: %s with safety finding %q; want completed with the audit's finding", a.State, a.SafetyFinding)
	}
	if task, err := st.Task(key); err != nil || task.Status != words.StatusNeedsHuman {
		t.Errorf("task: %+v, %v; want needs human", task, err)
	}
}

// TestAFailedWritableAttemptKeepsItsPartialOutputRef: finishAfterSettle
// follows "settled → the partial-output export … → the terminal write with
// diagnostic_ref". The export's ref is put on the outcome before the
// terminal write; put after, the row would be written without it and the
// saved diff would be unreachable from the attempt.
//
// Kills the sweep's runner/settlement.go:Coordinator.finishAfterSettle:swap-steps:d3c830a7.
func TestAFailedWritableAttemptKeepsItsPartialOutputRef(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, _, id := runningAttempt(t, d, words.KindExecute)
	settleHandle(t, d, id, dadapter.Settlement{ExitCode: 1, Diagnostic: "the agent exited 1"})
	awaitSlotsFree(t, c)

	a, err := st.Attempt(id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != words.Failed || a.DiagnosticRef == "" {
		t.Errorf("row: %s, diagnostic %q, ref %q; want failed with the partial output's ref", a.State, a.Diagnostic, a.DiagnosticRef)
	}
}

// treeD is goD whose tree check finds a submodule, and which notes the
// task tree each start call was given.
type treeD struct {
	*goD
	mu    sync.Mutex
	trees map[string]dadapter.TaskTree
}

func (d *treeD) CheckTaskTree(_ context.Context, _ dadapter.TaskFilesystems, head string, _ []dadapter.FileOperation, done func(dadapter.TaskTree, error)) {
	go done(dadapter.TaskTree{Head: head, Gitlinks: []string{"vendor/lib"}}, nil)
}

func (d *treeD) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	d.mu.Lock()
	d.trees[in.AttemptID] = in.Tree
	d.mu.Unlock()
	return d.goD.Start(in)
}

// TestTheCheckedTreeReachesTheStartCall: "F calls D's checkTaskTree with
// the clone's head and the item's file operations (#81) and passes the
// result to the start call, which mounts every gitlink empty and
// read-only." treeChecked keeps the result on the job before launch reads
// it into the start call's input; kept after, D would start the agent
// with an empty tree, and no submodule directory would be mounted
// read-only.
//
// Kills the sweep's runner/tree.go:Coordinator.treeChecked:swap-steps:f2480a19.
func TestTheCheckedTreeReachesTheStartCall(t *testing.T) {
	g := &goD{handles: map[string]*goHandle{}}
	d := &treeD{goD: g, trees: map[string]dadapter.TaskTree{}}
	c, st, _ := productionCoordinator(t, 1, d)
	if err := c.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	key := createTask(t, st)
	id, err := c.Admit(t.Context(), AdmitRequest{PlanKey: key, Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, st, id, words.Running)
	d.mu.Lock()
	tree, started := d.trees[id]
	d.mu.Unlock()
	if !started || !slices.Equal(tree.Gitlinks, []string{"vendor/lib"}) {
		t.Errorf("D's start call got the tree %+v (started %v); want the checked tree with gitlink vendor/lib", tree, started)
	}
	cancelAndWait(t, c, st, key, id)
}

// traceLines collects a coordinator's trace.
type traceLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *traceLines) add(_, line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

func (l *traceLines) index(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.IndexFunc(l.lines, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// TestStopJobsClosesAdmissionBeforeStoppingJobs: StopJobs is shutdown
// step 4, and "It closes admission first if step 1 has not." Within its one
// event the only witness of that order is the log, which must say that
// admission closed before it says that each job is stopping for shutdown
// (a person reading it after a shutdown that closed admission late would
// otherwise look for admissions that raced the stops).
//
// Kills the sweep's runner/shutdown.go:Coordinator.StopJobs:swap-steps:e2ef596b.
func TestStopJobsClosesAdmissionBeforeStoppingJobs(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	trace := &traceLines{}
	c, err := New(Config{Root: dir, Owner: ids.Random{}.Token(), Slots: 1},
		Deps{Store: st, Capability: st.ShutdownCapability(), D: &goD{handles: map[string]*goHandle{}}, Clock: NewRealClock(),
			Loop: loop, IDs: ids.Random{}, Trace: trace.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	key := createTask(t, st)
	id, err := c.Admit(t.Context(), AdmitRequest{PlanKey: key, Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, st, id, words.Running)
	if err := c.StopJobs(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Drained():
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown did not drain")
	}
	closed, stopping := trace.index("shutdown: admission closed"), trace.index("stopping "+id+": "+string(words.ReasonShutdown))
	if closed < 0 || stopping < 0 || closed > stopping {
		t.Errorf("trace: admission closed at line %d, the job stopping for shutdown at line %d; want both, admission first",
			closed, stopping)
	}
}

// TestFinalizationFailureIsNamedInTheRecoveryError: when startup
// recovery's finalization transaction fails, recovery stops and its error
// (the server's log, and the exit) says "the finalization transaction
// failed: …". The error is wrapped before recoveryFailed records it;
// wrapped after, the report would carry only the Store's bare error.
//
// Kills the sweep's runner/recovery.go:Coordinator.finalize:swap-steps:109b2cdf.
func TestFinalizationFailureIsNamedInTheRecoveryError(t *testing.T) {
	dir := t.TempDir()
	fps := failpoints.New()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: time.Now, IDs: ids.Random{}, Failpoints: fps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	d := &goD{handles: map[string]*goHandle{}}
	c, err := New(Config{Root: dir, Owner: ids.Random{}.Token(), Slots: 1},
		Deps{Store: st, Capability: st.ShutdownCapability(), D: d, Clock: NewRealClock(), Loop: loop, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	id, err := c.Admit(t.Context(), AdmitRequest{PlanKey: createTask(t, st), Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, st, id, words.Running)
	loop.Stop() // the process dies with the attempt running

	if err := fps.Enable("store/terminal-write", "1*return"); err != nil {
		t.Fatal(err)
	}
	r := restartRecovery(t, c, st, noLeftoversD{d})
	if r.Err == nil || !strings.HasPrefix(r.Err.Error(), "the finalization transaction failed: ") {
		t.Errorf("recovery error %v; want it to name the finalization transaction", r.Err)
	}
}

// noBaselineD is goD whose recovery hands back the task storage of one
// attempt, and which must not be asked to export it.
type noBaselineD struct {
	*goD
	owner    dadapter.StorageOwner
	mu       sync.Mutex
	exported bool
}

func (d *noBaselineD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{Storage: []dadapter.RecoveredStorage{goFS{o: d.owner}}}, nil)
}

func (d *noBaselineD) ExportTaskDiff(_ context.Context, _ dadapter.TaskFilesystems, _ int, done func(dadapter.ExportResult, error)) {
	d.mu.Lock()
	d.exported = true
	d.mu.Unlock()
	go done(dadapter.ExportResult{}, errors.New("no export without a baseline"))
}

// TestRecoverySaysWhyAStorageWithoutBaselineWasNotExported: startup
// recovery exports the partial output of each interrupted writable attempt
// whose task storage D handed back; one whose baseline was never saved (the
// crash came during storage allocation) cannot be exported, and its row
// says so (words.PartialNoBaseline). exportPhase records that before going
// on to the next storage; recorded after, the last such storage's note
// would miss the finalization that step(i+1) runs at once, and the row
// would say only "Interrupted".
//
// Kills the sweep's runner/recovery.go:Coordinator.exportPhase:swap-steps:61df6ec4.
func TestRecoverySaysWhyAStorageWithoutBaselineWasNotExported(t *testing.T) {
	c, st, loop := productionCoordinator(t, 1, &goD{handles: map[string]*goHandle{}})
	key := createTask(t, st)
	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	// Admitted, its storage allocated, and the process died before the
	// baseline was saved.
	a, err := st.Admit(store.AdmitRequest{PlanKey: key, Kind: words.KindExecute, ExpectedStateVersion: task.StateVersion,
		AttemptTimeout: time.Hour, Budget: 2 * time.Hour, AllocationID: ids.Random{}.UUID()})
	if err != nil {
		t.Fatal(err)
	}
	loop.Stop()

	d := &noBaselineD{goD: &goD{handles: map[string]*goHandle{}},
		owner: dadapter.StorageOwner{RunnerOwner: c.cfg.Owner, AttemptID: a.ID, AllocationID: a.AllocationID}}
	r := restartRecovery(t, c, st, d)
	if r.Err != nil {
		t.Fatalf("recovery: %v", r.Err)
	}
	row, err := st.Attempt(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !words.Terminal(row.State) || !strings.Contains(row.Diagnostic, words.PartialNoBaseline) {
		t.Errorf("finalized row: %s, diagnostic %q; want it to say %q", row.State, row.Diagnostic, words.PartialNoBaseline)
	}
	d.mu.Lock()
	exported := d.exported
	d.mu.Unlock()
	if exported {
		t.Error("D was asked to export a storage without a baseline")
	}
}
