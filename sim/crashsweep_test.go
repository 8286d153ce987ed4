package sim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/internal/testbin"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The crash-point sweep (issue 3): a workload of several attempts —
// read-only and writable, a stop, a time limit, a retry, a cancel task, a
// two-item plan run — is
// crashed at every event boundary and at every Store commit in turn,
// restarted, and checked once recovery ends: no attempt pending or running;
// no slot, task storage or attempt directory left behind except what
// recovery reports; every diagnostic_ref names an existing file; no
// task-closed event missing or doubled; requeues exactly as step 6 says.

type sweepWorld struct {
	*World
	keys map[string]string // task name → plan key
	ids  map[string]string // attempt name → ID
	// fresh: a real codeboost process without the Docker adapter recovered
	// this world first, so simulated task storage was not its to export.
	fresh bool
	// questions are the IDs of the questions the workload asked.
	questions []string
}

func newSweepWorld(t testing.TB) *sweepWorld {
	w, err := NewWorld(t.TempDir(), Config{Seed: 11, Slots: 8, Budget: time.Hour, AttemptTimeout: 20 * time.Minute}, failpoints.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &sweepWorld{World: w, keys: map[string]string{}, ids: map[string]string{}}
}

// step is one move of the workload; it reports false when the process died.
type step func(w *sweepWorld) bool

func (w *sweepWorld) alive() bool { return !w.Loop.Crashed() }

func newTask(name string) step {
	return func(w *sweepWorld) bool {
		id := store.Identity{RepositoryID: "r", TaskID: name, PlanID: "p"}
		err := w.Store.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}})
		})
		if err == nil {
			w.keys[name] = id.Key()
		}
		return err == nil
	}
}

// approvedPlan creates a task with a two-item plan, every item approved.
// doc, when not empty, is a plan document the task's plan imports first
// as its next revision (the items' specs, scopes included).
func approvedPlan(name, doc string) step {
	return func(w *sweepWorld) bool {
		var items []store.ItemInput
		if doc != "" {
			parsed, err := plan.Parse([]byte(doc))
			if err == nil {
				items, err = store.ItemInputs(parsed)
			}
			if err != nil {
				panic(err) // a fixed, valid document
			}
		}
		id := store.Identity{RepositoryID: "r", TaskID: name, PlanID: "p"}
		err := w.Store.Update(func(tx *store.Tx) error {
			if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one", "two"}}); err != nil {
				return err
			}
			if items != nil {
				if _, err := tx.ImportPlan(id.Key(), 1, items); err != nil {
					return err
				}
			}
			for _, item := range []int{1, 2} {
				if _, err := tx.Approve(id.Key(), item); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			w.keys[name] = id.Key()
		}
		return err == nil
	}
}

// scopedPlan is the plan of the workload's scope pause: item 1 declares
// the scope src/, item 2 a modify of README.md.
const scopedPlan = `{"format": "codeboost-plan/1", "title": "Scoped", "items": [
	{"title": "one", "scope": ["src/"]}, {"title": "two", "files": [{"op": "modify", "path": "README.md"}]}]}`

// startPlan is the user's start; the run admits item 1 as name.
func startPlan(task, name string) step {
	return func(w *sweepWorld) bool {
		key := w.keys[task]
		t, _ := w.Store.Task(key)
		var plan store.Plan
		w.Store.View(func(tx *store.Tx) (err error) { plan, err = tx.Plan(key); return err })
		if r, err := w.Runner.Start(context.Background(), runner.ActionRequest{PlanKey: key, ExpectedStateVersion: t.StateVersion,
			ExpectedReviewVersion: plan.ReviewVersion, ActionID: w.IDs.UUID()}); err == nil && r.AttemptID != "" {
			w.ids[name] = r.AttemptID
			w.Alias(r.AttemptID, name)
		}
		return w.alive()
	}
}

// current names the task's current attempt (a plan run's later item).
func current(task, name string) step {
	return func(w *sweepWorld) bool {
		if t, err := w.Store.Task(w.keys[task]); err == nil && t.CurrentAttemptID != "" && w.ids[name] == "" {
			if _, known := w.aliases[t.CurrentAttemptID]; !known {
				w.ids[name] = t.CurrentAttemptID
				w.Alias(t.CurrentAttemptID, name)
			}
		}
		return w.alive()
	}
}

func admit(task, kind, name string) step {
	return func(w *sweepWorld) bool {
		key := w.keys[task]
		t, _ := w.Store.Task(key)
		id, _ := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: key, Kind: kind, ExpectedStateVersion: t.StateVersion})
		if id != "" {
			w.ids[name] = id
			w.Alias(id, name)
		}
		return w.alive()
	}
}

