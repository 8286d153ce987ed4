package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/store"
)

// Merges is what the server needs of the merge coordinator (package
// merge): a merge click, displayStatus, and its part in shutdown (step 1
// stops it in the stopping flag's turn; step 3 awaits its merges in
// flight as request-owned work).
type Merges interface {
	Merge(ctx context.Context, r merge.Request) (store.Response, error)
	DisplayStatus(ctx context.Context, planKey string) (merge.Status, error)
	Stop()
	AwaitIdle(ctx context.Context) (<-chan struct{}, error)
}

// MergeRequest is POST /api/merge's body: the task and the versions the
// person saw when they clicked.
type MergeRequest struct {
	Task                  string `json:"task"`
	ActionID              string `json:"actionId"`
	ExpectedStateVersion  int64  `json:"expectedStateVersion"`
	ExpectedReviewVersion int    `json:"expectedReviewVersion"`
}

// MergeRow is a task's latest merge attempt as the screen shows it.
type MergeRow struct {
	ID                  string `json:"id"`
	State               string `json:"state"`
	Reason              string `json:"reason,omitempty"`
	RequiresFreshReview bool   `json:"requiresFreshReview"`
	PullRequest         string `json:"pullRequest,omitempty"` // owner/name#number
}

// MergeReply is GET /api/merge: the task's latest merge, or null.
type MergeReply struct {
	Merge *MergeRow `json:"merge"`
}

func mergeRow(st merge.Status) *MergeRow {
	m := st.Attempt
	if m == nil {
		return nil
	}
	row := &MergeRow{ID: m.ID, State: m.State, Reason: m.Reason, RequiresFreshReview: m.RequiresFreshReview}
	if m.Repo != "" {
		row.PullRequest = m.Repo + "#" + strconv.Itoa(m.Number)
	}
	return row
}

// postMerge is POST /api/merge. "After reading a body, the server
// rechecks stopping only for merge": a merge click whose body completes
// during the drain is refused with 503 before anything else, because a
// merge cannot be taken back. A GitHub read before admission that did not
// answer is 503 too, and recorded nothing; every other outcome is the
// user action's (a replay returns the attempt's current outcome).
func (s *Server) postMerge(w http.ResponseWriter, r *http.Request) {
	var a MergeRequest
	if !decode(w, r, maxReviewBody, &a) {
		return
	}
	t, ok := s.actionTarget(w, a.Task, a.ActionID)
	if !ok {
		return
	}
	// A request admitted before step 1 meets the merge coordinator's
	// closing flag, which SetStopping sets first: ErrShuttingDown, 503.
	resp, err := s.opt.Merges.Merge(r.Context(), merge.Request{PlanKey: t.Identity.Key(), ActionID: a.ActionID,
		ExpectedStateVersion: a.ExpectedStateVersion, ExpectedReviewVersion: a.ExpectedReviewVersion})
	if errors.Is(err, merge.ErrUnavailable) {
		writeError(w, http.StatusServiceUnavailable, codeGitHubUnavailable, err.Error())
		return
	}
	s.reply(w, r, t, merge.ActionKind, resp, err)
}

// getMerge is GET /api/merge?task=NAME: displayStatus, which polls GitHub
// for a merge in flight and records what it shows through the write gate;
// after shutdown step 3 that write answers 503, never a 200.
func (s *Server) getMerge(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tasks[r.URL.Query().Get("task")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(r.URL.Query().Get("task")))
		return
	}
	st, err := s.opt.Merges.DisplayStatus(r.Context(), t.Identity.Key())
	if err != nil {
		s.storageError(w, "GET /api/merge", err)
		return
	}
	writeJSON(w, http.StatusOK, MergeReply{Merge: mergeRow(st)})
}
