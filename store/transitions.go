package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// Guard holds what the legal-transitions table looks at for one change.
type Guard struct {
	From, To        words.State
	CurrentAttempt  bool             // the attempt is the task's current attempt
	FirstReason     words.Reason     // the first reason the write carries ("" for none)
	ContextCurrent  bool             // the captured context still matches the present
	StopReason      words.StopReason // D's stop reason, for running → failed
	TaskRunning     bool             // tasks.status is running
	CancelRequested bool             // tasks.cancel_requested is set
	CompletionGuard bool             // running → cancelled because the task left running
}

// Legal applies the contract's "Legal transitions" table. Any change not in
// the table is refused with a *Refusal whose code is CodeIllegal (or
// CodeNotCurrentAttempt when the attempt is no longer the task's current one).
// Admission (— → pending) and the same-state first-reason write have guards of
// their own in Admit and RecordFirstReason.
func Legal(g Guard) error {
	if !g.CurrentAttempt {
		return refuse(CodeNotCurrentAttempt, "the attempt is not the task's current attempt")
	}
	bad := func(why string) error {
		return refuse(CodeIllegal, "%s → %s refused: %s", g.From, g.To, why)
	}
	stopReason := g.FirstReason == words.ReasonCancelled || g.FirstReason == words.ReasonShutdown || g.FirstReason == words.ReasonTimeLimit
	staleOK := g.FirstReason == words.ReasonStale || (g.FirstReason == "" && !g.ContextCurrent)
	switch g.From {
	case words.Pending:
		switch g.To {
		case words.Running:
			if g.FirstReason != "" {
				return refuse(CodeFirstReasonSet, "pending → running refused: first reason %s is recorded", g.FirstReason)
			}
			return nil
		case words.Cancelled:
			if !stopReason {
				return bad("first reason must be cancelled, shutdown or time-limit")
			}
			return nil
		case words.Stale:
			if !staleOK {
				return bad("needs first reason stale, or none with a context that is no longer current")
			}
			return nil
		case words.Failed:
			if g.FirstReason != "" {
				return bad("a first reason is recorded")
			}
			if !g.ContextCurrent {
				return bad("the captured context is not current (the row takes stale)")
			}
			return nil
		}
	case words.Running:
		switch g.To {
		case words.Completed:
			switch {
			case g.FirstReason != "":
				return bad("a first reason is recorded")
			case !g.ContextCurrent:
				return bad("the captured context is not current")
			case !g.TaskRunning:
				// Checked before the pending cancel: a task that left
				// running takes the completion guard's cancelled.
				return refuse(CodeTaskNotRunning, "running → completed refused: the task is not running")
			case g.CancelRequested:
				return bad("cancel task is pending")
			}
			return nil
		case words.Failed:
			if !g.ContextCurrent {
				return bad("the captured context is not current (the row takes stale)")
			}
			dStopped := g.StopReason.ByD()
			if g.FirstReason == "" || (g.FirstReason == words.ReasonShutdown && dStopped) {
				return nil
			}
			return bad("first reason " + string(g.FirstReason) + " decides the terminal state")
		case words.Cancelled:
			// The completion guard stands in for running → completed when
			// only the task's status failed: with no first reason and a
			// context that is not current the row takes stale (rule 2).
			if stopReason || (g.CompletionGuard && g.FirstReason == "" && g.ContextCurrent && !g.TaskRunning) {
				return nil
			}
			return bad("first reason must be cancelled, shutdown or time-limit")
		case words.Stale:
			// The table's running → failed row says a non-current context
			// makes the row take stale; with first reason shutdown and D's
			// own stop reason that row would be failed, so stale is legal
			// there too (the stale row's own guard does not list it).
			dStopped := g.StopReason.ByD()
			if !staleOK && !(g.FirstReason == words.ReasonShutdown && dStopped && !g.ContextCurrent) {
				return bad("needs first reason stale, or none with a context that is no longer current")
			}
			return nil
		}
	}
	return bad("not in the table")
}

// guardFor reads what Legal needs for attempt a moving to state to.
func (t *Tx) guardFor(a Attempt, to words.State, firstReason words.Reason) (Guard, Task, Context, error) {
	task, present, err := t.TaskAndPresent(a.PlanKey)
	if err != nil {
		return Guard{}, task, present, err
	}
	return guard(a, task, present, to, firstReason), task, present, nil
}

