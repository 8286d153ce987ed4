package store

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// Action names one user action: its plan key, its idempotency key and the
// request it carries (hashed as canonical JSON, kind included, so one action
// ID cannot replay across two kinds).
type Action struct {
	PlanKey  string
	ActionID string
	Kind     string
	Request  any
}

// Response is a user action's saved, bounded outcome.
type Response struct {
	Outcome   string `json:"outcome"`             // applied, refused, or an action's own word
	Code      string `json:"code,omitempty"`      // a refusal's code
	Message   string `json:"message,omitempty"`   // bounded
	AttemptID string `json:"attemptId,omitempty"` // what the action admitted or acted on
	Replayed  bool   `json:"-"`                   // true when this is a saved response
}

// MaxResponse bounds a saved response.
const MaxResponse = 16 << 10

// RequestHash hashes an action's kind and request.
func RequestHash(kind string, request any) string {
	b, _ := json.Marshal(struct {
		Kind    string `json:"kind"`
		Request any    `json:"request"`
	}{kind, request})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// UserAction runs fn as the user action a, once. The replay check runs before
// any other guard: the same action ID with the same request returns the saved
// response and applies nothing; with another request it is refused as
// "Action ID already used". A guard's refusal is recorded in its own
// transaction, with the effect that rides on it (see refused); a storage
// error records nothing, so the UI may resend. The caller gets a definite
// outcome only once it is recorded: when the refusal's own transaction fails,
// it gets that storage error, never the unrecorded refusal, because a resend
// runs the guards again and may answer otherwise. AfterCommit effects
// registered by fn run only if the action commits.
func (s *Store) UserAction(a Action, fn func(tx *Tx) (Response, error)) (Response, error) {
	if err := ids.CheckUUID("action ID", a.ActionID); err != nil {
		return Response{}, &Refusal{Code: CodeBadInput, Message: err.Error()}
	}
	hash := RequestHash(a.Kind, a.Request)
	var resp Response
	var refusal *Refusal
	err := s.Update(func(tx *Tx) error {
		saved, ok, err := tx.savedAction(a.PlanKey, a.ActionID, hash)
		if err != nil {
			return err
		}
		if ok {
			resp = saved
			resp.Replayed = true
			return nil
		}
		r, err := fn(tx)
		if err != nil {
			if ref, ok := IsRefusal(err); ok {
				refusal = ref
			}
			return err
		}
		if err := s.fp.Err("store/user-action"); err != nil {
			return err
		}
		resp = r
		if resp.Outcome == "" {
			resp.Outcome = "applied"
		}
		return tx.saveAction(a, hash, resp)
	})
	if err != nil {
		if refusal == nil || refusal.Code == CodeActionIDUsed {
			return Response{}, err
		}
		resp = Response{Outcome: "refused", Code: refusal.Code, Message: refusal.Message}
		if rerr := s.Update(func(tx *Tx) error {
			if err := tx.saveAction(a, hash, resp); err != nil {
				return err
			}
			return tx.refused(a.PlanKey, refusal)
		}); rerr != nil {
			return Response{}, rerr
		}
		return resp, err
	}
	if resp.Replayed && resp.Outcome == "refused" {
		return resp, &Refusal{Code: resp.Code, Message: resp.Message}
	}
	return resp, nil
}

// SavedAction reads the saved response of a, if a was recorded: a
// caller whose guards read something outside the Store first (a merge
// click's GitHub read) answers a replay from it without that read. The
// same action ID with another request is refused as "Action ID already
// used".
func (s *Store) SavedAction(a Action) (resp Response, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		resp, ok, err = tx.savedAction(a.PlanKey, a.ActionID, RequestHash(a.Kind, a.Request))
		return err
	})
	resp.Replayed = ok
	return
}

// updateSavedResponse replaces the saved response of a recorded action:
// a merge's "in progress" becomes its outcome, in the transaction that
// records the outcome ("When the merge coordinator records the outcome,
// the same transaction updates that saved response").
func (t *Tx) updateSavedResponse(planKey, actionID string, r Response) error {
	r.Message = bound(r.Message)
	body, _ := json.Marshal(r)
	_, err := t.exec(`UPDATE user_actions SET response = ? WHERE plan_key = ? AND action_id = ?`, string(body), planKey, actionID)
	return err
}

func (t *Tx) savedAction(planKey, actionID, hash string) (Response, bool, error) {
	var savedHash, body string
	err := t.queryRow(`SELECT request_hash, response FROM user_actions WHERE plan_key = ? AND action_id = ?`, planKey, actionID).Scan(&savedHash, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return Response{}, false, nil
	}
	if err != nil {
		return Response{}, false, err
	}
	if savedHash != hash {
		return Response{}, false, &Refusal{Code: CodeActionIDUsed, Message: words.ActionIDAlreadyUsed}
	}
	var r Response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return Response{}, false, err
	}
	return r, true, nil
}

