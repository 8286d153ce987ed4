package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/codeboost/codeboost/store"
)

// A review action carries at most one note per plan item, each within the
// feedback-event text bound.
const maxReviewBody = 512 << 10

// ReviewReply is GET /api/review: the plan as the reviewer sees it, with
// its notes, choices, findings and the task's history.
type ReviewReply struct {
	Name          string `json:"name"`
	Revision      int    `json:"revision"`
	SnapshotID    string `json:"snapshotId"`
	ReviewVersion int    `json:"reviewVersion"`
	StateVersion  int64  `json:"stateVersion"`
	// ContextGeneration is the task's, read with the plan: an import, an
	// applied suggestion or a new snapshot moves it (not the review
	// version), so the screen compares it with GET /api/runner's to know
	// its plan is old.
	ContextGeneration int64           `json:"contextGeneration"`
	TaskStatus        string          `json:"taskStatus"`
	Items             []ReviewItem    `json:"items"`
	Notes             []ReviewNote    `json:"notes"`
	Choices           []store.Choice  `json:"choices"`
	Findings          []ReviewFinding `json:"findings"`
	History           []HistoryRow    `json:"history"`
	Head              string          `json:"head"` // the repository's HEAD, as read by this load
	// Merge is the task's latest merge attempt, through displayStatus
	// (which reads GitHub again while a merge is in flight); null for none.
	Merge *MergeRow `json:"merge"`
}

// ReviewItem is one item of the current plan revision.
type ReviewItem struct {
	Item     int    `json:"item"`
	Title    string `json:"title"`
	RunAgain bool   `json:"runAgain"`
	Approved bool   `json:"approved"` // holds an approval the execution gate accepts
	// StaleApproval: it holds an approval the gate rejects (saved before a
	// later choice, or for another snapshot), which the reviewer replaces.
	StaleApproval bool `json:"staleApproval"`
	// Spec is the item as its plan document declared it (instructions,
	// file operations, links, scope: docs/plan-format.md); null for an
	// item imported before plan documents existed.
	Spec json.RawMessage `json:"spec"`
}

// ReviewNote is one saved note.
type ReviewNote struct {
	ID        int64     `json:"id"`
	Revision  int       `json:"revision"`
	Item      *int      `json:"item"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
	Question  bool      `json:"question"` // a question's note: the Questions panel shows it, with its answer
}

// ReviewFinding is one open problem.
type ReviewFinding struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"`
}

// HistoryRow is one ledger entry.
type HistoryRow struct {
	AttemptID string `json:"attemptId"`
	Commit    string `json:"commit"`
}

// getReview is GET /api/review: the review load. When the repository's HEAD
// has moved past the task's referenced code, the load records it in the
// task's history first, through the write gate: after shutdown step 3 that
// write fails and the load answers 503, never a partial view.
func (s *Server) getReview(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tasks[r.URL.Query().Get("task")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(r.URL.Query().Get("task")))
		return
	}
	key := t.Identity.Key()
	head, owned, err := s.recordedHead(key)
	if err != nil {
		s.storageError(w, "GET /api/review", err)
		return
	}
	if !owned && s.opt.Head != nil {
		h, err := s.opt.Head(t)
		if err != nil {
			s.log.Warn("review load: the repository's HEAD could not be read", "task", t.Name, "err", err)
		}
		head = h
	}
	if head != "" && !owned {
		// The HEAD was read outside any transaction: a runner commit may
		// have landed since. The write checks again and, if one has, keeps
		// the recorded head instead of rolling the task back to the
		// user's.
		if err := s.opt.Runner.ChangeContext(r.Context(), key, func(tx *store.Tx) error {
			task, err := tx.Task(key)
			if err != nil || task.ReferencedCodeHash == head {
				return err
			}
			if owned, err = runnerOwned(tx, key); err != nil || owned {
				head = task.ReferencedCodeHash
				return err
			}
			return tx.RecordHistory(key, "", head)
		}); err != nil {
			s.storageError(w, "GET /api/review", err)
			return
		}
	}
	reply := ReviewReply{Name: t.Name, Head: head, Items: []ReviewItem{}, Notes: []ReviewNote{}, Findings: []ReviewFinding{}, History: []HistoryRow{}}
	err = s.opt.Store.View(func(tx *store.Tx) error {
		plan, err := tx.Plan(key)
		if err != nil {
			return err
		}
		task, err := tx.Task(key)
		if err != nil {
			return err
		}
		reply.Revision, reply.SnapshotID, reply.ReviewVersion = plan.Revision, plan.SnapshotID, plan.ReviewVersion
		reply.StateVersion, reply.ContextGeneration, reply.TaskStatus = task.StateVersion, task.ContextGeneration, string(task.Status)
		items, err := tx.PlanItems(key, plan.Revision)
		if err != nil {
			return err
		}
		approved, err := tx.ApprovedItems(key)
		if err != nil {
			return err
		}
		stale, err := tx.StaleApprovals(key)
		if err != nil {
			return err
		}
		for _, it := range items {
			reply.Items = append(reply.Items, ReviewItem{Item: it.Item, Title: it.Title, RunAgain: it.RunAgain, Approved: approved[it.Item],
				StaleApproval: stale[it.Item], Spec: it.Spec})
		}
		notes, err := tx.Notes(key)
		if err != nil {
			return err
		}
		for _, n := range notes {
			reply.Notes = append(reply.Notes, ReviewNote{ID: n.ID, Revision: n.Revision, Item: n.Item, Text: n.Text, CreatedAt: n.CreatedAt, Question: n.Question})
		}
		if reply.Choices, err = tx.Choices(key); err != nil {
			return err
		}
		if reply.Choices == nil {
			reply.Choices = []store.Choice{}
		}
		findings, err := tx.Findings(key)
		if err != nil {
			return err
		}
		for _, f := range findings {
			reply.Findings = append(reply.Findings, ReviewFinding{ID: f.ID, Text: f.Text, Status: f.Status})
		}
		history, err := tx.History(key)
		for _, h := range history {
			reply.History = append(reply.History, HistoryRow{AttemptID: h.AttemptID, Commit: h.Commit})
		}
		return err
	})
	if err != nil {
		s.storageError(w, "GET /api/review", err)
		return
	}
	if s.opt.Merges != nil {
		// displayStatus's reconciliation write goes through the gate:
		// after step 3 it is 503, never a 200 with the merge left out.
		st, err := s.opt.Merges.DisplayStatus(r.Context(), key)
		if err != nil {
			s.storageError(w, "GET /api/review", err)
			return
		}
		reply.Merge = mergeRow(st)
	}
	writeJSON(w, http.StatusOK, reply)
}

