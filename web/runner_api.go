package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// Body limits. A runner action carries IDs and numbers only.
const maxRunnerBody = 16 << 10

// TaskStatus is GET /api/runner's answer for one task: the task and attempt
// rows plus available, stateVersion, reviewVersion, retryable, startable,
// resumable, unresolved and stopRequested, all computed by the server from
// the runner's published status snapshot, so the screen never works them
// out. Labels are the contract's screen labels.
type TaskStatus struct {
	Name          string       `json:"name"`
	Repository    string       `json:"repository"`
	Task          TaskRow      `json:"task"`
	Attempts      []AttemptRow `json:"attempts"`
	Available     bool         `json:"available"`
	StateVersion  int64        `json:"stateVersion"`
	ReviewVersion int          `json:"reviewVersion"`
	Retryable     bool         `json:"retryable"`
	RunAgain      bool         `json:"runAgain"`
	Startable     bool         `json:"startable"`
	Resumable     bool         `json:"resumable"`
	Cancellable   bool         `json:"cancellable"`
	// The task's other offers, each the Store's own check of the action at
	// the present versions (runner.Status): Cancel task, Merge, Approve
	// continuation (with why not, beside a checkpoint) and "Send back with
	// guidance". The screen shows a button only when its offer is true.
	TaskCancellable        bool           `json:"taskCancellable"`
	Mergeable              bool           `json:"mergeable"`
	ContinuationApprovable bool           `json:"continuationApprovable"`
	ContinuationRefusal    string         `json:"continuationRefusal"`
	Guidance               bool           `json:"guidance"`
	Unresolved             *Unresolved    `json:"unresolved"`
	StopRequested          *StopRequested `json:"stopRequested"`
	Label                  string         `json:"label"`
	Usage                  *Usage         `json:"usage"` // the task's total over its attempts, when any reported
	// CompletedItems and NextItem are the plan run's progress at the
	// present revision: the items that count as completed (an approved
	// continuation's prefix among them) and the item a resume would
	// admit (null when none is left).
	CompletedItems []int `json:"completedItems"`
	NextItem       *int  `json:"nextItem"`
	// Checkpoint is the task's newest scope checkpoint (#88), or null.
	Checkpoint *Checkpoint `json:"checkpoint"`
}

// Checkpoint is a scope checkpoint as the screen sees it: which runner
// commit recorded the scope finding, at which revision and item, the
// paths outside the item's scope, and the continuation's approval state:
// "none" (not approved yet), "approved" (it admits at the present
// revision and snapshot) or "stale" (given at another revision or
// snapshot, or before a later choice: it admits nothing).
type Checkpoint struct {
	AttemptID        string   `json:"attemptId"`
	Commit           string   `json:"commit"`
	Revision         int      `json:"revision"`
	Item             int      `json:"item"`
	ScopePaths       []string `json:"scopePaths"`
	Approval         string   `json:"approval"`
	ApprovedRevision *int     `json:"approvedRevision"`
}

// TaskRow is the task's row as the screen sees it.
type TaskRow struct {
	Status           string `json:"status"`
	CurrentAttemptID string `json:"currentAttemptId"`
	// ContextGeneration moves with the plan's revision and snapshot: the
	// screen reloads the plan when it passes the one its plan was read at.
	ContextGeneration int64      `json:"contextGeneration"`
	RequeuePending    bool       `json:"requeuePending"`
	CancelRequested   bool       `json:"cancelRequested"`
	BudgetDeadline    *time.Time `json:"budgetDeadline"`
	// OwedFinding is a safety finding owed at the task's human gate (its
	// save with its attempt failed; start or resume saved it), "" for none.
	OwedFinding string `json:"owedFinding"`
}

// AttemptRow is one attempt as the screen sees it.
type AttemptRow struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Item        *int   `json:"item"`
	State       string `json:"state"`
	Label       string `json:"label"`
	Current     bool   `json:"current"`
	FirstReason string `json:"firstReason"`
	StaleCause  string `json:"staleCause"`
	StopReason  string `json:"stopReason"`
	Diagnostic  string `json:"diagnostic"`
	// SafetyFinding is the runner's audit finding: what the agent did
	// that sent the task to needs human ("" for none).
	SafetyFinding string     `json:"safetyFinding"`
	ExitCode      *int       `json:"exitCode"`
	CreatedAt     time.Time  `json:"createdAt"`
	StartedAt     *time.Time `json:"startedAt"`
	SettledAt     *time.Time `json:"settledAt"`
	ElapsedMS     *int64     `json:"elapsedMs"` // settled minus started, once both exist
	Usage         *Usage     `json:"usage"`
	HasDiff       bool       `json:"hasDiff"` // partial output was saved: GET /api/diff shows it
	Live          bool       `json:"live"`    // live output can be followed
}