func guard(a Attempt, task Task, present Context, to words.State, firstReason words.Reason) Guard {
	return Guard{
		From:            a.State,
		To:              to,
		CurrentAttempt:  task.CurrentAttemptID == a.ID,
		FirstReason:     firstReason,
		ContextCurrent:  StaleCause(a.Context, present) == "",
		TaskRunning:     task.Status == words.StatusRunning,
		CancelRequested: task.CancelRequested != "",
	}
}

// RecordFirstReason makes a stop durable: same attempt, state unchanged,
// first reason null → set. The state version increases so a poll shows
// "Stopping". A second stop changes nothing and is refused.
func (t *Tx) RecordFirstReason(attemptID string, reason words.Reason, staleCause string) error {
	if err := t.s.fp.Err("store/first-reason-write"); err != nil {
		return err
	}
	switch reason {
	case words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit:
	default:
		return refuse(CodeBadInput, "unknown first reason %q", reason)
	}
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	task, err := t.Task(a.PlanKey)
	if err != nil {
		return err
	}
	if task.CurrentAttemptID != a.ID {
		return refuse(CodeNotCurrentAttempt, "attempt %s is not the task's current attempt", a.ID)
	}
	if words.Terminal(a.State) {
		return refuse(CodeIllegal, "attempt %s is already %s", a.ID, a.State)
	}
	if a.FirstReason != "" {
		return refuse(CodeFirstReasonSet, "attempt %s already has first reason %s", a.ID, a.FirstReason)
	}
	if reason != words.ReasonStale {
		staleCause = ""
	}
	if _, err := t.exec(`UPDATE attempts SET first_reason = ?, stale_cause = ? WHERE id = ?`, reason, nullStr(staleCause), a.ID); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}