func settle(name string, exit int, output string) step {
	return func(w *sweepWorld) bool {
		if h := w.D.Handle(w.ids[name]); h != nil && !h.HasSettled() {
			h.Settle(dadapter.Settlement{ExitCode: exit, Output: []byte(output)})
			w.Loop.Drain()
		}
		return w.alive()
	}
}

func cancelAttempt(name string) step {
	return func(w *sweepWorld) bool {
		a, err := w.Store.Attempt(w.ids[name])
		if err == nil {
			t, _ := w.Store.Task(a.PlanKey)
			w.Runner.CancelAttempt(context.Background(), runner.ActionRequest{PlanKey: a.PlanKey, AttemptID: a.ID, ExpectedStateVersion: t.StateVersion,
				ActionID: w.IDs.UUID()})
		}
		return w.alive()
	}
}

func cancelTask(task string) step {
	return func(w *sweepWorld) bool {
		key := w.keys[task]
		t, _ := w.Store.Task(key)
		w.Runner.CancelTask(context.Background(), runner.ActionRequest{PlanKey: key, ExpectedStateVersion: t.StateVersion, ActionID: w.IDs.UUID()})
		return w.alive()
	}
}

func retry(name, as string) step {
	return func(w *sweepWorld) bool {
		a, err := w.Store.Attempt(w.ids[name])
		if err == nil {
			t, _ := w.Store.Task(a.PlanKey)
			if r, err := w.Runner.Retry(context.Background(), runner.ActionRequest{PlanKey: a.PlanKey, AttemptID: a.ID, ExpectedStateVersion: t.StateVersion,
				ActionID: w.IDs.UUID()}); err == nil && r.AttemptID != "" {
				w.ids[as] = r.AttemptID
				w.Alias(r.AttemptID, as)
			}
		}
		return w.alive()
	}
}

func advance(d time.Duration) step {
	return func(w *sweepWorld) bool {
		w.Clock.Advance(d)
		w.Loop.Drain()
		return w.alive()
	}
}

func sweepWorkload() []step {
	return []step{
		newTask("T1"), newTask("T2"), newTask("T3"), newTask("T4"), newTask("T5"), approvedPlan("T6", ""), newTask("T7"), newTask("T8"), newTask("T9"),
		admit("T1", words.KindReview, "A"),   // read-only, completes
		admit("T2", words.KindExecute, "B"),  // writable, stopped: export, storage
		admit("T3", words.KindReview, "C"),   // runs into the task budget
		admit("T4", words.KindQuestion, "D"), // fails, then is retried
		admit("T5", words.KindExecute, "E"),  // cancel task while it runs
		startPlan("T6", "F"),                 // a plan run: item 1, then item 2
		settle("A", 0, `{"ok":true}`),
		cancelAttempt("B"),
		settle("D", 1, "provider error"),
		retry("D", "D2"),
		cancelTask("T5"),
		settle("B", 137, "killed"),
		settle("E", 0, `{"ok":true}`),
		settle("F", 0, `{"ok":true}`),
		current("T6", "F2"),
		settle("F2", 0, `{"ok":true}`),
		advance(61 * time.Minute), // T3's budget: time-limit
		settle("C", 137, "killed"),
		settle("D2", 0, `{"ok":true}`),
		admit("T7", words.KindExecute, "G"), // writable, its audit passes: committed
		admit("T8", words.KindExecute, "H"), // writable, its audit finds an ignored file: no commit
		leaves("G", dadapter.ChangeManifest{Changes: []dadapter.Change{{Path: "README.md", Kind: dadapter.ChangeModified}}}),
		leaves("H", dadapter.ChangeManifest{Ignored: []string{"build/out.o"}}),
		settle("G", 0, `{"ok":true}`),
		settle("H", 0, `{"ok":true}`),
		admit("T9", words.KindExecute, "I"), // writable, its finding's save fails: owed, then saved by resume
		leaves("I", dadapter.ChangeManifest{Nested: []string{"vendor/x"}}),
		failOnce("store/finding-write"),
		settle("I", 0, `{"ok":true}`),
		approvedPlan("T10", scopedPlan),
		startPlan("T10", "J"), // writable, changes a path outside item 1's scope: committed, then a scope pause
		leaves("J", dadapter.ChangeManifest{Changes: []dadapter.Change{
			{Path: "src/a.go", Kind: dadapter.ChangeModified}, {Path: "docs/x.md", Kind: dadapter.ChangeAdded}}}),
		settle("J", 0, `{"summary":"done"}`),
		// The neighbouring lanes: a question answered and one left
		// running, a suggestion request left pending, a merge merged and
		// one whose answer is lost after GitHub merged.
		reviewedTask("T11"), reviewedTask("T12"), reviewedTask("T13"),
		askQuestion("T11", "Q1"),
		settle("Q1", 0, `{"answer":"it builds on item one"}`),
		askQuestion("T11", "Q2"),
		requestSuggestions("T11"),
		clickMerge("T12", "merged"),
		clickMerge("T13", "unknown-merged"),
	}
}

