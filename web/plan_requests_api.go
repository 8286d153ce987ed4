package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// The Planning API (the contract's "Planning API for lane G"): suggestion
// and draft requests, each started, read, cancelled and applied. Every
// POST is a user action: its user_actions row commits in the same
// transaction as the Store call it wraps, a replay returns the saved
// response, and a cancel's or an apply's recorded request includes the
// request's ID. A refusal is 409 and recorded; a start without a planning
// provider is the recorded refusal "Planning agent not available yet"
// (code planning-unavailable); shutdown is 503 and not recorded; bad input
// (an action ID, or a path ID, that is not a lowercase UUID v4) is 400
// before any transaction.

// Planning is what the server needs of the suggestion coordinator
// (suggest.Coordinator): admission and the user's cancel, each as one
// user action. Apply is the Store's, through the runner's review action.
type Planning interface {
	StartAction(ctx context.Context, actionID string, req suggest.StartRequest) (store.Response, error)
	CancelAction(ctx context.Context, planKey, actionID, mode, requestID string) (store.Response, error)
}

// maxPlanRequestBody bounds every planning POST: a task name, an action ID
// and a revision or snapshot.
const maxPlanRequestBody = 4 << 10

// PlanStart is POST /api/plan/suggestions's (and /api/plan/drafts's)
// body: the plan the caller saw.
type PlanStart struct {
	Task             string `json:"task"`
	ActionID         string `json:"actionId"`
	ExpectedRevision int    `json:"expectedRevision"`
	ExpectedSnapshot string `json:"expectedSnapshot"`
}

// PlanRequestAction is the body of a cancel (ExpectedRevision unused) and
// of an apply (ExpectedRevision: the revision the request is bound to).
type PlanRequestAction struct {
	Task             string `json:"task"`
	ActionID         string `json:"actionId"`
	ExpectedRevision int    `json:"expectedRevision,omitempty"`
}