// ReviewAction is POST /api/review's body: one review action. Which fields
// it needs depends on Action:
//
//	reject          expectedRevision, notes (each text, and item or none for the whole plan)
//	change-note     item, text
//	accept-segment  choiceKey
//	assign-segment  choiceKey, item
//	accept-finding  findingId
//	guidance        text (sends a needs-human task back)
//	approve         item, expectedReviewVersion
type ReviewAction struct {
	Task                  string       `json:"task"`
	Action                string       `json:"action"`
	ActionID              string       `json:"actionId"`
	ExpectedRevision      int          `json:"expectedRevision,omitempty"`
	ExpectedReviewVersion int          `json:"expectedReviewVersion,omitempty"`
	ExpectedStateVersion  int64        `json:"expectedStateVersion,omitempty"` // approve-continuation's view of the task
	Item                  *int         `json:"item,omitempty"`
	Text                  string       `json:"text,omitempty"`
	ChoiceKey             string       `json:"choiceKey,omitempty"`
	FindingID             string       `json:"findingId,omitempty"`
	Notes                 []ActionNote `json:"notes,omitempty"`
}

// ActionNote is one note of a rejection.
type ActionNote struct {
	Item *int   `json:"item,omitempty"`
	Text string `json:"text"`
}

// reviewAction is one review action's check of its own fields (before any
// transaction: bad input is 400 and stores nothing) and its write, run
// inside Store.UserAction with its feedback event in the same transaction.
type reviewAction struct {
	check func(a ReviewAction) error
	apply func(tx *store.Tx, key string, a ReviewAction) (store.Response, error)
}

