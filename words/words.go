// Package words holds the exact words the contract fixes: diagnostics written
// on rows, screen labels, unresolved-marker causes, task statuses, attempt
// kinds and D phases (shared/spec/messages.md). They live in one place so that
// the store, the runner, scenarios, the screen and logs say the same thing.
//
// It imports nothing but the standard library, and everything may import it.
package words

import "fmt"

// Diagnostics and reasons written on attempt rows.
const (
	StoppedByShutdown      = "Stopped by shutdown"
	TaskTimeLimitReached   = "Task time limit reached"
	TimedOutWhilePreparing = "Timed out while preparing"
	TimedOut               = "Timed out"
	Interrupted            = "Interrupted: codeboost stopped while this was running"
	StopMayHaveBeenAsked   = "a stop may have been requested"
	TaskLeftRunning        = "The task left the running state before the result was saved."
	PartialExportFailed    = "Partial output could not be exported: "
	PartialNoBaseline      = "Partial output could not be exported: its storage baseline was never saved"
	RemovedByRetention     = "(partial output removed by retention)"
	CancelledByUser        = "Cancelled by the user"
)

// CommitOverLimitPrefix begins the diagnostic of a writable attempt
// whose changes are over the commit limit (CommitOverLimit).
const CommitOverLimitPrefix = "The changes are over the commit limit: "

// CommitOverLimit is the diagnostic of a writable attempt whose added and
// changed files are over the commit limit (runner.agent.commitLimitBytes):
// nothing is committed, the attempt fails, and its partial output is saved.
func CommitOverLimit(changed, limit int64) string {
	return fmt.Sprintf("%s%d bytes to commit, the limit is %d bytes (runner.agent.commitLimitBytes)", CommitOverLimitPrefix, changed, limit)
}

// TimedOutAfter is the diagnostic for D's own timeout with no first reason.
func TimedOutAfter(minutes int) string { return fmt.Sprintf("Timed out after %d minutes", minutes) }

// PartialExportFailedBecause quotes the cause, as the contract asks.
func PartialExportFailedBecause(cause string) string {
	return PartialExportFailed + fmt.Sprintf("%q", cause)
}

// Labels on the screen.
const (
	LabelWaiting         = "Waiting to start"
	LabelRunning         = "Running"
	LabelStopping        = "Stopping"
	LabelStoppingUnsaved = "Stopping (not saved yet)"
	LabelDone            = "Done"
	LabelRunAgain        = "Run again on the current code"
	StoppingThenCancel   = "Stopping, then cancelling"
	NeedsRestartPrefix   = "Needs restart: "
)

// Unresolved marker causes (GET /api/runner unresolved.reason).
const (
	ResultNotSaved        = "result-not-saved"
	StartNotSaved         = "start-not-saved"
	PreparationNotRemoved = "preparation-not-removed"
	StorageNotRemoved     = "storage-not-removed"
)

// NeedsRestart is what the screen says of an unresolved marker, for any
// lane's: "Needs restart: result could not be saved" (and the other
// unresolved causes).
func NeedsRestart(reason string) string {
	text := reason
	switch reason {
	case ResultNotSaved:
		text = "result could not be saved"
	case StartNotSaved:
		text = "start could not be saved"
	case PreparationNotRemoved:
		text = "preparation files could not be removed"
	case StorageNotRemoved:
		text = "task storage could not be removed"
	}
	return NeedsRestartPrefix + text
}

// Process and server messages.
const (
	AnotherRunner       = "Another codeboost runner is using this database."
	StillStopping       = "Still stopping agents…"
	ServerShuttingDown  = "The review server is shutting down."
	ActionIDAlreadyUsed = "Action ID already used"
	ServerStopped       = "Server stopped"
	// QuestionLeftover is the answer of a question an earlier process
	// left unanswered: its agent ran in that process, nothing can settle
	// it now, and asking again can help.
	QuestionLeftover = "The server stopped before this question was answered. Ask again."
)

// Planning requests (the suggestion coordinator, package suggest, and the
// planning routes).
const (
	// PlanningNotAvailable answers a planning start without a provider:
	// "Without a github block, or in a demo, the server returns …".
	PlanningNotAvailable = "Planning agent not available yet"
	// PlanningServerStopped is the reason of a planning request the server
	// stopped before it finished (an earlier process's leftover, or one
	// shutdown aborted).
	PlanningServerStopped = "The server stopped before this request finished. Ask again."
	// UnknownSuggestionRequest answers a suggestion route given a draft's
	// ID (or an ID that is no request of the task).
	UnknownSuggestionRequest = "Unknown suggestion request."
	// UnknownDraftRequest is the same for a draft route ("each kind's
	// routes refuse the other's IDs"); the contract fixes only the
	// suggestion's words, these follow them.
	UnknownDraftRequest = "Unknown draft request."
)

// TaskStatus is a task's status (tasks.status). Attempt states, first
// reasons, task statuses and D's stop reasons are distinct types, so that
// "cancelled" the state cannot be passed where "cancelled" the reason or the
// status is meant.
type TaskStatus string

