package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/codeboost/codeboost/words"
)

// Context is an attempt's captured context (the contract's "Captured
// context"). It is compared field by field with the task's present values.
type Context struct {
	SnapshotID         string `json:"snapshotId"`
	PlanID             string `json:"planId"`
	PlanRevision       int    `json:"planRevision"`
	AssignmentID       string `json:"assignmentId"`
	ReferencedCodeHash string `json:"referencedCodeHash"`
	Generation         int64  `json:"contextGeneration"`
}

// StaleCause names what changed between captured and present, e.g. "plan
// revision 4 replaced 3"; it is empty when captured is current.
func StaleCause(captured, present Context) string {
	var causes []string
	if present.PlanID != captured.PlanID {
		causes = append(causes, "plan "+present.PlanID+" replaced "+captured.PlanID)
	}
	if present.PlanRevision != captured.PlanRevision {
		causes = append(causes, "plan revision "+itoa(int64(present.PlanRevision))+" replaced "+itoa(int64(captured.PlanRevision)))
	}
	if present.SnapshotID != captured.SnapshotID {
		causes = append(causes, "snapshot "+present.SnapshotID+" replaced "+captured.SnapshotID)
	}
	if present.AssignmentID != captured.AssignmentID {
		causes = append(causes, "assignment "+present.AssignmentID+" replaced "+captured.AssignmentID)
	}
	if present.ReferencedCodeHash != captured.ReferencedCodeHash {
		causes = append(causes, "referenced code "+present.ReferencedCodeHash+" replaced "+captured.ReferencedCodeHash)
	}
	if len(causes) == 0 && present.Generation != captured.Generation {
		causes = append(causes, "context generation "+itoa(present.Generation)+" replaced "+itoa(captured.Generation))
	}
	return strings.Join(causes, "; ")
}

// Task is a tasks row.
type Task struct {
	PlanKey            string
	Status             words.TaskStatus
	RequeuePending     bool
	RebaseInProgress   string     // "" when none
	BudgetDeadline     *time.Time // nil: the budget has not started, never expired
	CancelRequested    string     // the cancel-task action ID, or ""
	StateVersion       int64
	ContextGeneration  int64
	AssignmentID       string
	ReferencedCodeHash string
	CurrentAttemptID   string // "" when none
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// OwedFinding is a safety finding owed at a human gate (schema v13's
	// evidence), from OwedAttempt's run; "" when none is owed.
	OwedFinding string
	OwedAttempt string
	// RunReviewVersion is the review version the task's plan run was
	// admitted against, from the admission of its first item until it
	// finishes; nil when no run was admitted since the last one finished
	// (or before schema v11).
	RunReviewVersion *int
}

// NoCode is referenced_code_hash's default: no code recorded for the task
// yet (no review load read its repository's HEAD).
const NoCode = "none"

// Head is the commit the task's recorded code names, or "" when none is
// recorded: D then takes the repository's HEAD (dadapter.Source).
func (t Task) Head() string {
	if t.ReferencedCodeHash == NoCode {
		return ""
	}
	return t.ReferencedCodeHash
}

// Attempt is an attempts row.
type Attempt struct {
	ID                   string
	PlanKey              string
	Kind                 string
	Phase                string
	Item                 *int
	State                words.State
	Context              Context
	Deadline             time.Time
	FirstReason          words.Reason // "" when none
	StaleCause           string
	StopReason           words.StopReason
	ExitCode             *int
	Result               []byte
	Diagnostic           string
	DiagnosticRef        string
	SafetyFinding        string
	Unreleased           string
	PreparationPGID      *int
	PreparationStartedAt *time.Time
	PreparationIdentity  string
	AllocationID         string
	MetadataBaseline     string
	StorageBase          string
	CreatedAt            time.Time
	StartedAt            *time.Time
	SettledAt            *time.Time
}

