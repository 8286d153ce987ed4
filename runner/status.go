package runner

import (
	"errors"
	"slices"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// StopRequested is GET /api/runner's stopRequested: null, or the in-memory
// first reason and whether its write was saved.
type StopRequested struct {
	AttemptID string
	Reason    words.Reason
	Saved     bool
}

// Unresolved is GET /api/runner's unresolved marker.
type Unresolved struct {
	AttemptID string
	Reason    string // result-not-saved, start-not-saved, preparation-not-removed, storage-not-removed
}

// Status is the runner's status read for one task: the durable rows plus the
// in-memory facts, and retryable computed here so the UI never works it out.
type Status struct {
	Task          store.Task
	Attempts      []store.Attempt
	Available     bool // the runner is open and has a free slot
	Retryable     bool
	RunAgain      bool // "Run again on the current code" is offered
	StopRequested *StopRequested
	Unresolved    *Unresolved
	Label         string // the current attempt's screen label, or ""
	// Labels is every attempt's screen label, by attempt ID: the current
	// one's is Label; an older one's comes from its row alone.
	Labels map[string]string
	// ReviewVersion is the plan's review version, read with the rows: start
	// and resume send it back as expectedReviewVersion.
	ReviewVersion int
	PlanRun       bool // a plan run is in progress (start and resume are refused)
	// Startable and Resumable are GET /api/runner's startable and
	// resumable: the Store's own checks of start and resume at the present
	// versions, and the runner's (open, not shutting down or needing a
	// restart, a free slot, execute attempts allowed, no job, marker or run
	// for the task), withheld while the task budget has run out.
	Startable bool
	Resumable bool
	// Cancellable: the current attempt is pending or running with no stop
	// requested (saved or not) and no unresolved marker, so a cancel would
	// stop it.
	Cancellable bool
	// TaskCancellable offers Cancel task: the runner is open and the
	// Store's CheckCancelTask admits it. Mergeable, ContinuationApprovable
	// and Guidance offer Merge, Approve continuation and "Send back with
	// guidance": the Store's CheckMerge, CheckApproveContinuation and
	// CheckGuidance at the present versions (a review action is not
	// admission: it is taken while the server drains, so these do not
	// follow the runner's admission). ContinuationRefusal is why a
	// checkpoint's continuation is not approvable now, in the Store's
	// words ("" when it is, or when the task has no checkpoint).
	TaskCancellable        bool
	Mergeable              bool
	ContinuationApprovable bool
	ContinuationRefusal    string
	Guidance               bool
	// Progress is the plan run's progress and newest scope checkpoint,
	// read from rows (store.Progress): GET /api/runner shows it without
	// rebuilding Git history.
	Progress store.Progress
}

// Status reads a task. It never waits behind a long event and never
// mutates: it combines a Store read with the snapshot published after the
// last event.
func (c *Coordinator) Status(planKey string) (Status, error) {
	snap := c.snap.Load()
	var st Status
	rows, err := c.statusRows(planKey)
	st.Task, st.Attempts, st.ReviewVersion, st.Progress = rows.task, rows.attempts, rows.reviewVersion, rows.progress
	startErr, resumeErr := rows.startErr, rows.resumeErr
	if err != nil {
		return st, err
	}
	facts, held := snap.tasks[planKey]
	st.PlanRun = snap.runs[planKey]
	st.Available = snap.open && !snap.unreleased && snap.slotsUsed < c.cfg.Slots
	budgetOut := st.Task.BudgetDeadline != nil && !c.deps.Clock.Now().Before(*st.Task.BudgetDeadline)
	runnable := st.Available && !held && !st.PlanRun && !budgetOut && slices.Contains(c.cfg.Kinds, words.KindExecute)
	st.Startable = runnable && startErr == nil
	st.Resumable = runnable && resumeErr == nil
	st.offer(rows, snap.open)
	if held && facts.stopReason != "" && facts.unresolved == "" {
		st.StopRequested = &StopRequested{AttemptID: facts.attemptID, Reason: facts.stopReason, Saved: facts.stopSaved}
	}
	if held && facts.unresolved != "" {
		st.Unresolved = &Unresolved{AttemptID: facts.markerAttempt, Reason: facts.unresolved}
	}
	var last *store.Attempt
	st.Labels = make(map[string]string, len(st.Attempts))
	for i := range st.Attempts {
		if st.Attempts[i].ID == st.Task.CurrentAttemptID {
			last = &st.Attempts[i]
		}
		st.Labels[st.Attempts[i].ID] = label(st.Attempts[i], nil, nil)
	}
	if last == nil {
		return st, nil
	}
	st.Label = label(*last, st.StopRequested, st.Unresolved)
	st.Labels[last.ID] = st.Label
	st.Cancellable = (last.State == words.Pending || last.State == words.Running) && st.Unresolved == nil &&
		st.StopRequested == nil && last.FirstReason == ""
	if held || !snap.open || snap.unreleased {
		return st, nil
	}
	// The offers are the Store's own checks of the actions, run in this
	// read at the present state version: one rule admits or refuses the
	// action and decides whether it is offered.
	st.RunAgain, st.Retryable = rows.runAgainErr == nil, rows.retryErr == nil
	return st, nil
}

// offer sets the offers that are the Store's checks of the task's actions
// alone (Cancel task also needs the runner open: the runner takes it).
func (st *Status) offer(rows statusRows, open bool) {
	st.TaskCancellable, st.Mergeable, st.Guidance = open && rows.cancelTaskErr == nil, rows.mergeErr == nil, rows.guidanceErr == nil
	st.ContinuationApprovable = rows.continuationErr == nil
	if r, ok := errors.AsType[*store.Refusal](rows.continuationErr); ok && st.Progress.Checkpoint != nil {
		st.ContinuationRefusal = r.Message
	}
}

func label(a store.Attempt, stop *StopRequested, un *Unresolved) string {
	if un != nil {
		return words.NeedsRestart(un.Reason)
	}
	switch a.State {
	case words.Pending, words.Running:
		if stop != nil && !stop.Saved {
			return words.LabelStoppingUnsaved
		}
		if a.FirstReason != "" || stop != nil {
			return words.LabelStopping
		}
		if a.State == words.Pending {
			return words.LabelWaiting
		}
		return words.LabelRunning
	case words.Completed:
		return words.LabelDone
	case words.Failed:
		return "Failed: " + a.Diagnostic
	case words.Cancelled:
		return "Cancelled: " + a.Diagnostic
	case words.Stale:
		return "Out of date: " + a.StaleCause
	}
	return ""
}

// statusRows is the Store's part of a status read: the rows and the
// Store's own start and resume checks, as one read transaction saw them.
type statusRows struct {
	token         store.ChangeToken
	task          store.Task
	attempts      []store.Attempt // shared between readers: never modified
	reviewVersion int
	startErr      error
	resumeErr     error
	retryErr      error // CheckRetry of the current attempt: nil offers Retry
	runAgainErr   error // CheckRunAgain of the current attempt: nil offers "Run again on the current code"
	// The Store's checks of the task's other actions, at the present
	// versions: nil offers the action.
	cancelTaskErr, mergeErr, continuationErr, guidanceErr error
	progress                                              store.Progress
}

// errNoAttempt stands for both checks of a task with no attempt yet.
var errNoAttempt = errors.New("the task has no attempt")

// changeTokens is the optional side of Store that says when the database
// may have changed (store.Store has it).
type changeTokens interface {
	ChangeToken() (store.ChangeToken, error)
}

// statusRows reads the Store's part of a task's status, or reuses the last
// read of it while the Store's change token is unchanged: a screen polls
// several times a second, and these rows change only with a commit. The
// in-memory part (the snapshot) and the clock are read fresh on every call.
func (c *Coordinator) statusRows(planKey string) (statusRows, error) {
	var rows statusRows
	tokens, cached := c.deps.Store.(changeTokens)
	if cached {
		token, err := tokens.ChangeToken()
		if err != nil {
			return rows, err
		}
		c.statusMu.Lock()
		r, ok := c.statusCache[planKey]
		c.statusMu.Unlock()
		if ok && r.token == token {
			return r, nil
		}
		rows.token = token
	}
	err := c.deps.Store.View(func(tx *store.Tx) (err error) {
		if rows.task, err = tx.Task(planKey); err != nil {
			return err
		}
		rows.startErr, rows.resumeErr = tx.CanStart(planKey), tx.CanResume(planKey)
		if rows.attempts, err = tx.Attempts(planKey); err != nil {
			return err
		}
		plan, err := tx.Plan(planKey)
		if err != nil {
			return err
		}
		rows.reviewVersion = plan.ReviewVersion
		rows.retryErr, rows.runAgainErr = errNoAttempt, errNoAttempt
		if id := rows.task.CurrentAttemptID; id != "" {
			_, rows.retryErr = tx.CheckRetry(planKey, id, rows.task.StateVersion)
			_, rows.runAgainErr = tx.CheckRunAgain(planKey, id, rows.task.StateVersion)
		}
		rows.cancelTaskErr, rows.mergeErr = tx.CheckCancelTask(planKey), tx.CheckMerge(planKey)
		rows.continuationErr, rows.guidanceErr = tx.CheckApproveContinuation(planKey), tx.CheckGuidance(planKey)
		rows.progress, err = tx.Progress(planKey)
		return err
	})
	if err != nil {
		return rows, err
	}
	if cached {
		c.statusMu.Lock()
		if c.statusCache == nil {
			c.statusCache = map[string]statusRows{}
		}
		c.statusCache[planKey] = rows
		c.statusMu.Unlock()
	}
	return rows, nil
}
