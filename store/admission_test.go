package store_test

// Admission's Store half (the contract's "— → pending" row): the task's
// status is running or queued; the state version equals the caller's; no
// non-terminal attempt exists; the captured context is current. Plus the
// budget, the requeue claim and the attempt ID's shape.

import (
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// attemptRows counts every attempt row in the database.
func (e *env) attemptRows() int64 { return e.rawInt(`SELECT COUNT(*) FROM attempts`) }

// wantAdmitRefused admits r, expects refusal code and checks that nothing
// changed: no attempt row, same task, same history.
func (e *env) wantAdmitRefused(r store.AdmitRequest, code string) {
	e.t.Helper()
	before := e.snap(r.PlanKey)
	rows := e.attemptRows()
	a, err := e.s.Admit(r)
	wantRefusal(e.t, err, code)
	if a.ID != "" {
		e.t.Errorf("refused admission returned attempt %s", a.ID)
	}
	if n := e.attemptRows(); n != rows {
		e.t.Errorf("refused admission wrote %d attempt rows", n-rows)
	}
	if code == store.CodeBudgetSpent {
		return // the idle task moves to needs human; checked by the caller
	}
	if diff := cmp.Diff(before, e.snap(r.PlanKey)); diff != "" {
		e.t.Errorf("refused admission (%s) changed the database (-before +after):\n%s", code, diff)
	}
}

func TestAdmitTaskStatus(t *testing.T) {
	for _, status := range words.TaskStatuses {
		t.Run(string(status), func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask(status)
			r := e.admitReq(key, words.KindPlanning)
			if status != words.StatusRunning && status != words.StatusQueued {
				e.wantAdmitRefused(r, store.CodeTaskInactive)
				return
			}
			a, err := e.s.Admit(r)
			if err != nil {
				t.Fatalf("Admit on a %s task: %v", status, err)
			}
			if got := e.task(key).Status; got != words.StatusRunning {
				t.Errorf("task status %s after admission, want running", got)
			}
			if a.State != words.Pending {
				t.Errorf("attempt state %s, want pending", a.State)
			}
		})
	}
}

func TestAdmitWritesPendingAttempt(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.task(key)
	present, err := e.s.PresentContext(key)
	if err != nil {
		t.Fatal(err)
	}
	item := 2
	r := e.admitReq(key, words.KindExecute)
	r.Item = &item
	a, err := e.s.Admit(r)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	want := store.Attempt{
		ID:        a.ID,
		PlanKey:   key,
		Kind:      words.KindExecute,
		Phase:     words.PhaseExecute,
		Item:      &item,
		State:     words.Pending,
		Context:   present,
		Deadline:  now.Add(r.AttemptTimeout),
		CreatedAt: now,
	}
	if diff := cmp.Diff(want, e.attempt(a.ID)); diff != "" {
		t.Errorf("attempt row (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, a.Attempt); diff != "" {
		t.Errorf("returned attempt (-want +got):\n%s", diff)
	}
	after := e.task(key)
	if after.StateVersion != before.StateVersion+1 {
		t.Errorf("state version %d → %d, want +1", before.StateVersion, after.StateVersion)
	}
	if after.ContextGeneration != before.ContextGeneration {
		t.Errorf("admission moved the context generation")
	}
	if after.CurrentAttemptID != a.ID {
		t.Errorf("current attempt %q, want %q", after.CurrentAttemptID, a.ID)
	}
	// The coordinator arms the task budget's timer from what admission
	// returns, without reading the task again.
	if after.BudgetDeadline == nil || !a.BudgetDeadline.Equal(*after.BudgetDeadline) {
		t.Errorf("admission returned the budget deadline %v; the task's is %v", a.BudgetDeadline, after.BudgetDeadline)
	}
	// TaskAndPresent is Task and PresentContext in one statement.
	var both store.Task
	var bothPresent store.Context
	if err := e.s.View(func(tx *store.Tx) (err error) { both, bothPresent, err = tx.TaskAndPresent(key); return err }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after, both); diff != "" {
		t.Errorf("TaskAndPresent's task (-Task +TaskAndPresent):\n%s", diff)
	}
	if diff := cmp.Diff(present, bothPresent); diff != "" {
		t.Errorf("TaskAndPresent's context (-PresentContext +TaskAndPresent):\n%s", diff)
	}
}

func TestAdmitKinds(t *testing.T) {
	want := map[string]string{
		words.KindPlanning:  words.PhasePlanning,
		words.KindQuestion:  words.PhaseQuestions,
		words.KindReview:    words.PhaseReview,
		words.KindCheck:     words.PhaseReview,
		words.KindExecute:   words.PhaseExecute,
		words.KindFix:       words.PhaseFix,
		words.KindRebaseFix: words.PhaseFix,
	}
	for kind, phase := range want {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			if got := e.admit(key, kind).Phase; got != phase {
				t.Errorf("kind %s runs under phase %s, want %s", kind, got, phase)
			}
		})
	}
	for _, kind := range []string{"", "deploy", "questions", "Execute", "execute "} {
		e := newEnv(t)
		key := e.newTask("")
		e.wantAdmitRefused(e.admitReq(key, kind), store.CodeBadInput)
	}
}