const taskCols = `plan_key, status, requeue_pending, rebase_in_progress, budget_deadline, cancel_requested,
	state_version, context_generation, assignment_id, referenced_code_hash, current_attempt_id, created_at, updated_at,
	owed_finding, owed_attempt, run_review_version`

func scanTask(row interface{ Scan(...any) error }) (Task, error) {
	var t Task
	var rebase, cancel, current, owed, owedAttempt sql.NullString
	var budget, runReview sql.NullInt64
	var created, updated int64
	err := row.Scan(&t.PlanKey, &t.Status, &t.RequeuePending, &rebase, &budget, &cancel,
		&t.StateVersion, &t.ContextGeneration, &t.AssignmentID, &t.ReferencedCodeHash, &current, &created, &updated,
		&owed, &owedAttempt, &runReview)
	if err != nil {
		return t, err
	}
	if runReview.Valid {
		v := int(runReview.Int64)
		t.RunReviewVersion = &v
	}
	t.RebaseInProgress, t.CancelRequested, t.CurrentAttemptID = rebase.String, cancel.String, current.String
	t.OwedFinding, t.OwedAttempt = owed.String, owedAttempt.String
	t.BudgetDeadline = msPtr(budget)
	t.CreatedAt, t.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return t, nil
}

const attemptCols = `id, plan_key, kind, phase, item, state, context, deadline, first_reason, stale_cause, stop_reason,
	exit_code, result, diagnostic, diagnostic_ref, safety_finding, unreleased, preparation_pgid, preparation_started_at,
	preparation_identity, allocation_id, metadata_baseline, storage_base, created_at, started_at, settled_at`

func scanAttempt(row interface{ Scan(...any) error }) (Attempt, error) {
	var a Attempt
	var item, exit, pgid sql.NullInt64
	var ctxJSON string
	var first, cause, stop, diag, ref, finding, unrel, ident, alloc, baseline, base sql.NullString
	var prepStarted, started, settled sql.NullInt64
	var deadline, created int64
	err := row.Scan(&a.ID, &a.PlanKey, &a.Kind, &a.Phase, &item, &a.State, &ctxJSON, &deadline, &first, &cause, &stop,
		&exit, &a.Result, &diag, &ref, &finding, &unrel, &pgid, &prepStarted, &ident, &alloc, &baseline, &base,
		&created, &started, &settled)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(ctxJSON), &a.Context); err != nil {
		return a, errors.New("store: attempt " + a.ID + " has an unreadable context")
	}
	a.Item = intPtr(item)
	a.ExitCode = intPtr(exit)
	a.PreparationPGID = intPtr(pgid)
	a.FirstReason, a.StaleCause, a.StopReason = words.Reason(first.String), cause.String, words.StopReason(stop.String)
	a.Diagnostic, a.DiagnosticRef, a.SafetyFinding, a.Unreleased = diag.String, ref.String, finding.String, unrel.String
	a.PreparationIdentity, a.AllocationID, a.MetadataBaseline, a.StorageBase = ident.String, alloc.String, baseline.String, base.String
	a.Deadline, a.CreatedAt = time.UnixMilli(deadline).UTC(), time.UnixMilli(created).UTC()
	a.PreparationStartedAt, a.StartedAt, a.SettledAt = msPtr(prepStarted), msPtr(started), msPtr(settled)
	return a, nil
}

func msPtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	i := int(v.Int64)
	return &i
}

func nullStr[T ~string](s T) any {
	if s == "" {
		return nil
	}
	return s
}