// MarkRunning writes pending → running once D returned a handle.
func (t *Tx) MarkRunning(attemptID string) error {
	if err := t.s.fp.Err("store/mark-running"); err != nil {
		return err
	}
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	g, _, _, err := t.guardFor(a, words.Running, a.FirstReason)
	if err != nil {
		return err
	}
	if err := Legal(g); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE attempts SET state = 'running', started_at = ? WHERE id = ?`, t.nowMS(), a.ID); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}

// Terminal is an attempt's terminal write.
type Terminal struct {
	State           words.State      // failed, cancelled or stale (completed only through Publish)
	FirstReason     words.Reason     // the job's first reason, from memory; "" for none
	StaleCause      string           // for stale
	StopReason      words.StopReason // D's stop reason, saved with the terminal write
	ExitCode        *int
	Diagnostic      string // bounded on write
	DiagnosticRef   string // partial-output file name, or ""
	Unreleased      string // what D could not confirm it removed, or ""
	CompletionGuard bool   // cancelled because the task left running
}

// MaxDiagnostic bounds every diagnostic written on a row.
const MaxDiagnostic = 4096

func bound(s string) string { return cut(s, MaxDiagnostic) }

// cut bounds s at max bytes, keeping UTF-8 whole and marking the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Finish writes an attempt's terminal state, in one transaction with the task
// effects the contract puts there: a pending cancel task closes the task as
// cancelled with its task-closed event; otherwise the time limit, or a safety
// finding, sends the task to needs human. A closed status never changes.
func (t *Tx) Finish(attemptID string, term Terminal) error {
	if err := t.s.fp.Err("store/terminal-write"); err != nil {
		return err
	}
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	_, task, present, err := t.guardFor(a, term.State, term.FirstReason)
	if err != nil {
		return err
	}
	return t.finish(a, task, present, term)
}

// FinishRead is Finish for a caller that has just read the attempt, its
// task and the task's present context in this same transaction (startup
// recovery finalizes thousands of rows in one): the same guards, without
// reading the three rows again.
func (t *Tx) FinishRead(a Attempt, task Task, present Context, term Terminal) error {
	if err := t.s.fp.Err("store/terminal-write"); err != nil {
		return err
	}
	return t.finish(a, task, present, term)
}

func (t *Tx) finish(a Attempt, task Task, present Context, term Terminal) error {
	if a.FirstReason != "" && term.FirstReason != a.FirstReason {
		if term.FirstReason != "" {
			return refuse(CodeIllegal, "terminal write carries first reason %q but the row has %q", term.FirstReason, a.FirstReason)
		}
		term.FirstReason = a.FirstReason // recovery and rereads: the durable reason
	}
	if term.State == words.Completed {
		return refuse(CodeIllegal, "completed is written only by Publish")
	}
	g := guard(a, task, present, term.State, term.FirstReason)
	g.StopReason = term.StopReason
	g.CompletionGuard = term.CompletionGuard
	if err := Legal(g); err != nil {
		return err
	}
	if term.State == words.Stale && term.StaleCause == "" {
		term.StaleCause = a.StaleCause
	}
	var exit any
	if term.ExitCode != nil {
		exit = *term.ExitCode
	}
	if _, err := t.exec(`UPDATE attempts SET state = ?, first_reason = ?, stale_cause = ?, stop_reason = ?, exit_code = ?,
		diagnostic = ?, diagnostic_ref = ?, unreleased = ?, settled_at = ? WHERE id = ?`,
		term.State, nullStr(term.FirstReason), nullStr(term.StaleCause), nullStr(term.StopReason), exit,
		nullStr(bound(term.Diagnostic)), nullStr(term.DiagnosticRef), nullStr(term.Unreleased), t.nowMS(), a.ID); err != nil {
		return err
	}
	if err := t.terminalTaskEffects(task, term.FirstReason, a.SafetyFinding != ""); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}

// terminalTaskEffects is the only place a task's status changes while it has
// an active attempt.
func (t *Tx) terminalTaskEffects(task Task, firstReason words.Reason, finding bool) error {
	if words.Closed(task.Status) {
		return nil
	}
	timeLimit := firstReason == words.ReasonTimeLimit
	switch {
	case task.CancelRequested != "":
		return t.closeTask(task.PlanKey, task.CancelRequested)
	case timeLimit || finding:
		_, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsHuman, task.PlanKey)
		return err
	}
	return nil
}

// closeTask closes a task as cancelled and inserts its task-closed event,
// keyed by the cancel-task action ID.
func (t *Tx) closeTask(planKey, actionID string) error {
	if _, err := t.exec(`UPDATE tasks SET status = ?, cancel_requested = NULL WHERE plan_key = ?`, words.StatusCancelled, planKey); err != nil {
		return err
	}
	return t.insertEvent(Event{PlanKey: planKey, ActionID: actionID, Kind: words.EventTaskClosed, SourceRef: planKey})
}

// MaxResult bounds attempts.result.
const MaxResult = 1 << 20

// Publish is publication step 3: in one transaction, the running → completed
// guard (current attempt, running, no first reason, context current, task
// running, no pending cancel task), then completed and the result, and for a
// writable attempt's commit the ledger entry (which increases the context
// generation after the guard ran). When the only failing guard is the task's
// status, the completion guard ends the row cancelled instead. It returns the
// state written, or a refusal for the caller to reread and settle.
func (t *Tx) Publish(attemptID string, result []byte, commit string, exitCode int) (words.State, error) {
	if len(result) > MaxResult {
		return "", refuse(CodeBadInput, "result is %d bytes, over the 1 MiB limit", len(result))
	}
	if result != nil && !json.Valid(result) {
		return "", refuse(CodeBadInput, "result is not JSON")
	}
	a, err := t.Attempt(attemptID)
	if err != nil {
		return "", err
	}
	g, task, _, err := t.guardFor(a, words.Completed, a.FirstReason)
	if err != nil {
		return "", err
	}
	if err := Legal(g); err != nil {
		if RefusalCode(err) != CodeTaskNotRunning {
			return "", err
		}
		// The completion guard: a second safeguard behind "a task's status
		// does not change while it has an active attempt".
		if _, err := t.exec(`UPDATE attempts SET state = 'cancelled', exit_code = ?, diagnostic = ?, settled_at = ? WHERE id = ?`,
			exitCode, words.TaskLeftRunning, t.nowMS(), a.ID); err != nil {
			return "", err
		}
		if err := t.terminalTaskEffects(task, "", a.SafetyFinding != ""); err != nil {
			return "", err
		}
		return words.Cancelled, t.bump(a.PlanKey)
	}
	if _, err := t.exec(`UPDATE attempts SET state = 'completed', result = ?, exit_code = ?, settled_at = ? WHERE id = ?`,
		result, exitCode, t.nowMS(), a.ID); err != nil {
		return "", err
	}
	if a.SafetyFinding != "" {
		if err := t.terminalTaskEffects(task, "", true); err != nil {
			return "", err
		}
	}
	if err := t.bump(a.PlanKey); err != nil {
		return "", err
	}
	if commit != "" {
		if err := t.RecordHistory(a.PlanKey, a.ID, commit); err != nil {
			return "", err
		}
	}
	return words.Completed, nil
}

// SetAllocation saves the caller-chosen allocation ID before allocation
// starts, so a crash mid-allocation still leaves a row that matches.
func (t *Tx) SetAllocation(attemptID, allocationID string) error {
	return t.setAttemptField(attemptID, `allocation_id = ?`, allocationID)
}

// SetStorageBaseline saves the storage's metadata baseline and base commit
// as soon as allocation returns; export after a crash needs both.
func (t *Tx) SetStorageBaseline(attemptID, baseline, base string) error {
	if err := t.s.fp.Err("store/baseline-write"); err != nil {
		return err
	}
	return t.setAttemptField(attemptID, `metadata_baseline = ?, storage_base = ?`, baseline, base)
}

// RecordSafetyFinding records the runner's audit finding before the
// terminal write, which then sends the task to needs human.
func (t *Tx) RecordSafetyFinding(attemptID, finding string) error {
	if err := t.s.fp.Err("store/finding-write"); err != nil {
		return err
	}
	return t.setAttemptField(attemptID, `safety_finding = ?`, bound(finding))
}

// OweFinding persists and acts on a safety finding owed from an earlier
// run, one whose save with its attempt's terminal write failed ("A finding
// whose save failed … owed at a human gate until the task leaves it";
// "Start and resume": "a safety finding owed from an earlier run is
// persisted and acted on, and nothing is admitted"). In one transaction:
// the evidence and the explicit owed marker on the task (schema v13), the
// task to needs human, and requeue_pending claimed and cleared ("when
// owed work settles without an admission that same transaction claims and
// clears requeue_pending"). A closed task keeps its status; a pending
// cancel closes it, as a terminal write's finding would; an active
// attempt refuses it (a task does not change status under one). The
// marker stays until the person resolves the gate (NeedsHumanGuidance).
func (t *Tx) OweFinding(planKey, attemptID, finding string) error {
	if err := ids.CheckUUID("attempt ID", attemptID); err != nil {
		return refuse(CodeBadInput, "%v", err)
	}
	if finding == "" {
		return refuse(CodeBadInput, "an owed finding needs its text")
	}
	task, err := t.Task(planKey)
	if err != nil {
		return err
	}
	if active, err := t.activeAttempt(planKey); err != nil {
		return err
	} else if active != "" {
		return refuse(CodeActiveAttempt, "attempt %s is still active", active)
	}
	if _, err := t.exec(`UPDATE tasks SET owed_finding = ?, owed_attempt = ?, requeue_pending = 0 WHERE plan_key = ?`,
		bound(finding), attemptID, planKey); err != nil {
		return err
	}
	if err := t.terminalTaskEffects(task, "", true); err != nil {
		return err
	}
	return t.bump(planKey)
}

// MarkPreparationStarting saves preparation_started_at with a null group,
// before the spawn.
func (t *Tx) MarkPreparationStarting(attemptID string, at time.Time) error {
	if err := t.s.fp.Err("store/preparation-mark"); err != nil {
		return err
	}
	return t.setAttemptField(attemptID, `preparation_started_at = ?, preparation_pgid = NULL, preparation_identity = NULL`, at.UnixMilli())
}

// SetPreparationGroup saves the spawned group's ID, start time and identity.
func (t *Tx) SetPreparationGroup(attemptID string, pgid int, startedAt time.Time, identity string) error {
	return t.setAttemptField(attemptID, `preparation_pgid = ?, preparation_started_at = ?, preparation_identity = ?`,
		pgid, startedAt.UnixMilli(), identity)
}

// setAttemptField sets columns of a non-terminal attempt. Its guard rides
// in the update (only a pending or running row is changed), and the row
// is read only to say why nothing was: the preparation marks are four of
// an attempt's writes, and a whole row read before each (its context's
// JSON decoded) was most of each one's cost.
func (t *Tx) setAttemptField(attemptID, set string, args ...any) error {
	var planKey string
	err := t.queryRow(`UPDATE attempts SET `+set+` WHERE id = ? AND state IN ('pending','running') RETURNING plan_key`,
		append(args, attemptID)...).Scan(&planKey)
	if errors.Is(err, sql.ErrNoRows) {
		_, state, err := t.attemptState(attemptID)
		if err != nil {
			return err
		}
		return refuse(CodeIllegal, "attempt %s is already %s", attemptID, state)
	}
	if err != nil {
		return err
	}
	return t.bump(planKey)
}