// PlanRequestRow is one planning request as the screen shows it.
type PlanRequestRow struct {
	ID         string          `json:"id"`
	Mode       string          `json:"mode"`
	Revision   int             `json:"revision"`
	SnapshotID string          `json:"snapshotId"`
	State      string          `json:"state"`
	Reason     string          `json:"reason,omitempty"`
	Cause      string          `json:"cause,omitempty"`
	Reply      json.RawMessage `json:"reply,omitempty"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

// PlanActionReply is a planning POST's answer: the action's outcome (as
// ActionReply's), the request it started or acted on, and the plan's
// present revision and snapshot.
type PlanActionReply struct {
	Outcome    string          `json:"outcome"`
	Code       string          `json:"code,omitempty"`
	Message    string          `json:"message,omitempty"`
	RequestID  string          `json:"requestId,omitempty"`
	Replayed   bool            `json:"replayed"`
	Revision   int             `json:"revision"`
	SnapshotID string          `json:"snapshotId"`
	Request    *PlanRequestRow `json:"request,omitempty"`
}

// PlanRequestsReply is GET /api/plan/requests?task=NAME: the plan's
// present revision and snapshot and its requests of both modes, oldest
// first.
type PlanRequestsReply struct {
	Revision   int              `json:"revision"`
	SnapshotID string           `json:"snapshotId"`
	Requests   []PlanRequestRow `json:"requests"`
}

func planRequestRow(r store.PlanRequest) PlanRequestRow {
	return PlanRequestRow{ID: r.ID, Mode: r.Mode, Revision: r.Revision, SnapshotID: r.SnapshotID, State: r.State,
		Reason: r.Reason, Cause: r.Cause, Reply: r.Reply, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// planningRoutes registers the Planning API; routes only exists when
// Options.Planning is set.
func (s *Server) planningRoutes(mux *http.ServeMux) {
	for _, m := range []struct{ mode, path string }{{store.ModeSuggestion, "suggestions"}, {store.ModeDraft, "drafts"}} {
		mux.HandleFunc("POST /api/plan/"+m.path, s.postPlanStart(m.mode))
		mux.HandleFunc("GET /api/plan/"+m.path+"/{id}", s.getPlanRequest(m.mode))
		mux.HandleFunc("POST /api/plan/"+m.path+"/{id}/cancel", s.postPlanCancel(m.mode))
		mux.HandleFunc("POST /api/plan/"+m.path+"/{id}/apply", s.postPlanApply(m.mode))
	}
	mux.HandleFunc("GET /api/plan/requests", s.getPlanRequests)
}

// postPlanStart is POST /api/plan/suggestions (and drafts): the
// coordinator's start as one user action, guarded by the expected
// revision and snapshot.
func (s *Server) postPlanStart(mode string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var a PlanStart
		if !decode(w, r, maxPlanRequestBody, &a) {
			return
		}
		t, ok := s.actionTarget(w, a.Task, a.ActionID)
		if !ok {
			return
		}
		if a.ExpectedRevision < 1 || a.ExpectedSnapshot == "" {
			writeError(w, http.StatusBadRequest, codeBadInput, "expectedRevision and expectedSnapshot must be the plan's present ones")
			return
		}
		key := t.Identity.Key()
		resp, err := s.opt.Planning.StartAction(r.Context(), a.ActionID, suggest.StartRequest{PlanKey: key, Mode: mode,
			ExpectedRevision: a.ExpectedRevision, ExpectedSnapshot: a.ExpectedSnapshot})
		s.planReply(w, r, key, suggest.ActionKind(mode, suggest.VerbStart), resp, err)
	}
}

// pathRequestID reads {id} and answers 400 for one that is not a
// lowercase UUID v4, before any transaction.
func pathRequestID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !ids.ValidUUID(id) {
		writeError(w, http.StatusBadRequest, codeBadInput, "a planning request ID is a lowercase UUID v4")
		return "", false
	}
	return id, true
}

// getPlanRequest is GET /api/plan/suggestions/:id (and drafts): the
// request's row only; a route refuses the other mode's IDs ("Unknown
// suggestion request.") with 404.
func (s *Server) getPlanRequest(mode string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathRequestID(w, r)
		if !ok {
			return
		}
		var row store.PlanRequest
		err := s.opt.Store.View(func(tx *store.Tx) (err error) { row, err = suggest.Request(tx, "", mode, id); return err })
		if ref, refused := store.IsRefusal(err); refused {
			writeError(w, http.StatusNotFound, codeNotFound, ref.Message)
			return
		}
		if err != nil {
			s.storageError(w, "GET /api/plan/"+mode, err)
			return
		}
		writeJSON(w, http.StatusOK, planRequestRow(row))
	}
}

// planRequestTarget reads what a cancel or an apply acts on: the path's
// request ID, the body, and the configured task it names, answering 400
// or 404 itself (before any transaction) when one is not right.
func (s *Server) planRequestTarget(w http.ResponseWriter, r *http.Request) (id string, a PlanRequestAction, t Task, ok bool) {
	if id, ok = pathRequestID(w, r); !ok {
		return
	}
	if ok = decode(w, r, maxPlanRequestBody, &a); !ok {
		return
	}
	t, ok = s.actionTarget(w, a.Task, a.ActionID)
	return
}

// postPlanCancel is POST /api/plan/suggestions/:id/cancel (and drafts):
// pending with a handle, the handle's cancel; otherwise the Store's
// cancel; one user action whose recorded request includes the ID.
func (s *Server) postPlanCancel(mode string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, a, t, ok := s.planRequestTarget(w, r)
		if !ok {
			return
		}
		key := t.Identity.Key()
		resp, err := s.opt.Planning.CancelAction(r.Context(), key, a.ActionID, mode, id)
		s.planReply(w, r, key, suggest.ActionKind(mode, suggest.VerbCancel), resp, err)
	}
}

// postPlanApply is POST /api/plan/suggestions/:id/apply (and drafts):
// Store.applySuggestion / applyDraft inside the runner's review action
// (a running attempt of the task then ends stale, as after an import).
func (s *Server) postPlanApply(mode string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, a, t, ok := s.planRequestTarget(w, r)
		if !ok {
			return
		}
		if a.ExpectedRevision < 1 {
			writeError(w, http.StatusBadRequest, codeBadInput, "expectedRevision must be the revision the request is bound to")
			return
		}
		key := t.Identity.Key()
		resp, err := s.opt.Runner.ReviewAction(r.Context(), suggest.ApplyAction(key, a.ActionID, mode, id, a.ExpectedRevision),
			func(tx *store.Tx) (store.Response, error) {
				return suggest.Apply(tx, key, mode, id, a.ExpectedRevision)
			})
		s.planReply(w, r, key, suggest.ActionKind(mode, suggest.VerbApply), resp, err)
	}
}

// planReply maps a planning action's outcome to HTTP as every user action
// (actionStatus) and adds the request's present row and the plan's
// present revision and snapshot.
func (s *Server) planReply(w http.ResponseWriter, r *http.Request, key, kind string, resp store.Response, err error) {
	out := PlanActionReply{Outcome: resp.Outcome, Code: resp.Code, Message: resp.Message, RequestID: resp.AttemptID, Replayed: resp.Replayed}
	status, ok := s.actionStatus(w, r, kind, err, resp, &out.Outcome, &out.Code, &out.Message)
	if !ok {
		return
	}
	_ = s.opt.Store.View(func(tx *store.Tx) error {
		if p, err := tx.Plan(key); err == nil {
			out.Revision, out.SnapshotID = p.Revision, p.SnapshotID
		}
		if out.RequestID != "" {
			if row, err := tx.PlanRequest(out.RequestID); err == nil {
				rr := planRequestRow(row)
				out.Request = &rr
			}
		}
		return nil
	})
	s.metrics.outcome(out.Outcome)
	writeJSON(w, status, out)
}

// getPlanRequests is GET /api/plan/requests?task=NAME, for the screen.
func (s *Server) getPlanRequests(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tasks[r.URL.Query().Get("task")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(r.URL.Query().Get("task")))
		return
	}
	key := t.Identity.Key()
	out := PlanRequestsReply{Requests: []PlanRequestRow{}}
	if err := s.opt.Store.View(func(tx *store.Tx) error {
		p, err := tx.Plan(key)
		if ref, none := store.IsRefusal(err); none && ref.Code == store.CodeNotFound {
			return nil // no plan yet: no request either
		}
		if err != nil {
			return err
		}
		out.Revision, out.SnapshotID = p.Revision, p.SnapshotID
		rows, err := tx.PlanRequests(key)
		for _, row := range rows {
			out.Requests = append(out.Requests, planRequestRow(row))
		}
		return err
	}); err != nil {
		s.storageError(w, "GET /api/plan/requests", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