func TestAdmitExpectedStateVersion(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	r := e.admitReq(key, words.KindReview)
	for _, v := range []int64{r.ExpectedStateVersion - 1, r.ExpectedStateVersion + 1, 99} {
		bad := r
		bad.ExpectedStateVersion = v
		e.wantAdmitRefused(bad, store.CodeStaleVersion)
	}
	// Two tabs: both read version v; the first admits, the second is refused
	// even after the first attempt ended.
	a, err := e.s.Admit(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}
	e.wantAdmitRefused(r, store.CodeStaleVersion)
}

func TestAdmitOneNonTerminalAttempt(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindReview)
	e.wantAdmitRefused(e.admitReq(key, words.KindQuestion), store.CodeActiveAttempt)
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	e.wantAdmitRefused(e.admitReq(key, words.KindQuestion), store.CodeActiveAttempt)
	e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonCancelled, "") })
	// "Stopping" is still non-terminal: cancel does not free anything.
	e.wantAdmitRefused(e.admitReq(key, words.KindQuestion), store.CodeActiveAttempt)
	if err := e.finish(a.ID, store.Terminal{State: words.Cancelled}); err != nil {
		t.Fatal(err)
	}
	b := e.admit(key, words.KindQuestion)
	if b.ID == a.ID {
		t.Errorf("attempt ID %s reused", b.ID)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM attempts WHERE plan_key = ? AND state IN ('pending','running')`, key); n != 1 {
		t.Errorf("%d non-terminal attempts, want 1", n)
	}
}

func TestAdmitCapturedContextMustBeCurrent(t *testing.T) {
	changes := map[string]func(tx *store.Tx, key string) error{
		"snapshot": func(tx *store.Tx, key string) error { return tx.ChangeSnapshot(key, "snap-2") },
		"revision": func(tx *store.Tx, key string) error {
			_, err := tx.ImportRevision(key, 1, []string{"new"})
			return err
		},
		"assignment": func(tx *store.Tx, key string) error { return tx.Reassign(key, "bob") },
		"code":       func(tx *store.Tx, key string) error { return tx.RecordHistory(key, "", "c0ffee") },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			old, err := e.s.PresentContext(key)
			if err != nil {
				t.Fatal(err)
			}
			e.update(func(tx *store.Tx) error { return change(tx, key) })
			r := e.admitReq(key, words.KindReview)
			r.Captured = &old
			e.wantAdmitRefused(r, store.CodeNotCurrent)

			// Only the generation differs: still not current.
			present, _ := e.s.PresentContext(key)
			onlyGen := present
			onlyGen.Generation--
			r.Captured = &onlyGen
			e.wantAdmitRefused(r, store.CodeNotCurrent)

			r.Captured = &present
			a, err := e.s.Admit(r)
			if err != nil {
				t.Fatalf("Admit with the present context: %v", err)
			}
			if diff := cmp.Diff(present, a.Context); diff != "" {
				t.Errorf("captured context (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitBudget(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusQueued)
	if d := e.task(key).BudgetDeadline; d != nil {
		t.Fatalf("new task has budget deadline %v; null means not started", d)
	}
	start := e.clock.Now()
	r := e.admitReq(key, words.KindReview)
	r.Budget = 2 * time.Hour
	a, err := e.s.Admit(r)
	if err != nil {
		t.Fatal(err)
	}
	task := e.task(key)
	if task.Status != words.StatusRunning {
		t.Errorf("first admission left the task %s, want running", task.Status)
	}
	if task.BudgetDeadline == nil || !task.BudgetDeadline.Equal(start.Add(2*time.Hour)) {
		t.Errorf("budget deadline %v, want %v", task.BudgetDeadline, start.Add(2*time.Hour))
	}
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}

	// A later admission keeps the deadline: the budget covers the task.
	e.clock.Advance(90 * time.Minute)
	r = e.admitReq(key, words.KindReview)
	r.Budget = 5 * time.Hour
	b, err := e.s.Admit(r)
	if err != nil {
		t.Fatal(err)
	}
	if d := e.task(key).BudgetDeadline; d == nil || !d.Equal(start.Add(2*time.Hour)) {
		t.Errorf("second admission moved the budget deadline to %v", d)
	}
	if err := e.finish(b.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}

	// Spent: exactly at the deadline.
	e.clock.Advance(30 * time.Minute)
	before := e.task(key)
	e.wantAdmitRefused(e.admitReq(key, words.KindReview), store.CodeBudgetSpent)
	after := e.task(key)
	if after.Status != words.StatusNeedsHuman {
		t.Errorf("idle task with a spent budget is %s, want needs human", after.Status)
	}
	if after.StateVersion != before.StateVersion+1 || after.ContextGeneration != before.ContextGeneration {
		t.Errorf("budget-spent move: state version %d → %d (want +1), generation %d → %d",
			before.StateVersion, after.StateVersion, before.ContextGeneration, after.ContextGeneration)
	}
	// Needs human admits nothing.
	e.wantAdmitRefused(e.admitReq(key, words.KindReview), store.CodeTaskInactive)
}

// TestAdmitBudgetSpentWithActiveAttempt: the budget refusal never moves a
// task whose attempt is still active (a status does not change then).
func TestAdmitBudgetSpentWithActiveAttempt(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.running(key, words.KindReview)
	e.clock.Advance(3 * time.Hour)
	before := e.snap(key)
	_, err := e.s.Admit(e.admitReq(key, words.KindReview))
	if err == nil {
		t.Fatal("admitted a second attempt")
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused admission changed a task with an active attempt:\n%s", diff)
	}
}

func TestAdmitRequeuePending(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusRunning)
	e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, key)
	e.wantAdmitRefused(e.admitReq(key, words.KindReview), store.CodeRequeuePending)
	r := e.admitReq(key, words.KindReview)
	r.ClaimRequeue = true
	a, err := e.s.Admit(r)
	if err != nil {
		t.Fatalf("resume with ClaimRequeue: %v", err)
	}
	if task := e.task(key); task.RequeuePending {
		t.Errorf("requeue_pending still set after the claim")
	}
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}
	// A second claim finds nothing to claim.
	r = e.admitReq(key, words.KindReview)
	r.ClaimRequeue = true
	e.wantAdmitRefused(r, store.CodeRequeuePending)
}

func TestAdmitAttemptIDs(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		a := e.admit(key, words.KindQuestion)
		if !ids.ValidUUID(a.ID) {
			t.Errorf("attempt ID %q is not a lowercase UUID v4", a.ID)
		}
		if seen[a.ID] {
			t.Errorf("attempt ID %s reused", a.ID)
		}
		seen[a.ID] = true
		if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdmitUnknownTask: admission of a task that does not exist is refused
// and writes nothing.
func TestAdmitUnknownTask(t *testing.T) {
	e := newEnv(t)
	_, err := e.s.Admit(store.AdmitRequest{PlanKey: "repo/none/plan", Kind: words.KindReview})
	wantRefusal(t, err, store.CodeNotFound)
	if n := e.attemptRows(); n != 0 {
		t.Errorf("%d attempt rows", n)
	}
}

// TestAdmitStorageFault: a failing admission transaction writes nothing.
func TestAdmitStorageFault(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.snap(key)
	if err := e.fp.Enable("store/admit", "1*return"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Admit(e.admitReq(key, words.KindReview)); err == nil {
		t.Fatal("Admit succeeded through its failpoint")
	} else if _, ok := store.IsRefusal(err); ok {
		t.Fatalf("storage fault reported as a refusal: %v", err)
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("failed admission changed the database:\n%s", diff)
	}
	e.admit(key, words.KindReview)
}

// TestAdmitAllocationID: a caller-chosen allocation ID is saved with the
// pending row, and one that is not a lowercase UUID v4 refuses the
// admission before anything is written.
func TestAdmitAllocationID(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	for _, bad := range []string{"ALLOC", "../x", "5F0C6A3E-2B1D-4E8F-9A7C-0D1E2F3A4B5C"} {
		r := e.admitReq(key, words.KindExecute)
		r.AllocationID = bad
		e.wantAdmitRefused(r, store.CodeBadInput)
	}
	r := e.admitReq(key, words.KindExecute)
	r.AllocationID = actionA
	a, err := e.s.Admit(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.attempt(a.ID).AllocationID; got != actionA {
		t.Errorf("allocation ID %q, want %q", got, actionA)
	}
}

// TestAdmitRefusalNamesThePendingRequeue: "While it is set, retry and every
// other admission for that task are refused ... Exactly one path clears
// it, by an atomic compare-and-swap from true to false in the same
// transaction that admits the next attempt: I3's requeue, or ... the
// user's explicit 'Resume' action." Both sides of that compare-and-swap
// refuse with requeue-pending, so the refusal's message (Refusal.Message
// is "for people") is what tells them apart: an unclaimed admission while
// recovery listed the task says so and points at resume; a claim with
// nothing pending says there is nothing to claim. Telling the user "no
// requeue is pending" when one is would send them away from the one
// action that continues the task.
func TestAdmitRefusalNamesThePendingRequeue(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name          string
		pending       bool
		claim         bool
		want, notWant string
	}{
		{"unclaimed admission while a requeue is pending", true, false, "resume it instead", "no requeue is pending"},
		{"claim with no requeue pending", false, true, "no requeue is pending", "resume it instead"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := e.newTask(words.StatusRunning)
			if c.pending {
				e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, key)
			}
			r := e.admitReq(key, words.KindReview)
			r.ClaimRequeue = c.claim
			e.wantAdmitRefused(r, store.CodeRequeuePending)
			_, err := e.s.Admit(r)
			ref := wantRefusal(t, err, store.CodeRequeuePending)
			if !strings.Contains(ref.Message, c.want) || strings.Contains(ref.Message, c.notWant) {
				t.Fatalf("refusal %q, want one that says %q", ref.Message, c.want)
			}
			if got := e.task(key).RequeuePending; got != c.pending {
				t.Fatalf("requeue_pending = %v after a refused admission, want %v", got, c.pending)
			}
		})
	}
}