// Usage is what an agent's result reported about its cost.
type Usage struct {
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	CostUSD      float64 `json:"costUsd"`
}

// StopRequested is stopRequested: the in-memory first reason and whether
// its write was saved ("Stopping (not saved yet)" comes only from here).
type StopRequested struct {
	AttemptID string `json:"attemptId"`
	Reason    string `json:"reason"`
	Saved     bool   `json:"saved"`
}

// Unresolved is unresolved: "Needs restart" comes only from here.
type Unresolved struct {
	AttemptID string `json:"attemptId"`
	Reason    string `json:"reason"`
}

// RunnerReply is GET /api/runner's answer: every configured task, in
// configuration order.
type RunnerReply struct {
	Tasks        []TaskStatus `json:"tasks"`
	ShuttingDown bool         `json:"shuttingDown"`
	Demo         bool         `json:"demo"`
}

// status reads one configured task.
func (s *Server) status(t Task) (TaskStatus, error) {
	st, err := s.opt.Runner.Status(t.Identity.Key())
	if err != nil {
		return TaskStatus{}, err
	}
	v := TaskStatus{
		Name: t.Name, Repository: t.Repository,
		Task: TaskRow{Status: string(st.Task.Status), CurrentAttemptID: st.Task.CurrentAttemptID, ContextGeneration: st.Task.ContextGeneration,
			RequeuePending: st.Task.RequeuePending, CancelRequested: st.Task.CancelRequested != "",
			BudgetDeadline: st.Task.BudgetDeadline, OwedFinding: st.Task.OwedFinding},
		Attempts:  make([]AttemptRow, 0, len(st.Attempts)),
		Available: st.Available, StateVersion: st.Task.StateVersion, ReviewVersion: st.ReviewVersion,
		Retryable: st.Retryable, RunAgain: st.RunAgain, Startable: st.Startable, Resumable: st.Resumable,
		Cancellable: st.Cancellable, Label: st.Label,
		TaskCancellable: st.TaskCancellable, Mergeable: st.Mergeable, Guidance: st.Guidance,
		ContinuationApprovable: st.ContinuationApprovable, ContinuationRefusal: st.ContinuationRefusal,
	}
	if st.StopRequested != nil {
		v.StopRequested = &StopRequested{AttemptID: st.StopRequested.AttemptID, Reason: string(st.StopRequested.Reason), Saved: st.StopRequested.Saved}
	}
	if st.Unresolved != nil {
		v.Unresolved = &Unresolved{AttemptID: st.Unresolved.AttemptID, Reason: st.Unresolved.Reason}
	}
	var total Usage
	var reported bool
	for _, a := range st.Attempts {
		row := attemptRow(a, st)
		if row.Usage != nil {
			reported = true
			total.InputTokens += row.Usage.InputTokens
			total.OutputTokens += row.Usage.OutputTokens
			total.CostUSD += row.Usage.CostUSD
		}
		row.Live = s.opt.Output != nil && a.State == "running"
		v.Attempts = append(v.Attempts, row)
	}
	if reported {
		v.Usage = &total
	}
	v.CompletedItems = st.Progress.CompletedItems
	if st.Progress.NextItem != 0 {
		next := st.Progress.NextItem
		v.NextItem = &next
	}
	if cp := st.Progress.Checkpoint; cp != nil {
		v.Checkpoint = &Checkpoint{AttemptID: cp.AttemptID, Commit: cp.Commit, Revision: cp.Revision, Item: cp.Item,
			ScopePaths: cp.ScopePaths, Approval: "none"}
		if ap := cp.Approval; ap != nil {
			v.Checkpoint.Approval, v.Checkpoint.ApprovedRevision = "stale", &ap.Revision
			if ap.Current {
				v.Checkpoint.Approval = "approved"
			}
		}
	}
	return v, nil
}

