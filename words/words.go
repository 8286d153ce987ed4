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

// Process and server messages.
const (
	AnotherRunner       = "Another codeboost runner is using this database."
	StillStopping       = "Still stopping agents…"
	ServerShuttingDown  = "The review server is shutting down."
	ActionIDAlreadyUsed = "Action ID already used"
	ServerStopped       = "Server stopped"
)

// Task statuses (tasks.status).
const (
	StatusQueued               = "queued"
	StatusRunning              = "running"
	StatusNeedsHuman           = "needs human"
	StatusNeedsAmendment       = "needs amendment"
	StatusNeedsApproval        = "needs approval"
	StatusPossiblyAlreadyFixed = "possibly already fixed"
	StatusInReview             = "in review"
	StatusMergeBlocked         = "approved but merge blocked"
	StatusMerged               = "merged"
	StatusCancelled            = "cancelled"
)

// TaskStatuses lists every status in the contract's order.
var TaskStatuses = []string{
	StatusQueued, StatusRunning, StatusNeedsHuman, StatusNeedsAmendment,
	StatusNeedsApproval, StatusPossiblyAlreadyFixed, StatusInReview,
	StatusMergeBlocked, StatusMerged, StatusCancelled,
}

// Closed reports whether a task status never changes again.
func Closed(status string) bool { return status == StatusMerged || status == StatusCancelled }

// HumanGated reports whether a status waits for a person.
func HumanGated(status string) bool {
	switch status {
	case StatusNeedsHuman, StatusNeedsAmendment, StatusNeedsApproval, StatusPossiblyAlreadyFixed:
		return true
	}
	return false
}

// Attempt states.
const (
	Pending   = "pending"
	Running   = "running"
	Completed = "completed"
	Failed    = "failed"
	Cancelled = "cancelled"
	Stale     = "stale"
)

// Terminal reports whether an attempt state is terminal.
func Terminal(state string) bool {
	switch state {
	case Completed, Failed, Cancelled, Stale:
		return true
	}
	return false
}

// First reasons F records (the contract's "first reason").
const (
	ReasonCancelled = "cancelled"
	ReasonShutdown  = "shutdown"
	ReasonStale     = "stale"
	ReasonTimeLimit = "time-limit"
)

// D's stop reasons.
const (
	StopCancelled      = "cancelled"
	StopShutdown       = "shutdown"
	StopTimeout        = "timeout"
	StopOutputLimit    = "output-limit"
	StopCaptureFailure = "capture-failure"
)

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
	return p == PhaseExecute || p == PhaseFix
}

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