// failOnce makes the next evaluation of failpoint name fail.
func failOnce(name string) step {
	return func(w *sweepWorld) bool {
		if err := w.FP.Enable(name, "1*return"); err != nil {
			panic(err) // a fixed, known failpoint
		}
		return w.alive()
	}
}

// leaves sets what inspecting the attempt's task storage finds.
func leaves(name string, m dadapter.ChangeManifest) step {
	return func(w *sweepWorld) bool {
		if id := w.ids[name]; id != "" {
			w.D.SetChanges(id, m)
		}
		return w.alive()
	}
}

// runUntilCrash runs the workload; it returns false if the process died.
func (w *sweepWorld) runUntilCrash() bool {
	for _, s := range sweepWorkload() {
		if !w.runStep(s) {
			return false
		}
	}
	return true
}

// runStep runs one step; a Crash panic outside any event (a write made by
// the server side, such as creating a task) kills the process too.
func (w *sweepWorld) runStep(s step) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, crash := r.(Crash); !crash {
				panic(r)
			}
			w.Loop.Die()
			ok = false
		}
	}()
	return s(w)
}

// restartAndCheck restarts the crashed world and checks it as recovery
// left it: serve's startup goes on to requeue the tasks recovery listed
// (lane I3), which admits new work, so the invariants of recovery are
// checked at startup's requeue step (the app/before-requeue hook), or
// after startup when there was nothing to requeue. Then every listed task
// was requeued or, refused, keeps its claim for a person's Resume.
func (w *sweepWorld) restartAndCheck(t testing.TB, label string) {
	t.Helper()
	checked := false
	w.FP.SetHook("app/before-requeue", func() { checked = true; w.check(t, label) })
	if err := w.Restart(); err != nil {
		t.Fatalf("%s: restart: %v", label, err)
	}
	if !checked {
		w.FP.SetHook("app/before-requeue", nil)
		w.check(t, label)
		return
	}
	for _, key := range w.Runner.Recovery().Requeue {
		task, err := w.Store.Task(key)
		if err != nil {
			t.Errorf("%s: %v", label, err)
			continue
		}
		refused := slices.ContainsFunc(w.Lines(), func(l string) bool {
			return strings.Contains(l, "requeue of "+key+" not admitted")
		})
		if task.RequeuePending != refused {
			t.Errorf("%s: task %s after startup's requeue: requeue_pending=%v, refusal traced %v\ntrace:\n  %s", label, key, task.RequeuePending, refused,
				strings.Join(w.Lines(), "\n  "))
		}
	}
}