func attemptRow(a store.Attempt, st runner.Status) AttemptRow {
	row := AttemptRow{
		ID: a.ID, Kind: a.Kind, Item: a.Item, State: string(a.State), Label: st.Labels[a.ID],
		Current: a.ID == st.Task.CurrentAttemptID, FirstReason: string(a.FirstReason), StaleCause: a.StaleCause,
		StopReason: string(a.StopReason), Diagnostic: a.Diagnostic, SafetyFinding: a.SafetyFinding, ExitCode: a.ExitCode,
		CreatedAt: a.CreatedAt, StartedAt: a.StartedAt, SettledAt: a.SettledAt, HasDiff: a.DiagnosticRef != "",
	}
	if u, ok := dadapter.ParseUsage(a.Result); ok {
		row.Usage = &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
	}
	if a.StartedAt != nil && a.SettledAt != nil {
		ms := a.SettledAt.Sub(*a.StartedAt).Milliseconds()
		row.ElapsedMS = &ms
	}
	return row
}

// getRunner is GET /api/runner: every configured task, or ?task=NAME's
// alone. It reads; it never writes and never rebuilds history.
func (s *Server) getRunner(w http.ResponseWriter, r *http.Request) {
	reply := RunnerReply{Tasks: []TaskStatus{}, ShuttingDown: s.Stopping(), Demo: s.opt.Demo}
	names := s.names
	if name := r.URL.Query().Get("task"); name != "" {
		if _, ok := s.tasks[name]; !ok {
			writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(name))
			return
		}
		names = []string{name}
	}
	for _, name := range names {
		st, err := s.status(s.tasks[name])
		if err != nil {
			s.storageError(w, "GET /api/runner", err)
			return
		}
		reply.Tasks = append(reply.Tasks, st)
	}
	writeJSON(w, http.StatusOK, reply)
}

// RunnerAction is POST /api/runner's body.
type RunnerAction struct {
	Task                  string `json:"task"`
	Action                string `json:"action"` // start, resume, cancel, retry, run-again, cancel-task
	AttemptID             string `json:"attemptId,omitempty"`
	ExpectedStateVersion  int64  `json:"expectedStateVersion"`
	ExpectedReviewVersion int    `json:"expectedReviewVersion,omitempty"`
	ActionID              string `json:"actionId"`
}

// ActionReply is every writing action's answer: the outcome (the saved one
// on a replay), and the task's current state, so that the screen shows it
// at once and keeps any draft.
type ActionReply struct {
	Outcome   string      `json:"outcome"`
	Code      string      `json:"code,omitempty"`
	Message   string      `json:"message,omitempty"`
	AttemptID string      `json:"attemptId,omitempty"`
	Replayed  bool        `json:"replayed"`
	Status    *TaskStatus `json:"status,omitempty"`
}

type runnerActionFunc func(*runner.Coordinator, context.Context, runner.ActionRequest) (store.Response, error)

var runnerActions = map[string]runnerActionFunc{
	"start":       (*runner.Coordinator).Start,
	"resume":      (*runner.Coordinator).Resume,
	"cancel":      (*runner.Coordinator).CancelAttempt,
	"retry":       (*runner.Coordinator).Retry,
	"run-again":   (*runner.Coordinator).RunAgain,
	"cancel-task": (*runner.Coordinator).CancelTask,
}

// postRunner is POST /api/runner: start, resume, cancel attempt, retry,
// run again and cancel task, each one user action.
func (s *Server) postRunner(w http.ResponseWriter, r *http.Request) {
	var a RunnerAction
	if !decode(w, r, maxRunnerBody, &a) {
		return
	}
	t, ok := s.actionTarget(w, a.Task, a.ActionID)
	if !ok {
		return
	}
	fn, ok := runnerActions[a.Action]
	if !ok {
		writeError(w, http.StatusBadRequest, codeBadInput, "unknown runner action "+quote(a.Action)+": use start, resume, cancel, retry, run-again or cancel-task")
		return
	}
	needsAttempt := a.Action == "cancel" || a.Action == "retry" || a.Action == "run-again"
	if needsAttempt != (a.AttemptID != "") {
		if needsAttempt {
			writeError(w, http.StatusBadRequest, codeBadInput, a.Action+" needs an attemptId")
		} else {
			writeError(w, http.StatusBadRequest, codeBadInput, a.Action+" takes no attemptId")
		}
		return
	}
	if a.AttemptID != "" && !ids.ValidUUID(a.AttemptID) {
		writeError(w, http.StatusBadRequest, codeBadInput, "attemptId is not an attempt ID")
		return
	}
	resp, err := fn(s.opt.Runner, r.Context(), runner.ActionRequest{
		PlanKey: t.Identity.Key(), AttemptID: a.AttemptID, ExpectedStateVersion: a.ExpectedStateVersion,
		ExpectedReviewVersion: a.ExpectedReviewVersion, ActionID: a.ActionID,
	})
	s.reply(w, r, t, "runner/"+a.Action, resp, err)
}