// Task statuses.
const (
	StatusQueued               TaskStatus = "queued"
	StatusRunning              TaskStatus = "running"
	StatusNeedsHuman           TaskStatus = "needs human"
	StatusNeedsAmendment       TaskStatus = "needs amendment"
	StatusNeedsApproval        TaskStatus = "needs approval"
	StatusPossiblyAlreadyFixed TaskStatus = "possibly already fixed"
	StatusInReview             TaskStatus = "in review"
	StatusMergeBlocked         TaskStatus = "approved but merge blocked"
	StatusMerged               TaskStatus = "merged"
	StatusCancelled            TaskStatus = "cancelled"
)

// TaskStatuses lists every status in the contract's order.
var TaskStatuses = []TaskStatus{
	StatusQueued, StatusRunning, StatusNeedsHuman, StatusNeedsAmendment,
	StatusNeedsApproval, StatusPossiblyAlreadyFixed, StatusInReview,
	StatusMergeBlocked, StatusMerged, StatusCancelled,
}

// Closed reports whether a task status never changes again.
func Closed(status TaskStatus) bool { return status == StatusMerged || status == StatusCancelled }

// HumanGated reports whether a status waits for a person.
func HumanGated(status TaskStatus) bool {
	switch status {
	case StatusNeedsHuman, StatusNeedsAmendment, StatusNeedsApproval, StatusPossiblyAlreadyFixed:
		return true
	}
	return false
}

// State is an attempt's state (attempts.state): pending → running →
// completed | failed | cancelled | stale.
type State string

// Attempt states.
const (
	Pending   State = "pending"
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
	Cancelled State = "cancelled"
	Stale     State = "stale"
)

// Terminal reports whether an attempt state is terminal.
func Terminal(state State) bool {
	switch state {
	case Completed, Failed, Cancelled, Stale:
		return true
	}
	return false
}

// Reason is a first reason F records (attempts.first_reason): the first stop
// wins and decides the terminal state. "" is none.
type Reason string

// First reasons.
const (
	ReasonCancelled Reason = "cancelled"
	ReasonShutdown  Reason = "shutdown"
	ReasonStale     Reason = "stale"
	ReasonTimeLimit Reason = "time-limit"
)

// StopReason is D's stop reason (Settlement.StopReason, attempts.stop_reason),
// defined here once for D, the Store and the runner. D keeps the first one it
// receives: a timeout already taken stays the stop reason after
// Cancel("shutdown").
type StopReason string

// D's stop reasons.
const (
	StopNone           StopReason = "" // the agent exited on its own
	StopCancelled      StopReason = "cancelled"
	StopShutdown       StopReason = "shutdown"
	StopTimeout        StopReason = "timeout"
	StopOutputLimit    StopReason = "output-limit"
	StopCaptureFailure StopReason = "capture-failure"
)

// ByD reports whether D ended the invocation for a reason of its own (its
// deadline, the output limit, a failed capture), not because F asked. D keeps
// the first reason it received, so such a reason beside first reason
// shutdown proves D stopped before the shutdown reached it. This is the one
// place that test is written.
func (r StopReason) ByD() bool {
	return r == StopTimeout || r == StopOutputLimit || r == StopCaptureFailure
}

// Attempt kinds.
const (
	KindPlanning  = "planning"
	KindQuestion  = "question"
	KindReview    = "review"
	KindCheck     = "check"
	KindExecute   = "execute"
	KindFix       = "fix"
	KindRebaseFix = "rebase-fix"
)

// Phases are D's invocation profiles.
const (
	PhasePlanning  = "planning"
	PhaseQuestions = "questions"
	PhaseReview    = "review"
	PhaseExecute   = "execute"
	PhaseFix       = "fix"
)

// PhaseOf maps an attempt kind to its D phase; ok is false for an unknown kind.
func PhaseOf(kind string) (phase string, ok bool) {
	switch kind {
	case KindPlanning:
		return PhasePlanning, true
	case KindQuestion:
		return PhaseQuestions, true
	case KindReview, KindCheck:
		return PhaseReview, true
	case KindExecute:
		return PhaseExecute, true
	case KindFix, KindRebaseFix:
		return PhaseFix, true
	}
	return "", false
}

// Writable reports whether an attempt of this kind can change the task folder.
func Writable(kind string) bool {
	p, _ := PhaseOf(kind)
	return WritablePhase(p)
}

// WritablePhase reports whether D's invocation in this phase may change the
// task folder; every other phase (planning, questions, review) reads it
// only, and D mounts it read-only.
func WritablePhase(phase string) bool { return phase == PhaseExecute || phase == PhaseFix }

// Feedback event kinds.
const (
	EventReject             = "reject"
	EventChangeRequest      = "change-request"
	EventSegmentAccept      = "segment-accept"
	EventSegmentAssign      = "segment-assign"
	EventFindingAccept      = "finding-accept"
	EventNeedsHumanGuidance = "needs-human-guidance"
	EventTaskClosed         = "task-closed"
)