// specText binds a plan item's spec as SQL TEXT (a []byte would bind as a
// BLOB), and a nil spec as NULL.
func specText(spec []byte) any {
	if spec == nil {
		return nil
	}
	return string(spec)
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// Task reads one task.
func (t *Tx) Task(planKey string) (Task, error) {
	task, err := scanTask(t.queryRow(`SELECT `+taskCols+` FROM tasks WHERE plan_key = ?`, planKey))
	if errors.Is(err, sql.ErrNoRows) {
		return task, refuse(CodeNotFound, "no task %q", planKey)
	}
	return task, err
}

// Attempt reads one attempt.
func (t *Tx) Attempt(id string) (Attempt, error) {
	a, err := scanAttempt(t.queryRow(`SELECT `+attemptCols+` FROM attempts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, refuse(CodeNotFound, "no attempt %q", id)
	}
	return a, err
}

// attemptState is an attempt's task and state, refused as Attempt refuses
// an attempt that does not exist.
func (t *Tx) attemptState(id string) (planKey string, state words.State, err error) {
	err = t.queryRow(`SELECT plan_key, state FROM attempts WHERE id = ?`, id).Scan(&planKey, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", refuse(CodeNotFound, "no attempt %q", id)
	}
	return planKey, state, err
}

// Attempts lists a task's attempts, oldest first.
func (t *Tx) Attempts(planKey string) ([]Attempt, error) {
	return t.attemptsWhere(`plan_key = ?`, planKey)
}

// PresentContext reads the task's present context: plan revision and
// snapshot from plans, the rest from tasks, in one transaction.
func (t *Tx) PresentContext(planKey string) (Context, error) {
	var c Context
	err := t.queryRow(`SELECT p.snapshot_id, p.plan_id, p.revision, k.assignment_id, k.referenced_code_hash, k.context_generation
		FROM plans p JOIN tasks k ON k.plan_key = p.key WHERE p.key = ?`, planKey).
		Scan(&c.SnapshotID, &c.PlanID, &c.PlanRevision, &c.AssignmentID, &c.ReferencedCodeHash, &c.Generation)
	if errors.Is(err, sql.ErrNoRows) {
		return c, refuse(CodeNotFound, "no task %q", planKey)
	}
	return c, err
}

// TaskAndPresent reads the task and its present context in one statement:
// every transition's guard and the runner's launch and settlement checks
// read both, and as two statements the task's row was read twice.
func (t *Tx) TaskAndPresent(planKey string) (Task, Context, error) {
	var c Context
	task, err := scanTask(extraScan{t.queryRow(taskAndPresentQuery, planKey), []any{&c.SnapshotID, &c.PlanID, &c.PlanRevision}})
	if errors.Is(err, sql.ErrNoRows) {
		return task, c, refuse(CodeNotFound, "no task %q", planKey)
	}
	c.AssignmentID, c.ReferencedCodeHash, c.Generation = task.AssignmentID, task.ReferencedCodeHash, task.ContextGeneration
	return task, c, err
}

var taskAndPresentQuery = `SELECT k.` + strings.Join(strings.Fields(strings.ReplaceAll(taskCols, ",", " ")), ", k.") +
	`, p.snapshot_id, p.plan_id, p.revision FROM tasks k JOIN plans p ON p.key = k.plan_key WHERE k.plan_key = ?`

// extraScan scans a row's first columns as the wrapped scanner's caller
// asks and the rest into extra.
type extraScan struct {
	row   interface{ Scan(...any) error }
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }

// Read helpers on Store for callers outside a transaction.

// Task reads one task.
func (s *Store) Task(planKey string) (task Task, err error) {
	err = s.View(func(tx *Tx) error { task, err = tx.Task(planKey); return err })
	return
}

// Attempt reads one attempt.
func (s *Store) Attempt(id string) (a Attempt, err error) {
	err = s.View(func(tx *Tx) error { a, err = tx.Attempt(id); return err })
	return
}

// Attempts lists a task's attempts, oldest first.
func (s *Store) Attempts(planKey string) (as []Attempt, err error) {
	err = s.View(func(tx *Tx) error { as, err = tx.Attempts(planKey); return err })
	return
}

// PresentContext reads the task's present context.
func (s *Store) PresentContext(planKey string) (c Context, err error) {
	err = s.View(func(tx *Tx) error { c, err = tx.PresentContext(planKey); return err })
	return
}