// check verifies the invariants after recovery.
func (w *sweepWorld) check(t testing.TB, label string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Errorf("%s: %s\ntrace:\n  %s", label, fmt.Sprintf(format, args...), strings.Join(w.Lines(), "\n  "))
	}
	w.checkDurable(fail)
	w.startLanes(fail)
	w.checkLanes(fail)
	r := w.Runner.Recovery()
	if r.Err != nil {
		fail("recovery failed: %v", r.Err)
		return
	}
	// The world marks "preparation starting" one event before D reports
	// the group, so a crash between the two leaves an unowned preparation:
	// recovery then fails closed (step 7), and that is the only reason
	// admission may stay closed. Every such attempt is reported, and its
	// directory (if it was made yet) is kept for --release-preparation.
	if !r.Opened() && (len(r.UnownedPreparation) == 0 || len(r.LegacyCommands) != 0) {
		fail("admission did not open: %+v", r)
	}
	reportedUnowned := map[string]bool{}
	for _, u := range r.UnownedPreparation {
		reportedUnowned[strings.Fields(u)[0]] = true
	}
	for id := range reportedUnowned {
		for _, l := range w.Lines() {
			if strings.Contains(l, "recovery: attempt directory of "+w.Name(id)+" removed") {
				fail("the directory of unowned preparation %s was removed", w.Name(id))
			}
		}
	}
	// Step 2b: no preparation group of the crashed process is left alive.
	for _, g := range w.D.LiveGroups() {
		fail("preparation group %d of %s is still alive after recovery", g.PGID, w.Name(g.AttemptID))
	}
	if n := w.Runner.SlotsUsed(); n != 0 {
		fail("%d slots held after recovery", n)
	}
	var all []store.Attempt
	w.Store.View(func(tx *store.Tx) (err error) { all, err = tx.AllAttempts(); return err })
	unmatched := map[string]bool{}
	for _, u := range r.UnmatchedStorage {
		unmatched[u] = true
	}
	for _, a := range all {
		unowned := a.PreparationStartedAt != nil && a.PreparationPGID == nil
		if unowned != reportedUnowned[a.ID] {
			fail("attempt %s: unowned preparation %v, reported %v", w.Name(a.ID), unowned, reportedUnowned[a.ID])
		}
		if w.D.StoragePresent(a.ID) && !unmatched[a.ID] {
			fail("task storage of %s is left behind", w.Name(a.ID))
		}
		// A writable attempt that did not complete had its partial output
		// exported (or the export's failure recorded) before its storage
		// went: the task-storage holder order.
		if words.Writable(a.Kind) && a.State != words.Completed && a.MetadataBaseline != "" &&
			a.DiagnosticRef == "" && !strings.Contains(a.Diagnostic, words.PartialExportFailed) {
			fail("writable attempt %s ended %s with neither its partial output nor an export failure", w.Name(a.ID), a.State)
		}
		// "Release": the commit ref of an attempt that did not complete
		// is dropped, and an audit finding commits nothing.
		if slices.Contains(w.D.Refs(), a.ID) && (a.State != words.Completed || a.SafetyFinding != "") {
			fail("attempt %s ended %s (finding %q) with its commit ref left", w.Name(a.ID), a.State, a.SafetyFinding)
		}
		// Nobody removes storage behind the sweep's back, and the sweep
		// makes no export fail: an export that failed (storage recovery
		// could not find, or storage gone by the time of its export) was
		// the runner's own loss. Only a crash before the baseline's save
		// leaves nothing to export from, and a fresh process, which has
		// no D of the simulated kind, cannot export.
		if strings.Contains(a.Diagnostic, words.PartialExportFailed) && !strings.Contains(a.Diagnostic, words.PartialNoBaseline) && !w.fresh {
			fail("writable attempt %s lost its partial output: %s", w.Name(a.ID), a.Diagnostic)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(w.Root(), w.Owner, "attempts")); err == nil {
		left := 0
		for _, e := range entries {
			if !reportedUnowned[e.Name()] {
				left++
			}
		}
		if left > len(r.UnknownEntries) {
			fail("%d attempt directories left behind (%d reported)", left, len(r.UnknownEntries))
		}
	}
}