func (t *Tx) saveAction(a Action, hash string, r Response) error {
	r.Message = bound(r.Message)
	body, _ := json.Marshal(r)
	if len(body) > MaxResponse {
		body, _ = json.Marshal(Response{Outcome: r.Outcome, Code: r.Code, AttemptID: r.AttemptID, Message: "(response too large to keep)"})
	}
	_, err := t.exec(`INSERT INTO user_actions (plan_key, action_id, kind, request_hash, response, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		a.PlanKey, a.ActionID, a.Kind, hash, string(body), t.nowMS())
	return err
}

// UserActionCount counts saved user actions of a task (for checks).
func (t *Tx) UserActionCount(planKey string) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM user_actions WHERE plan_key = ?`, planKey).Scan(&n)
	return n, err
}

// Outcomes of CancelTask.
const (
	CancelTaskClosed   = "closed"
	CancelTaskStopping = "stopping-then-cancelling"
)

// CancelTask closes the task, or, when an attempt is active, records first
// reason cancelled on it and sets cancel_requested in this same transaction
// ("Stopping, then cancelling"); that attempt's terminal write then closes
// the task. It returns the outcome and the active attempt's ID, if any.
// recordReason is false when the coordinator already holds a first reason in
// memory for that attempt (its write may have failed): that reason stays.
func (t *Tx) CancelTask(planKey, actionID string, recordReason bool) (outcome, attemptID string, err error) {
	if err := t.CheckCancelTask(planKey); err != nil {
		return "", "", err
	}
	active, err := t.activeAttempt(planKey)
	if err != nil {
		return "", "", err
	}
	if active == "" {
		if err := t.closeTask(planKey, actionID); err != nil {
			return "", "", err
		}
		return CancelTaskClosed, "", t.bump(planKey)
	}
	if _, err := t.exec(`UPDATE tasks SET cancel_requested = ? WHERE plan_key = ?`, actionID, planKey); err != nil {
		return "", "", err
	}
	if err := t.bump(planKey); err != nil {
		return "", "", err
	}
	a, err := t.Attempt(active)
	if err != nil {
		return "", "", err
	}
	if a.FirstReason == "" && recordReason {
		if err := t.RecordFirstReason(active, words.ReasonCancelled, ""); err != nil {
			return "", "", err
		}
	}
	return CancelTaskStopping, active, nil
}

// CheckCancelTask is cancel task's guards, writing nothing: the task is
// not closed, no cancel is pending, and no merge is submitting or queued.
// CancelTask runs it first; GET /api/runner's taskCancellable is it, so
// Cancel task is offered exactly when it would be taken.
func (t *Tx) CheckCancelTask(planKey string) error {
	task, err := t.Task(planKey)
	if err != nil {
		return err
	}
	if words.Closed(task.Status) {
		return refuse(CodeTaskClosed, "task is already %s", task.Status)
	}
	if task.CancelRequested != "" {
		return refuse(CodeCancelPending, "cancel task is already pending")
	}
	// A submitting or queued merge (its outcome perhaps unclear) may still
	// merge on GitHub, and a closed task can never change to merged.
	if merge, err := t.activeMerge(planKey); err != nil {
		return err
	} else if merge != "" {
		return refuse(CodeMergeActive, "cancel task is refused while merge attempt %s is submitting or queued", merge)
	}
	return nil
}

// Diagnostics references, for retention.

// DiagnosticRefs returns every diagnostic_ref this database holds, by file name.
func (t *Tx) DiagnosticRefs() (map[string]string, error) {
	rows, err := t.query(`SELECT diagnostic_ref, id FROM attempts WHERE diagnostic_ref IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ref, id string
		if err := rows.Scan(&ref, &id); err != nil {
			return nil, err
		}
		out[ref] = id
	}
	return out, rows.Err()
}

// ClearDiagnosticRef is retention's first half for a referenced file: the
// row's diagnostic_ref is cleared and the note appended, in one transaction;
// only after it commits may the file be deleted.
func (t *Tx) ClearDiagnosticRef(attemptID string) error {
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	diag := a.Diagnostic
	if diag != "" {
		diag += " "
	}
	if _, err := t.exec(`UPDATE attempts SET diagnostic_ref = NULL, diagnostic = ? WHERE id = ?`, bound(diag+words.RemovedByRetention), a.ID); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}
