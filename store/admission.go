package store

import (
	"encoding/json"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// AdmitRequest is one admission's durable half. The coordinator has already
// checked, in memory, that it is open, that the task has no job or marker and
// that a slot is free, and has reserved that slot.
type AdmitRequest struct {
	PlanKey              string
	Kind                 string
	Item                 *int
	ExpectedStateVersion int64
	// Captured is the context a retry carries over from its last attempt;
	// nil captures the present context.
	Captured       *Context
	AttemptTimeout time.Duration // the attempt's deadline is now + this
	Budget         time.Duration // the whole-task budget, started on the first admission
	ClaimRequeue   bool          // resume: clear requeue_pending by compare-and-swap
	// AllocationID is the caller-chosen task-storage allocation ID, saved
	// with the row so that it is durable before allocation starts. Optional.
	AllocationID string
	// RunReviewVersion, set on a plan run's first item, is saved as the
	// task's run_review_version (Task.RunReviewVersion); nil keeps it.
	RunReviewVersion *int
}

// Admitted is the attempt admission wrote, with the task's budget
// deadline as admission left it: the coordinator arms the budget's timer
// from it, without a read of the task it has just written.
type Admitted struct {
	Attempt
	BudgetDeadline time.Time
}

// Admit writes a pending attempt if every guard passes: the task's status is
// running or queued, the state version matches, no non-terminal attempt
// exists, no requeue is pending (unless claimed), the captured context is
// current and the task budget is not spent. The first admission moves the
// task to running and starts its budget.
func (t *Tx) Admit(r AdmitRequest) (Admitted, error) {
	if err := t.s.fp.Err("store/admit"); err != nil {
		return Admitted{}, err
	}
	phase, ok := words.PhaseOf(r.Kind)
	if !ok {
		return Admitted{}, refuse(CodeBadInput, "unknown attempt kind %q", r.Kind)
	}
	task, present, err := t.TaskAndPresent(r.PlanKey)
	if err != nil {
		return Admitted{}, err
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return Admitted{}, refuse(CodeTaskInactive, "task is %s; only a running or queued task admits work", task.Status)
	}
	if task.StateVersion != r.ExpectedStateVersion {
		return Admitted{}, refuse(CodeStaleVersion, "state version is %d, not %d", task.StateVersion, r.ExpectedStateVersion)
	}
	if active, err := t.activeAttempt(r.PlanKey); err != nil {
		return Admitted{}, err
	} else if active != "" {
		return Admitted{}, refuse(CodeActiveAttempt, "attempt %s is still active", active)
	}
	if task.RequeuePending != r.ClaimRequeue {
		if task.RequeuePending {
			return Admitted{}, refuse(CodeRequeuePending, "recovery listed this task to requeue; resume it instead")
		}
		return Admitted{}, refuse(CodeRequeuePending, "no requeue is pending for this task")
	}
	captured := present
	if r.Captured != nil {
		captured = *r.Captured
		if cause := StaleCause(captured, present); cause != "" {
			return Admitted{}, refuse(CodeNotCurrent, "the captured context is not current: %s", cause)
		}
	}
	now := t.s.now()
	if task.BudgetDeadline != nil && !now.Before(*task.BudgetDeadline) {
		return Admitted{}, refuse(CodeBudgetSpent, "the task time budget is spent")
	}
	id := t.s.ids.UUID()
	if err := ids.CheckUUID("attempt ID", id); err != nil {
		return Admitted{}, err
	}
	if r.AllocationID != "" {
		if err := ids.CheckUUID("allocation ID", r.AllocationID); err != nil {
			return Admitted{}, refuse(CodeBadInput, "%v", err)
		}
	}
	ctxJSON, _ := json.Marshal(captured)
	var item any
	if r.Item != nil {
		item = *r.Item
	}
	if _, err := t.exec(`INSERT INTO attempts (id, plan_key, kind, phase, item, state, context, deadline, allocation_id, created_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
		id, r.PlanKey, r.Kind, phase, item, string(ctxJSON), now.Add(r.AttemptTimeout).UnixMilli(), nullStr(r.AllocationID), now.UnixMilli()); err != nil {
		return Admitted{}, err
	}
	budget := task.BudgetDeadline
	if budget == nil {
		d := now.Add(r.Budget)
		budget = &d
	}
	var runReview any
	if r.RunReviewVersion != nil {
		runReview = *r.RunReviewVersion
	}
	// The state version's bump rides in the task's update (as bump would
	// write it), and the row just inserted is returned as written, not
	// read back: admission is the longest of an attempt's writes.
	if _, err := t.exec(`UPDATE tasks SET status = 'running', current_attempt_id = ?, budget_deadline = ?, requeue_pending = 0,
		run_review_version = COALESCE(?, run_review_version), state_version = state_version + 1, updated_at = ?
		WHERE plan_key = ?`, id, budget.UnixMilli(), runReview, now.UnixMilli(), r.PlanKey); err != nil {
		return Admitted{}, err
	}
	a := Attempt{ID: id, PlanKey: r.PlanKey, Kind: r.Kind, Phase: phase, State: words.Pending, Context: captured,
		Deadline: time.UnixMilli(now.Add(r.AttemptTimeout).UnixMilli()).UTC(), AllocationID: r.AllocationID,
		CreatedAt: time.UnixMilli(now.UnixMilli()).UTC()}
	if r.Item != nil {
		item := *r.Item
		a.Item = &item
	}
	return Admitted{Attempt: a, BudgetDeadline: time.UnixMilli(budget.UnixMilli()).UTC()}, nil
}

// Admit runs admission in its own transaction; see AdmissionRefused.
func (s *Store) Admit(r AdmitRequest) (a Admitted, err error) {
	err = s.Update(func(tx *Tx) error { a, err = tx.Admit(r); return err })
	s.AdmissionRefused(r.PlanKey, err)
	return a, err
}

// AdmissionRefused is the second half of "a spent budget refuses admission
// and moves an idle task to needs human" outside a user action: the
// transaction that held the refused admission (a plain one, a plan run's next
// item) has rolled back, so the move is a transaction of its own. Any error
// other than that refusal is left alone. A user action's refusal makes the
// same move itself, in the transaction that records the refusal (see
// Tx.refused).
func (s *Store) AdmissionRefused(planKey string, err error) {
	if RefusalCode(err) == CodeBudgetSpent {
		s.Update(func(tx *Tx) error { return tx.budgetSpent(planKey) })
	}
}

// refused is the effect a user action's refusal carries, written in the
// transaction that records the refusal and only there: a spent budget moves
// an idle task to needs human. The move is part of the refusal's outcome, so
// it lands exactly when that outcome is recorded. A refusal whose record
// failed moved nothing: the caller gets a storage error, and a resend (not a
// replay) meets the same guards, is refused again and moves the task then. A
// replay of the recorded refusal applies nothing, the move included.
func (t *Tx) refused(planKey string, r *Refusal) error {
	if r.Code == CodeBudgetSpent {
		return t.budgetSpent(planKey)
	}
	return nil
}

// budgetSpent moves an idle running or queued task to needs human.
func (t *Tx) budgetSpent(planKey string) error {
	task, err := t.Task(planKey)
	if err != nil {
		return err
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return nil
	}
	if active, err := t.activeAttempt(planKey); err != nil || active != "" {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsHuman, planKey); err != nil {
		return err
	}
	return t.bump(planKey)
}

// CheckRetry applies the Store half of "Retry": the last attempt is failed
// or cancelled on disk and is the caller's; the task is running or queued
// with no requeue pending; the state version matches; the last attempt's
// captured context is still current. A writable attempt is never retried on
// its own (OnlyThroughPlanRun). It returns the attempt to retry.
func (t *Tx) CheckRetry(planKey, attemptID string, expectedStateVersion int64) (Attempt, error) {
	task, err := t.Task(planKey)
	if err != nil {
		return Attempt{}, err
	}
	if err := againTask(task, "retry"); err != nil {
		return Attempt{}, err
	}
	a, err := t.lastAttempt(task, attemptID, expectedStateVersion)
	if err != nil {
		return a, err
	}
	if a.State != words.Failed && a.State != words.Cancelled {
		return a, refuse(CodeNotRetryable, "attempt is %s; only a failed or cancelled attempt is retried", a.State)
	}
	if err := OnlyThroughPlanRun(a); err != nil {
		return a, err
	}
	present, err := t.PresentContext(planKey)
	if err != nil {
		return a, err
	}
	if cause := StaleCause(a.Context, present); cause != "" {
		return a, refuse(CodeNotCurrent, "the attempt's context is no longer current: %s", cause)
	}
	return a, nil
}

// againTask is the task's half of retry and run again (what names the
// action): a task that is closed or waits on a person runs nothing again,
// the task is running or queued, and no requeue is pending (resume takes
// that task on). GET /api/runner offers either action only when its check
// here passes, so the offer and the refusal are one rule.
func againTask(task Task, what string) error {
	if words.Closed(task.Status) || words.HumanGated(task.Status) {
		return refuse(CodeNotRetryable, "task is %s; %s is refused", task.Status, what)
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return refuse(CodeNotRetryable, "task is %s; %s needs running or queued", task.Status, what)
	}
	if task.RequeuePending {
		return refuse(CodeRequeuePending, "recovery listed this task to requeue; resume it instead")
	}
	return nil
}

// CheckRunAgain is "Run again on the current code" for a stale attempt: a
// new request that captures a fresh context, for a task that may run
// again (againTask). A writable attempt is refused (OnlyThroughPlanRun):
// its item runs again through resume. It returns the stale attempt.
func (t *Tx) CheckRunAgain(planKey, attemptID string, expectedStateVersion int64) (Attempt, error) {
	task, err := t.Task(planKey)
	if err != nil {
		return Attempt{}, err
	}
	if err := againTask(task, "run again"); err != nil {
		return Attempt{}, err
	}
	a, err := t.lastAttempt(task, attemptID, expectedStateVersion)
	if err != nil {
		return a, err
	}
	if a.State != words.Stale {
		return a, refuse(CodeNotRetryable, "run again is for a stale attempt; this one is %s", a.State)
	}
	return a, OnlyThroughPlanRun(a)
}

// OnlyThroughPlanRun refuses retry and "run again" of a writable attempt
// (execute, fix, rebase-fix): "A plan item runs only through ItemExecutor".
// Admitted on its own, such an attempt would skip every gate the plan run
// applies at resume (the approvals, the review version, the scope
// checkpoint, an owed finding, a moved head) and write the task's code
// under a plan nobody approved. The refusal sends the person to Resume,
// which applies them all. GET /api/runner offers neither action for such
// an attempt by this same rule.
func OnlyThroughPlanRun(a Attempt) error {
	if words.Writable(a.Kind) {
		return refuse(CodeResumeInstead, "This %s attempt runs again only through the plan run: press Resume, which checks the plan's approvals, review version, checkpoint and head again.", a.Kind)
	}
	return nil
}

// lastAttempt checks the caller's view (state version, and that attemptID
// is the task's last attempt: a double retry from two tabs fails here) and
// reads that attempt.
func (t *Tx) lastAttempt(task Task, attemptID string, expectedStateVersion int64) (Attempt, error) {
	if task.StateVersion != expectedStateVersion {
		return Attempt{}, refuse(CodeStaleVersion, "state version is %d, not %d", task.StateVersion, expectedStateVersion)
	}
	if task.CurrentAttemptID != attemptID {
		return Attempt{}, refuse(CodeNotCurrentAttempt, "attempt %s is not the task's last attempt", attemptID)
	}
	return t.Attempt(attemptID)
}