// checkDurable verifies what the database file and the diagnostics
// directory must show after any recovery, the simulated runner's or a fresh
// OS process's: no attempt pending or running, every diagnostic_ref names a
// file, no task-closed event missing or doubled, no pending cancel left, and
// requeues exactly as step 6 (with issue 19's cut plan runs) says.
func (w *sweepWorld) checkDurable(fail func(format string, args ...any)) {
	var all []store.Attempt
	if err := w.Store.View(func(tx *store.Tx) (err error) { all, err = tx.AllAttempts(); return err }); err != nil {
		fail("%v", err)
		return
	}
	for _, a := range all {
		if a.State == words.Pending || a.State == words.Running {
			fail("attempt %s is still %s", w.Name(a.ID), a.State)
		}
		if a.DiagnosticRef != "" {
			p := filepath.Join(w.Root(), w.Owner, "diagnostics", a.DiagnosticRef)
			if _, err := os.Stat(p); err != nil {
				fail("attempt %s points at missing file %s", w.Name(a.ID), a.DiagnosticRef)
			}
		}
	}
	for name, key := range w.keys {
		task, err := w.Store.Task(key)
		if err != nil {
			fail("%v", err)
			continue
		}
		var closedEvents int
		w.Store.View(func(tx *store.Tx) (err error) {
			closedEvents, err = tx.EventCount(key, words.EventTaskClosed)
			return err
		})
		if want := map[bool]int{true: 1, false: 0}[words.Closed(task.Status)]; closedEvents != want {
			fail("task %s is %s with %d task-closed events", name, task.Status, closedEvents)
		}
		if task.CancelRequested != "" {
			fail("task %s still has a pending cancel", name)
		}
		want := false
		if task.CurrentAttemptID != "" && !words.Closed(task.Status) && !words.HumanGated(task.Status) {
			last, _ := w.Store.Attempt(task.CurrentAttemptID)
			// A plan run cut between two items (its last item completed,
			// the run's review version still recorded) is listed too, so
			// that no task shows running with nothing running (issue 19).
			cut := last.State == words.Completed && words.Writable(last.Kind) && task.RunReviewVersion != nil &&
				(task.Status == words.StatusRunning || task.Status == words.StatusQueued)
			want = (last.State == words.Cancelled && last.FirstReason == words.ReasonShutdown) ||
				(last.State == words.Failed && strings.HasPrefix(last.Diagnostic, words.Interrupted)) || cut
		}
		if task.RequeuePending != want {
			fail("task %s requeue_pending=%v, want %v", name, task.RequeuePending, want)
		}
		// A scope pause is all or nothing: a checkpoint exactly when the
		// task waits in needs amendment, for a completed attempt whose
		// commit is the ledger's last entry.
		var cp store.Checkpoint
		var found bool
		var history []store.HistoryEntry
		w.Store.View(func(tx *store.Tx) (err error) {
			if cp, found, err = tx.LatestCheckpoint(key); err != nil {
				return err
			}
			history, err = tx.History(key)
			return err
		})
		if found != (task.Status == words.StatusNeedsAmendment) {
			fail("task %s is %s with checkpoint %v", name, task.Status, found)
		}
		if found {
			a, _ := w.Store.Attempt(cp.AttemptID)
			if a.State != words.Completed || len(history) == 0 || history[len(history)-1].Commit != cp.Commit {
				fail("task %s's checkpoint %s: attempt %s, ledger %v", name, cp.Commit, a.State, history)
			}
		}
	}
}

// recoverInFreshProcess is the sweep's fresh-OS-process sample: after the
// crash, the production binary is given only the database path
// (`codeboost serve --db FILE --check`: lock, Store, migrations, owner
// token, startup recovery, shutdown), and the durable invariants must hold
// when it exits. The database's runner root is the default next to it, the
// same directory the simulated runner used; the binary has no Docker
// adapter, so simulated task storage is not its to see. The simulated
// runner then starts again over the same file, and the caller checks
// everything.
func (w *sweepWorld) recoverInFreshProcess(t testing.TB, label string) {
	t.Helper()
	bin, err := testbin.Codeboost()
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(w.Dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--db", w.DBPath, "--check")
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: codeboost serve on the crashed database: %v\n%s", label, err, out)
		return
	}
	st, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: w.IDs})
	if err != nil {
		t.Fatal(err)
	}
	w.Store = st
	w.fresh = true
	fail := func(format string, args ...any) {
		t.Errorf("%s, recovered by a fresh process: %s\n%s", label, fmt.Sprintf(format, args...), out)
	}
	w.checkDurable(fail)
	// The real process removed every attempt directory but an unowned
	// preparation's (step 7 keeps it for --release-preparation).
	if entries, err := os.ReadDir(filepath.Join(w.Root(), w.Owner, "attempts")); err == nil {
		for _, e := range entries {
			a, err := st.Attempt(e.Name())
			if err != nil || a.PreparationStartedAt == nil || a.PreparationPGID != nil {
				fail("attempt directory %s left behind", w.Name(e.Name()))
			}
		}
	}
	st.Close()
}