// actionTarget checks what every writing action carries before any
// transaction: a configured task's name, and an action ID that is a
// lowercase UUID v4 (else 400, and nothing is stored).
func (s *Server) actionTarget(w http.ResponseWriter, name, actionID string) (Task, bool) {
	if !ids.ValidUUID(actionID) {
		writeError(w, http.StatusBadRequest, codeBadInput, "actionId must be a lowercase UUID v4")
		return Task{}, false
	}
	t, ok := s.tasks[name]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(name))
		return Task{}, false
	}
	return t, true
}

// reply maps a user action's outcome to HTTP (see actionStatus) and adds
// the task's present status.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, t Task, kind string, resp store.Response, err error) {
	out := ActionReply{Outcome: resp.Outcome, Code: resp.Code, Message: resp.Message, AttemptID: resp.AttemptID, Replayed: resp.Replayed}
	status, ok := s.actionStatus(w, r, kind, err, resp, &out.Outcome, &out.Code, &out.Message)
	if !ok {
		return
	}
	if st, serr := s.status(t); serr == nil {
		out.Status = &st
	}
	s.metrics.outcome(out.Outcome)
	writeJSON(w, status, out)
}

// actionStatus is the HTTP mapping every user action shares. A refusal
// (recorded, or a saved one replayed) is 409, with outcome, code and
// message set from it; a planning start's GitHub failure is 502 ("a GitHub
// failure is a 502 and is recorded for replay like a refusal").
// ShuttingDown, from a coordinator's barrier or the Store's closed write
// gate, is 503 and was not recorded, so the screen may resend; a bad-input
// refusal that was not recorded is 400; any other error is a storage
// error, 500, not recorded either. Those three are written here, and ok
// is false: the caller writes nothing more.
func (s *Server) actionStatus(w http.ResponseWriter, r *http.Request, kind string, err error, resp store.Response,
	outcome, code, message *string) (status int, ok bool) {
	if err == nil {
		return http.StatusOK, true
	}
	switch ref, isRefusal := store.IsRefusal(err); {
	case isShuttingDown(err) || r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, codeShuttingDown, words.ServerShuttingDown)
		return 0, false
	case isRefusal && ref.Code == store.CodeBadInput && !resp.Replayed && resp.Outcome == "":
		writeError(w, http.StatusBadRequest, codeBadInput, ref.Message)
		return 0, false
	case isRefusal:
		*outcome, *code, *message = "refused", ref.Code, ref.Message
		if ref.Code == suggest.CodeGitHubFailed {
			return http.StatusBadGateway, true
		}
		return http.StatusConflict, true
	default:
		s.storageError(w, kind, err)
		return 0, false
	}
}

func isShuttingDown(err error) bool {
	return errors.Is(err, runner.ErrShuttingDown) || errors.Is(err, store.ErrShuttingDown) || errors.Is(err, runner.ErrStopped)
}

func (s *Server) storageError(w http.ResponseWriter, what string, err error) {
	if isShuttingDown(err) || errors.Is(err, context.Canceled) {
		// A request whose context shutdown step 3 aborted, or whose write
		// met the closed write gate: nothing was recorded.
		writeError(w, http.StatusServiceUnavailable, codeShuttingDown, words.ServerShuttingDown)
		return
	}
	s.log.Error(what+": storage error", "err", err)
	writeError(w, http.StatusInternalServerError, codeStorage, "storage error: nothing was recorded; send the same action again")
}
