package store

import (
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// Merge attempts: the durable rows of feedback-event rule 2 ("External
// actions"). A GitHub merge cannot share a SQLite transaction, so only a
// confirmed merged outcome closes the task: one transaction sets the attempt
// merged, the task merged, and inserts task-closed keyed by the merge
// attempt's ID. Nothing is written for a submitted, queued or ambiguous
// merge. Startup recovery's step 5 (ReconcileMerged) repairs a task whose
// confirmed merge lacks its status or event. The merge coordinator and
// GitHub come later; these are only the rows they will write.

// Merge attempt states.
const (
	MergeSubmitting = "submitting"
	MergeQueued     = "queued"
	MergeMerged     = "merged"
	MergeRemoved    = "removed"
	MergeFailed     = "failed"
)

// MergeAttempt is a merge_attempts row. Rows written before the merge
// coordinator (v9 and older) have no pull request, head or action.
type MergeAttempt struct {
	ID            string
	PlanKey       string
	State         string
	Repo          string // the pull request's repository, owner/name
	Number        int    // the pull request's number
	HeadSHA       string // the head the merge was admitted for, and is asked at
	ReviewVersion int    // the plan's review version at admission
	ActionID      string // the merge click whose saved response follows the outcome
	Reason        string // why it failed or was removed; bounded
	// RequiresFreshReview: the pull request left the merge queue
	// (removed), so a new merge needs a review after it ("requiresFreshReview
	// after removed").
	RequiresFreshReview bool
}

// Terminal reports whether the attempt has its final state.
func (m MergeAttempt) Terminal() bool { return m.State != MergeSubmitting && m.State != MergeQueued }

// BeginMergeAttempt records a merge as submitting (before the request goes
// to GitHub). A closed task cannot merge; one merge at a time per task.
func (t *Tx) BeginMergeAttempt(planKey, id string) error {
	if _, err := t.openTaskFor(planKey, "merge attempt ID", id); err != nil {
		return err
	}
	if err := t.noActiveMerge(planKey); err != nil {
		return err
	}
	now := t.nowMS()
	if _, err := t.exec(`INSERT INTO merge_attempts (id, plan_key, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		id, planKey, MergeSubmitting, now, now); err != nil {
		return err
	}
	return t.bump(planKey)
}

// noActiveMerge refuses while a merge attempt of the task is submitting
// or queued: one merge at a time.
func (t *Tx) noActiveMerge(planKey string) error {
	if active, err := t.activeMerge(planKey); err != nil {
		return err
	} else if active != "" {
		return refuse(CodeMergeActive, "merge attempt %s is still %s", active, MergeSubmitting+" or "+MergeQueued)
	}
	return nil
}

// MergeAttempt reads one merge attempt.
func (t *Tx) MergeAttempt(id string) (MergeAttempt, error) {
	m, err := scanMerge(t.queryRow(`SELECT `+mergeColumnList+` FROM merge_attempts WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return m, refuse(CodeNotFound, "no merge attempt %s", id)
	}
	return m, err
}

const mergeColumnList = `id, plan_key, state, COALESCE(pr_repo, ''), COALESCE(pr_number, 0), COALESCE(head_sha, ''),
	COALESCE(review_version, 0), COALESCE(action_id, ''), COALESCE(reason, ''), requires_fresh_review`

func scanMerge(scan func(...any) error) (MergeAttempt, error) {
	var m MergeAttempt
	err := scan(&m.ID, &m.PlanKey, &m.State, &m.Repo, &m.Number, &m.HeadSHA, &m.ReviewVersion, &m.ActionID, &m.Reason, &m.RequiresFreshReview)
	return m, err
}

// LatestMerge reads the task's latest merge attempt; ok is false when it
// has none.
func (t *Tx) LatestMerge(planKey string) (m MergeAttempt, ok bool, err error) {
	m, err = scanMerge(t.queryRow(`SELECT `+mergeColumnList+` FROM merge_attempts WHERE plan_key = ?
		ORDER BY created_at DESC, rowid DESC LIMIT 1`, planKey).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return MergeAttempt{}, false, nil
	}
	return m, err == nil, err
}

// ActiveMerges lists every submitting or queued merge attempt, oldest
// first: what the merge coordinator's startup asks GitHub about again.
func (t *Tx) ActiveMerges() ([]MergeAttempt, error) {
	rows, err := t.query(`SELECT ` + mergeColumnList + ` FROM merge_attempts WHERE state IN ('submitting','queued') ORDER BY created_at, rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MergeAttempt
	for rows.Next() {
		m, err := scanMerge(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// activeMerge returns the task's submitting or queued merge attempt, or "".
func (t *Tx) activeMerge(planKey string) (string, error) {
	var id string
	err := t.queryRow(`SELECT id FROM merge_attempts WHERE plan_key = ? AND state IN ('submitting','queued') ORDER BY created_at, rowid LIMIT 1`, planKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// SetMergeState records a merge attempt's non-merged progress: queued (from
// submitting), or the terminal removed or failed (from submitting or
// queued). None of them touches the task's status or writes an event; the
// merged outcome goes only through FinishMergeMerged.
func (t *Tx) SetMergeState(id, state string) error { return t.EndMerge(id, state, "") }

// EndMerge is SetMergeState with the reason shown for it: a removed
// attempt requires a fresh review before the next merge, and the merge
// click's saved response becomes this outcome in the same transaction.
func (t *Tx) EndMerge(id, state, reason string) error {
	m, err := t.MergeAttempt(id)
	if err != nil {
		return err
	}
	switch state {
	case MergeQueued:
		if m.State != MergeSubmitting {
			return refuse(CodeIllegal, "merge attempt %s is %s, not %s", id, m.State, MergeSubmitting)
		}
	case MergeRemoved, MergeFailed:
		if m.State != MergeSubmitting && m.State != MergeQueued {
			return refuse(CodeIllegal, "merge attempt %s is already %s", id, m.State)
		}
	default:
		return refuse(CodeBadInput, "merge state %q is not set this way (merged goes through FinishMergeMerged)", state)
	}
	var why any
	if reason != "" {
		why = bound(reason)
	}
	if _, err := t.exec(`UPDATE merge_attempts SET state = ?, reason = ?, requires_fresh_review = ?, updated_at = ? WHERE id = ?`,
		state, why, state == MergeRemoved, t.nowMS(), id); err != nil {
		return err
	}
	if err := t.mergeResponse(m, state, reason); err != nil {
		return err
	}
	return t.bump(m.PlanKey)
}

// mergeResponse updates the saved response of the merge click that began
// m, if one did.
func (t *Tx) mergeResponse(m MergeAttempt, state, reason string) error {
	if m.ActionID == "" {
		return nil
	}
	return t.updateSavedResponse(m.PlanKey, m.ActionID, Response{Outcome: state, AttemptID: m.ID, Message: reason})
}

// FinishMergeMerged records a confirmed merge: in this one transaction the
// attempt becomes merged, the task merged, and task-closed is inserted,
// keyed by the merge attempt's ID.
func (t *Tx) FinishMergeMerged(id string) error {
	m, err := t.MergeAttempt(id)
	if err != nil {
		return err
	}
	if m.State != MergeSubmitting && m.State != MergeQueued {
		return refuse(CodeIllegal, "merge attempt %s is already %s", id, m.State)
	}
	task, err := t.Task(m.PlanKey)
	if err != nil {
		return err
	}
	if task.Status == words.StatusCancelled {
		return refuse(CodeTaskClosed, "task is cancelled and never changes again")
	}
	if _, err := t.exec(`UPDATE merge_attempts SET state = ?, updated_at = ? WHERE id = ?`, MergeMerged, t.nowMS(), id); err != nil {
		return err
	}
	if err := t.mergeResponse(m, MergeMerged, ""); err != nil {
		return err
	}
	return t.closeMerged(m.PlanKey, id)
}

// closeMerged sets the task merged and inserts its task-closed event keyed
// by the merge attempt's ID; a repeat inserts nothing, because (plan key,
// kind, action ID) is unique.
func (t *Tx) closeMerged(planKey, mergeID string) error {
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusMerged, planKey); err != nil {
		return err
	}
	if err := t.insertEvent(Event{PlanKey: planKey, ActionID: mergeID, Kind: words.EventTaskClosed, SourceRef: planKey}); err != nil {
		return err
	}
	return t.bump(planKey)
}

// ReconcileMerged is startup recovery's step 5: for every task with a
// confirmed merged merge attempt whose merged status or task-closed event is
// missing, it sets the status and inserts the event (keyed by that merge
// attempt's ID), in the caller's transaction. It returns the plan keys it
// repaired; a second run repairs none. A cancelled task is never changed:
// cancel task is refused while a merge is submitting or queued, so a
// cancelled task with a merged attempt is not a state this store writes.
func (t *Tx) ReconcileMerged() ([]string, error) {
	rows, err := t.query(`SELECT m.plan_key, m.id FROM merge_attempts m JOIN tasks t ON t.plan_key = m.plan_key
		WHERE m.state = 'merged' AND t.status <> ?
		AND (t.status <> ? OR NOT EXISTS (SELECT 1 FROM feedback_events e
			WHERE e.plan_key = m.plan_key AND e.kind = ? AND e.action_id = m.id))
		ORDER BY m.plan_key, m.created_at, m.rowid`, words.StatusCancelled, words.StatusMerged, words.EventTaskClosed)
	if err != nil {
		return nil, err
	}
	type pair struct{ key, id string }
	var todo []pair
	for rows.Next() {
		var p pair
		if err := rows.Scan(&p.key, &p.id); err != nil {
			rows.Close()
			return nil, err
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range todo {
		if seen[p.key] {
			continue
		}
		seen[p.key] = true
		if err := t.closeMerged(p.key, p.id); err != nil {
			return nil, err
		}
		out = append(out, p.key)
	}
	return out, nil
}

// The durable rebase marker (tasks.rebase_in_progress, "Partial output and
// interrupted rebases"). F3 sets it before a rebase starts and clears it
// after; startup recovery's step 4 aborts every recorded rebase and clears
// the marker by compare-and-swap on its attemptId before the task can be
// listed for I3. No rebase is performed yet: only the marker is kept.

// RebaseMarker is the JSON in tasks.rebase_in_progress (its first field;
// F3 adds the rest).
type RebaseMarker struct {
	AttemptID string `json:"attemptId"`
}

// Rebase is one task's recorded rebase.
type Rebase struct {
	PlanKey   string
	AttemptID string
}

// SetRebaseInProgress records a rebase by compare-and-swap from null.
func (t *Tx) SetRebaseInProgress(planKey, attemptID string) error {
	if _, err := t.openTaskFor(planKey, "rebase attempt ID", attemptID); err != nil {
		return err
	}
	body, _ := json.Marshal(RebaseMarker{AttemptID: attemptID})
	res, err := t.exec(`UPDATE tasks SET rebase_in_progress = ? WHERE plan_key = ? AND rebase_in_progress IS NULL`, string(body), planKey)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return refuse(CodeIllegal, "a rebase is already in progress for %s", planKey)
	}
	return t.bump(planKey)
}

// AbortRebase clears the task's rebase marker by compare-and-swap on its
// attemptId; it reports whether this call cleared it (false: no marker, or
// another attempt's).
func (t *Tx) AbortRebase(planKey, attemptID string) (bool, error) {
	res, err := t.exec(`UPDATE tasks SET rebase_in_progress = NULL WHERE plan_key = ? AND json_valid(rebase_in_progress)
		AND json_extract(rebase_in_progress, '$.attemptId') = ?`, planKey, attemptID)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	return true, t.bump(planKey)
}

// RebasesInProgress lists every task with a rebase marker, by plan key. A
// marker whose JSON has no attemptId is listed with an empty one: recovery
// cannot clear it by compare-and-swap and reports it.
func (t *Tx) RebasesInProgress() ([]Rebase, error) {
	if err := t.s.fp.Err("store/rebase-read"); err != nil {
		return nil, err
	}
	rows, err := t.query(`SELECT plan_key, rebase_in_progress FROM tasks WHERE rebase_in_progress IS NOT NULL ORDER BY plan_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Rebase
	for rows.Next() {
		var key, body string
		if err := rows.Scan(&key, &body); err != nil {
			return nil, err
		}
		var m RebaseMarker
		_ = json.Unmarshal([]byte(body), &m)
		out = append(out, Rebase{PlanKey: key, AttemptID: m.AttemptID})
	}
	return out, rows.Err()
}

// openTaskFor checks an ID the caller chose and reads the task, refusing a
// closed one: a closed status never changes again.
func (t *Tx) openTaskFor(planKey, what, id string) (Task, error) {
	if err := ids.CheckUUID(what, id); err != nil {
		return Task{}, refuse(CodeBadInput, "%s", err.Error())
	}
	return t.openTask(planKey)
}