var reviewActions = map[string]reviewAction{
	"reject": {
		check: func(a ReviewAction) error {
			if a.ExpectedRevision < 1 {
				return fmt.Errorf("reject needs expectedRevision")
			}
			if len(a.Notes) == 0 || len(a.Notes) > 200 {
				return fmt.Errorf("reject needs 1 to 200 notes")
			}
			for i, n := range a.Notes {
				if err := checkText(fmt.Sprintf("notes[%d].text", i), n.Text); err != nil {
					return err
				}
				if n.Item != nil && *n.Item < 1 {
					return fmt.Errorf("notes[%d].item must be a plan item number", i)
				}
			}
			return nil
		},
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			notes := make([]store.NoteInput, len(a.Notes))
			for i, n := range a.Notes {
				notes[i] = store.NoteInput{Item: n.Item, Text: n.Text}
			}
			rev, err := tx.RejectWithFeedback(key, a.ActionID, a.ExpectedRevision, notes)
			return store.Response{Outcome: "rejected", Message: "plan revision " + strconv.Itoa(rev)}, err
		},
	},
	"change-note": {
		check: func(a ReviewAction) error { return firstErr(checkItem(a.Item), checkText("text", a.Text)) },
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			id, err := tx.ChangeNote(key, a.ActionID, *a.Item, a.Text)
			return store.Response{Outcome: "saved", Message: "note " + strconv.FormatInt(id, 10)}, err
		},
	},
	"accept-segment": {
		check: func(a ReviewAction) error { return checkRef("choiceKey", a.ChoiceKey) },
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			return store.Response{Outcome: "saved"}, tx.AcceptSegment(key, a.ActionID, a.ChoiceKey)
		},
	},
	"assign-segment": {
		check: func(a ReviewAction) error { return firstErr(checkRef("choiceKey", a.ChoiceKey), checkItem(a.Item)) },
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			return store.Response{Outcome: "saved"}, tx.AssignSegment(key, a.ActionID, a.ChoiceKey, *a.Item)
		},
	},
	"accept-finding": {
		check: func(a ReviewAction) error { return checkRef("findingId", a.FindingID) },
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			return store.Response{Outcome: "saved"}, tx.AcceptFinding(key, a.ActionID, a.FindingID)
		},
	},
	"guidance": {
		check: func(a ReviewAction) error { return checkText("text", a.Text) },
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			id, err := tx.NeedsHumanGuidance(key, a.ActionID, a.Text)
			return store.Response{Outcome: "sent-back", Message: "note " + strconv.FormatInt(id, 10)}, err
		},
	},
	"approve-continuation": {
		check: func(a ReviewAction) error {
			if a.ExpectedReviewVersion < 0 || a.ExpectedStateVersion < 0 {
				return fmt.Errorf("expectedStateVersion and expectedReviewVersion must not be negative")
			}
			return nil
		},
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			cp, err := tx.ApproveContinuation(key, a.ExpectedStateVersion, a.ExpectedReviewVersion)
			if err != nil {
				return store.Response{}, err
			}
			return store.Response{Outcome: "approved", Message: fmt.Sprintf("continuation after item %d approved at revision %d; resume runs the rest", cp.Item, cp.Approval.Revision)}, nil
		},
	},
	"approve": {
		check: func(a ReviewAction) error {
			if a.ExpectedReviewVersion < 0 {
				return fmt.Errorf("expectedReviewVersion must not be negative")
			}
			return checkItem(a.Item)
		},
		apply: func(tx *store.Tx, key string, a ReviewAction) (store.Response, error) {
			v, err := tx.ApproveReviewed(key, *a.Item, a.ExpectedReviewVersion)
			return store.Response{Outcome: "approved", Message: "review version " + strconv.Itoa(v)}, err
		},
	},
}

// postReview is POST /api/review: one review action, as a user action on
// the coordinator's loop.
func (s *Server) postReview(w http.ResponseWriter, r *http.Request) {
	var a ReviewAction
	if !decode(w, r, maxReviewBody, &a) {
		return
	}
	t, ok := s.actionTarget(w, a.Task, a.ActionID)
	if !ok {
		return
	}
	act, ok := reviewActions[a.Action]
	if !ok {
		writeError(w, http.StatusBadRequest, codeBadInput, "unknown review action "+quote(a.Action))
		return
	}
	if err := act.check(a); err != nil {
		writeError(w, http.StatusBadRequest, codeBadInput, err.Error())
		return
	}
	key := t.Identity.Key()
	request := a
	request.Task, request.ActionID = "", "" // the action ID is the key, the task is the plan key
	resp, err := s.opt.Runner.ReviewAction(r.Context(), store.Action{PlanKey: key, ActionID: a.ActionID, Kind: "review/" + a.Action, Request: request},
		func(tx *store.Tx) (store.Response, error) { return act.apply(tx, key, a) })
	s.reply(w, r, t, "review/"+a.Action, resp, err)
}

func checkText(field, text string) error {
	switch {
	case text == "":
		return fmt.Errorf("%s is empty", field)
	case !utf8.ValidString(text):
		return fmt.Errorf("%s is not UTF-8", field)
	case utf8.RuneCountInString(text) > store.MaxFeedbackText:
		return fmt.Errorf("%s is over %d characters", field, store.MaxFeedbackText)
	}
	return nil
}

func checkItem(item *int) error {
	if item == nil || *item < 1 {
		return fmt.Errorf("item must be a plan item number")
	}
	return nil
}

func checkRef(field, v string) error {
	if v == "" || len(v) > store.MaxReviewKey || !utf8.ValidString(v) {
		return fmt.Errorf("%s must be 1 to %d bytes of UTF-8", field, store.MaxReviewKey)
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// quote quotes a value from a request for an error message, bounded so a
// 10 KB value does not come back whole.
func quote(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return strconv.Quote(v)
}

// recordedHead is the task's head when it has runner commits (a ledger
// entry an attempt wrote): the head the Store recorded, read from the
// runner-owned repository, because runner commits move the head only
// through the Store and observing the user's older HEAD would roll the
// task back. owned is false for a task without runner commits, which
// still observes the user's HEAD.
func (s *Server) recordedHead(planKey string) (head string, owned bool, err error) {
	err = s.opt.Store.View(func(tx *store.Tx) error {
		if owned, err = runnerOwned(tx, planKey); err != nil || !owned {
			return err
		}
		task, err := tx.Task(planKey)
		head = task.ReferencedCodeHash
		return err
	})
	return head, owned, err
}

// runnerOwned reports whether the task has a runner commit in its history.
func runnerOwned(tx *store.Tx, planKey string) (bool, error) {
	entries, err := tx.History(planKey)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.AttemptID != "" {
			return true, nil
		}
	}
	return false, nil
}
