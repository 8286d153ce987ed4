package store

import (
	"database/sql"
	"errors"

	"github.com/codeboost/codeboost/plan"
)

// The methods in this file change something an attempt depends on: the plan
// revision, the snapshot, the assignment or the referenced code. Each one
// increases tasks.context_generation (and with it the state version) in the
// same transaction, so that every attempt that captured the old context stops
// being current. ContextEffect classifies every exported method of Store and
// Tx, and a reflection test fails when a method is missing from it.

// ItemInput is one item of an imported revision: its title, and its spec,
// the item's canonical JSON (plan.Item.Spec), or nil for an item known by
// its title alone.
type ItemInput struct {
	Title string
	Spec  []byte // nil: stored as NULL, read back as nil
}

// ItemInputs are a parsed plan document's items as ImportPlan takes them.
func ItemInputs(doc plan.Document) ([]ItemInput, error) {
	items := make([]ItemInput, len(doc.Items))
	for i, it := range doc.Items {
		spec, err := it.Spec()
		if err != nil {
			return nil, err
		}
		items[i] = ItemInput{Title: it.Title, Spec: spec}
	}
	return items, nil
}

// ImportRevision replaces the plan with revision+1 and the given items,
// known by their titles alone. expectedRevision is the caller's
// compare-and-swap.
func (t *Tx) ImportRevision(planKey string, expectedRevision int, items []string) (int, error) {
	inputs := make([]ItemInput, len(items))
	for i, title := range items {
		inputs[i] = ItemInput{Title: title}
	}
	return t.importRevision(planKey, expectedRevision, inputs)
}

// ImportPlan is ImportRevision for the full items of a plan document
// (POST /api/plan/import): revision+1 with each item's title and spec, the
// same compare-and-swap, the same refusals for an unknown plan and a stale
// revision, the same context change. Before it reads anything it refuses
// (bad input) an import of no item or of more items than a plan document
// holds, and an item whose spec is not the canonical JSON of an item with
// that title, so that every stored spec reads back with plan.ParseSpec.
func (t *Tx) ImportPlan(planKey string, expectedRevision int, items []ItemInput) (int, error) {
	if len(items) == 0 || len(items) > plan.MaxItems {
		return 0, refuse(CodeBadInput, "a plan has 1 to %d items, not %d", plan.MaxItems, len(items))
	}
	for i, in := range items {
		it, err := plan.ParseSpec(in.Spec)
		if err != nil {
			return 0, refuse(CodeBadInput, "plan item %d: its spec is not a plan item: %v", i+1, err)
		}
		if it.Title != in.Title {
			return 0, refuse(CodeBadInput, "plan item %d: title %q, but its spec's title is %q", i+1, in.Title, it.Title)
		}
	}
	return t.importRevision(planKey, expectedRevision, items)
}

// importRevision is ImportRevision's and ImportPlan's compare-and-swap.
func (t *Tx) importRevision(planKey string, expectedRevision int, items []ItemInput) (int, error) {
	var rev int
	err := t.queryRow(`SELECT revision FROM plans WHERE key = ?`, planKey).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, refuse(CodeNotFound, "no plan %q", planKey)
	}
	if err != nil {
		return 0, err // a storage error, never the refusal a user action would record
	}
	if rev != expectedRevision {
		return 0, refuse(CodeStaleVersion, "plan is at revision %d, not %d", rev, expectedRevision)
	}
	return t.nextRevision(planKey, rev, items)
}

func (t *Tx) nextRevision(planKey string, rev int, items []ItemInput) (int, error) {
	next := rev + 1
	if _, err := t.exec(`UPDATE plans SET revision = ? WHERE key = ?`, next, planKey); err != nil {
		return 0, err
	}
	for i, it := range items {
		if _, err := t.exec(`INSERT INTO plan_items (plan_key, revision, item, title, spec) VALUES (?, ?, ?, ?, ?)`,
			planKey, next, i+1, it.Title, specText(it.Spec)); err != nil {
			return 0, err
		}
	}
	if err := t.invalidatePlanRequests(planKey); err != nil {
		return 0, err
	}
	return next, t.bumpContext(planKey)
}

// ApplySuggestion applies a suggested whole next revision of the plan.
func (t *Tx) ApplySuggestion(planKey string, expectedRevision int, items []string) (int, error) {
	return t.ImportRevision(planKey, expectedRevision, items)
}

// ChangeSnapshot records a new review snapshot for the plan.
func (t *Tx) ChangeSnapshot(planKey, snapshotID string) error {
	if snapshotID == "" {
		return refuse(CodeBadInput, "a snapshot ID is required")
	}
	res, err := t.exec(`UPDATE plans SET snapshot_id = ? WHERE key = ? AND snapshot_id <> ?`, snapshotID, planKey, snapshotID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // unchanged: nothing an attempt depends on moved
	}
	if err := t.invalidatePlanRequests(planKey); err != nil {
		return err
	}
	return t.bumpContext(planKey)
}

// Reassign gives the task's work to another assignment. The plan revision and
// snapshot stay, yet old attempts stop being current.
func (t *Tx) Reassign(planKey, assignmentID string) error {
	if assignmentID == "" {
		return refuse(CodeBadInput, "an assignment ID is required")
	}
	res, err := t.exec(`UPDATE tasks SET assignment_id = ? WHERE plan_key = ? AND assignment_id <> ?`, assignmentID, planKey, assignmentID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	return t.bumpContext(planKey)
}

// RecordHistory appends a ledger entry: the task's referenced code moves to
// commit. Publication calls it inside its own transaction, after its guards.
func (t *Tx) RecordHistory(planKey, attemptID, commit string) error {
	if commit == "" {
		return refuse(CodeBadInput, "a commit is required")
	}
	if _, err := t.exec(`INSERT INTO history (plan_key, attempt_id, commit_sha, created_at) VALUES (?, ?, ?, ?)`,
		planKey, nullStr(attemptID), commit, t.nowMS()); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET referenced_code_hash = ? WHERE plan_key = ?`, commit, planKey); err != nil {
		return err
	}
	return t.bumpContext(planKey)
}

// HistoryEntry is one ledger row.
type HistoryEntry struct {
	AttemptID string
	Commit    string
}

// History lists the task's ledger, oldest first.
func (t *Tx) History(planKey string) ([]HistoryEntry, error) {
	rows, err := t.query(`SELECT COALESCE(attempt_id, ''), commit_sha FROM history WHERE plan_key = ? ORDER BY id`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HistoryEntry
	for rows.Next() {
		var h HistoryEntry
		if err := rows.Scan(&h.AttemptID, &h.Commit); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