func TestMain(m *testing.M) { testbin.Main(m) }

// TestCrashPointSweep crashes the workload at every event boundary and at
// every Store commit, restarts, and checks the invariants.
//
// kills: mutant/cancel-task-not-closed mutant/recovery-remove-first mutant/unowned-preparation-ignored mutant/publication-finding-commits mutant/merge-startup-keeps-an-unsent-merge mutant/ask-leftovers-kept-running
func TestCrashPointSweep(t *testing.T) { sweep(t) }

func sweep(t testing.TB) {
	// A dry run counts the event boundaries and the commits.
	dry := newSweepWorld(t)
	commits := 0
	dry.FP.OnEach("store/before-commit", func() { commits++ })
	if !dry.runUntilCrash() {
		t.Fatal("the workload crashed without a crash point")
	}
	// Without a crash the plan run goes through both items.
	if t6, err := dry.Store.Task(dry.keys["T6"]); err != nil || t6.Status != words.StatusInReview || dry.ids["F2"] == "" {
		t.Fatalf("the workload's plan run did not finish: %+v %v", t6, err)
	}
	// Without a crash the audit passes G, and H's finding sends T8 to a
	// person with nothing committed.
	g, _ := dry.Store.Attempt(dry.ids["G"])
	h, _ := dry.Store.Attempt(dry.ids["H"])
	t8, _ := dry.Store.Task(dry.keys["T8"])
	if g.State != words.Completed || g.SafetyFinding != "" || h.State != words.Completed || h.SafetyFinding == "" ||
		t8.Status != words.StatusNeedsHuman || !slices.Contains(dry.D.Refs(), g.ID) || slices.Contains(dry.D.Refs(), h.ID) {
		t.Fatalf("the workload's audits: G %s %q, H %s %q, T8 %s, refs %v", g.State, g.SafetyFinding, h.State, h.SafetyFinding, t8.Status, dry.D.Refs())
	}
	// I's finding could not be saved: the attempt completed without it and
	// committed nothing.
	if i, _ := dry.Store.Attempt(dry.ids["I"]); i.State != words.Completed || i.SafetyFinding != "" || slices.Contains(dry.D.Refs(), i.ID) {
		t.Fatalf("the workload's failed finding save: I %s %q, refs %v", i.State, i.SafetyFinding, dry.D.Refs())
	}
	// J's commit left item 1's scope: completed with its ref, and T10
	// waits in needs amendment on J's checkpoint.
	j, _ := dry.Store.Attempt(dry.ids["J"])
	t10, _ := dry.Store.Task(dry.keys["T10"])
	var cp store.Checkpoint
	var found bool
	dry.Store.View(func(tx *store.Tx) (err error) { cp, found, err = tx.LatestCheckpoint(dry.keys["T10"]); return err })
	if j.State != words.Completed || t10.Status != words.StatusNeedsAmendment || !found || cp.AttemptID != j.ID || !slices.Contains(dry.D.Refs(), j.ID) {
		t.Fatalf("the workload's scope pause: J %s, T10 %s, checkpoint %+v (%v), refs %v", j.State, t10.Status, cp, found, dry.D.Refs())
	}
	// Without a crash the lanes end as the workload means them to: Q1
	// answered, Q2 running, T11's suggestion pending, T12 merged, and T13's
	// merge submitting with its outcome unknown though GitHub merged.
	var q1r, q2r store.Question
	var t11reqs []store.PlanRequest
	var m12, m13 store.MergeAttempt
	dry.Store.View(func(tx *store.Tx) (err error) {
		if q1r, err = tx.Question(dry.ids["Q1"]); err != nil {
			return err
		}
		if q2r, err = tx.Question(dry.ids["Q2"]); err != nil {
			return err
		}
		if t11reqs, err = tx.PlanRequests(dry.keys["T11"]); err != nil {
			return err
		}
		if m12, _, err = tx.LatestMerge(dry.keys["T12"]); err != nil {
			return err
		}
		m13, _, err = tx.LatestMerge(dry.keys["T13"])
		return err
	})
	if q1r.State != store.QuestionCompleted || q2r.State != store.QuestionRunning || len(t11reqs) != 1 || t11reqs[0].State != store.RequestPending ||
		m12.State != store.MergeMerged || m13.State != store.MergeSubmitting {
		t.Fatalf("the workload's lanes: Q1 %s, Q2 %s, T11 requests %+v, T12 merge %s, T13 merge %s", q1r.State, q2r.State, t11reqs, m12.State, m13.State)
	}
	events := dry.Loop.Events()
	stride := 1
	if raceEnabled {
		// The race detector makes each run slow: sample every 32nd point
		// (the plain pass of the same CI run crashes at every one).
		stride = 32
	}
	points, fresh := 0, 0
	sample := 10 * stride // every tenth crash point also goes through a fresh OS process
	for k := 1; k <= events; k += stride {
		w := newSweepWorld(t)
		w.Loop.CrashAt = k
		w.runUntilCrash()
		w.Crash()
		if k%sample == 1 {
			w.recoverInFreshProcess(t, fmt.Sprintf("crash before event %d", k))
			fresh++
		}
		w.restartAndCheck(t, fmt.Sprintf("crash before event %d", k))
		points++
	}
	for k := 1; k <= commits; k += stride {
		w := newSweepWorld(t)
		n := 0
		w.FP.OnEach("store/before-commit", func() {
			if n++; n == k {
				panic(Crash{}) // the process dies with this transaction uncommitted
			}
		})
		crashed := !w.runUntilCrash()
		w.FP.OnEach("store/before-commit", func() {})
		w.Crash()
		if k%sample == 1 {
			w.recoverInFreshProcess(t, fmt.Sprintf("crash inside commit %d", k))
			fresh++
		}
		w.restartAndCheck(t, fmt.Sprintf("crash inside commit %d (crashed=%v)", k, crashed))
		points++
	}
	// Crashes inside startup recovery itself: the workload dies halfway,
	// the first restart dies at each of recovery's event boundaries and
	// commits, and a second restart must still end clean.
	half := events / 2
	probe := newSweepWorld(t)
	probe.Loop.CrashAt = half
	probe.runUntilCrash()
	probe.Crash()
	recCommits := 0
	probe.FP.OnEach("store/before-commit", func() { recCommits++ })
	if err := probe.Restart(); err != nil {
		t.Fatal(err)
	}
	recEvents := probe.Loop.Events()
	recoveryPoints := 0
	for j := 1; j <= recEvents+recCommits; j++ {
		w := newSweepWorld(t)
		w.Loop.CrashAt = half
		w.runUntilCrash()
		w.Crash()
		w.Loop.Revive()
		if j <= recEvents {
			w.Loop.CrashAt = j
		} else {
			n := 0
			w.FP.OnEach("store/before-commit", func() {
				if n++; n == j-recEvents {
					panic(Crash{})
				}
			})
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(Crash); !ok {
						panic(r)
					}
					w.Loop.Die()
				}
			}()
			if err := w.boot(); err != nil { // startup, recovery included
				t.Fatal(err)
			}
		}()
		w.FP.OnEach("store/before-commit", func() {})
		w.Crash()
		w.restartAndCheck(t, fmt.Sprintf("crash inside recovery at point %d", j))
		recoveryPoints++
	}
	t.Logf("crash points covered: %d in the workload (%d event boundaries, %d commits, stride %d) and %d inside recovery; %d of them recovered first by a fresh codeboost process",
		points, events, commits, stride, recoveryPoints, fresh)
}
