package store

import (
	"errors"
	"fmt"
)

// Refusal is a guard's answer: the write was not made because a rule of the
// contract forbids it. It is a definite outcome, recorded for user actions.
type Refusal struct {
	Code    string // stable machine word, e.g. "stale-version"
	Message string // bounded, for people
}

func (r *Refusal) Error() string { return r.Message }

// Refusal codes.
const (
	CodeStaleVersion      = "stale-version"
	CodeNotCurrent        = "context-not-current"
	CodeTaskInactive      = "task-not-active"
	CodeActiveAttempt     = "active-attempt"
	CodeIllegal           = "illegal-transition"
	CodeFirstReasonSet    = "first-reason-set"
	CodeNotCurrentAttempt = "not-current-attempt"
	CodeBudgetSpent       = "budget-spent"
	CodeRequeuePending    = "requeue-pending"
	CodeNotRetryable      = "not-retryable"
	CodeActionIDUsed      = "action-id-used"
	CodeBadInput          = "bad-input"
	CodeNotFound          = "not-found"
	CodeTaskClosed        = "task-closed"
	CodeCancelPending     = "cancel-pending"
	CodeMergeActive       = "merge-active"
	CodeTaskNotRunning    = "task-not-running"
	CodeKindNotAllowed    = "kind-not-allowed"
	CodeNotApproved       = "not-approved"
	CodeStaleReview       = "stale-review-version"
	CodeRunFinishing      = "run-finishing"
	CodeHeadMoved         = "head-moved"
	CodeUnreconciled      = "unreconciled-commits"
	CodeNotOpen           = "runner-not-open"
	// CodeResumeInstead refuses retry and "run again" of a writable
	// attempt: a plan item runs only through the plan run (resume).
	CodeResumeInstead = "resume-instead"
)

func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// IsRefusal reports whether err is a guard's refusal, and returns it.
func IsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// RefusalCode returns err's refusal code, or "" when err is not a refusal.
func RefusalCode(err error) string {
	if r, ok := IsRefusal(err); ok {
		return r.Code
	}
	return ""
}
