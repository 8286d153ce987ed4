package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/words"
)

// This file is the contract's "Scope continuation (#88)": a completed item
// whose runner commit holds paths outside the item's scope pauses the task
// for amendment with a checkpoint; a person amends the owning item so that
// it declares those paths and approves the continuation; resume then
// begins after the checkpoint's prefix and never reruns completed work.
//
// The checkpoint keeps the leaf entries of the runner commit's tree (D
// lists them when it takes the commit), so that approve-continuation
// validates the remaining plan against the recorded head's tree inside
// its one transaction, and GET /api/runner reads the checkpoint without
// Git.

// ScopeFinding is what the runner's publication found out of an item's
// scope: the changed paths the item does not declare, and the leaf
// entries of the commit that holds them (LeavesCut when D could not list
// them all, which leaves the checkpoint unable to validate a continuation).
type ScopeFinding struct {
	Paths     []string
	Leaves    []string
	LeavesCut bool
}

// Checkpoint is a scope checkpoint: the runner commit that recorded a scope
// finding, at the revision and item that made it. Prefix is the completed
// prefix it ends: the items up to and including Item, which resume never
// runs again once a continuation is approved.
type Checkpoint struct {
	AttemptID  string
	Revision   int
	Item       int
	Commit     string
	ScopePaths []string
	Leaves     []string // nil when D's listing was cut
	// Approval is the newest continuation approval of this checkpoint, or
	// nil; Current says whether it still admits (bound to the plan's
	// present revision and snapshot, and later than every choice).
	Approval *ContinuationApproval
}

// ContinuationApproval is one approve-continuation, bound to the revision
// and snapshot it was given at (the contract's v14), and to the completed
// prefix it continues after: the items up to PrefixItem, whose last commit
// (HeadCommit, by HeadAttempt) was the task's audited head when it was
// given.
type ContinuationApproval struct {
	Revision      int
	SnapshotID    string
	ReviewVersion int
	PrefixItem    int
	HeadAttempt   string
	HeadCommit    string
	Current       bool
}

// PauseForAmendment records a scope finding in the transaction that
// publishes the attempt's runner commit: the checkpoint (with the leaf
// entries of the commit's tree) and the task's move from running to needs
// amendment. It refuses unless the attempt completed this turn as an
// execute attempt of a plan item whose commit is the ledger's last entry,
// and the task is still running: a pause that cannot be committed leaves
// the ordinary blocker in place.
func (t *Tx) PauseForAmendment(attemptID string, f ScopeFinding) error {
	if len(f.Paths) == 0 {
		return refuse(CodeBadInput, "a scope finding names at least one path")
	}
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	if a.State != words.Completed || a.Kind != words.KindExecute || a.Item == nil {
		return refuse(CodeIllegal, "only a completed execute attempt of a plan item records a scope checkpoint, not a %s %s attempt", a.State, a.Kind)
	}
	task, err := t.openTask(a.PlanKey)
	if err != nil {
		return err
	}
	if task.Status != words.StatusRunning {
		return refuse(CodeTaskNotRunning, "the task is %s, so it cannot pause for amendment", task.Status)
	}
	entries, err := t.History(a.PlanKey)
	if err != nil {
		return err
	}
	if len(entries) == 0 || entries[len(entries)-1].AttemptID != a.ID {
		return refuse(CodeIllegal, "attempt %s's runner commit is not the task's head", a.ID)
	}
	scope, err := json.Marshal(f.Paths)
	if err != nil {
		return err
	}
	var leaves any // NULL: the listing was cut
	if !f.LeavesCut {
		b, err := json.Marshal(nonNil(f.Leaves))
		if err != nil {
			return err
		}
		leaves = string(b)
	}
	if _, err := t.exec(`INSERT INTO checkpoints (attempt_id, plan_key, revision, item, commit_sha, scope_paths, leaves, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.PlanKey, a.Context.PlanRevision, *a.Item,
		entries[len(entries)-1].Commit, string(scope), leaves, t.nowMS()); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsAmendment, a.PlanKey); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// LatestCheckpoint is the task's newest scope checkpoint, with its newest
// continuation approval: what GET /api/runner shows, read from rows alone.
func (t *Tx) LatestCheckpoint(planKey string) (cp Checkpoint, ok bool, err error) {
	var scope string
	var leaves sql.NullString
	err = t.queryRow(`SELECT attempt_id, revision, item, commit_sha, scope_paths, leaves FROM checkpoints
		WHERE plan_key = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`, planKey).
		Scan(&cp.AttemptID, &cp.Revision, &cp.Item, &cp.Commit, &scope, &leaves)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, err
	}
	if err := json.Unmarshal([]byte(scope), &cp.ScopePaths); err != nil {
		return cp, false, fmt.Errorf("store: checkpoint %s's scope paths: %w", cp.AttemptID, err)
	}
	if leaves.Valid {
		if err := json.Unmarshal([]byte(leaves.String), &cp.Leaves); err != nil {
			return cp, false, fmt.Errorf("store: checkpoint %s's leaves: %w", cp.AttemptID, err)
		}
		cp.Leaves = nonNil(cp.Leaves)
	}
	var ap ContinuationApproval
	err = t.queryRow(`SELECT revision, snapshot_id, review_version, prefix_item, head_attempt, head_commit FROM continuation_approvals
		WHERE plan_key = ? AND checkpoint = ? ORDER BY review_version DESC LIMIT 1`, planKey, cp.AttemptID).
		Scan(&ap.Revision, &ap.SnapshotID, &ap.ReviewVersion, &ap.PrefixItem, &ap.HeadAttempt, &ap.HeadCommit)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return cp, true, nil
	case err != nil:
		return cp, false, err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return cp, false, err
	}
	latestChoice, err := t.latestChoice(planKey)
	if err != nil {
		return cp, false, err
	}
	ap.Current = ap.Revision == plan.Revision && ap.SnapshotID == plan.SnapshotID && ap.ReviewVersion > latestChoice
	cp.Approval = &ap
	return cp, true, nil
}

func (t *Tx) latestChoice(planKey string) (int, error) {
	var v int
	err := t.queryRow(`SELECT COALESCE(MAX(review_version), 0) FROM choices WHERE plan_key = ?`, planKey).Scan(&v)
	return v, err
}

// continuation is the checkpoint whose continuation approval admits at the
// plan's present revision and snapshot, or nil.
func (t *Tx) continuation(planKey string) (*Checkpoint, error) {
	cp, ok, err := t.LatestCheckpoint(planKey)
	if err != nil || !ok || cp.Approval == nil || !cp.Approval.Current {
		return nil, err
	}
	return &cp, nil
}

// ApproveContinuation is approve-continuation, one transaction: the task
// waits in needs amendment on its newest checkpoint (or is queued or
// running between items with a continuation a later revision or choice
// made stale); the completed
// prefix still leads to the recorded head (auditedHead); the plan was
// amended since (a later revision) and its owning item now declares every
// out-of-scope path, with the prefix's other items unchanged; the remaining
// items' file operations fit the head's tree. Then it stores the approval
// for the present revision and snapshot, bound to that prefix, and moves
// the task to queued. Every refusal writes nothing.
func (t *Tx) ApproveContinuation(planKey string, expectedStateVersion int64, expectedReviewVersion int) (Checkpoint, error) {
	cp, p, head, err := t.continuationAdmits(planKey, expectedStateVersion, expectedReviewVersion)
	if err != nil {
		return Checkpoint{}, err
	}
	version, err := t.bumpReview(planKey)
	if err != nil {
		return Checkpoint{}, err
	}
	if _, err := t.exec(`INSERT INTO continuation_approvals (plan_key, checkpoint, revision, snapshot_id, review_version,
		prefix_item, head_attempt, head_commit, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		planKey, cp.AttemptID, p.Revision, p.SnapshotID, version, head.item, head.attempt, head.commit, t.nowMS()); err != nil {
		return Checkpoint{}, err
	}
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusQueued, planKey); err != nil {
		return Checkpoint{}, err
	}
	cp.Approval = &ContinuationApproval{Revision: p.Revision, SnapshotID: p.SnapshotID, ReviewVersion: version,
		PrefixItem: head.item, HeadAttempt: head.attempt, HeadCommit: head.commit, Current: true}
	return cp, t.bump(planKey)
}

// continuationAdmits is ApproveContinuation's guards, in its order,
// writing nothing: the checkpoint to continue from, the present plan and
// the audited head the approval binds.
func (t *Tx) continuationAdmits(planKey string, expectedStateVersion int64, expectedReviewVersion int) (cp Checkpoint, p Plan, head prefixEnd, err error) {
	task, err := t.openTask(planKey)
	if err != nil {
		return cp, p, head, err
	}
	cp, ok, err := t.LatestCheckpoint(planKey)
	if err != nil {
		return cp, p, head, err
	}
	// A further plan revision after an approved continuation leaves the
	// task queued, or running between items, with an approval that no
	// longer admits: "A further plan revision needs new approval against
	// the latest audited head", given from there.
	renewing := (task.Status == words.StatusQueued || task.Status == words.StatusRunning) && ok && cp.Approval != nil && !cp.Approval.Current
	if task.Status != words.StatusNeedsAmendment && !renewing {
		return cp, p, head, refuse(CodeTaskInactive, "approve-continuation needs a task in needs amendment, or one whose continuation no longer admits; this one is %s", task.Status)
	}
	if !ok {
		return cp, p, head, refuse(CodeIllegal, "the task has no scope checkpoint to continue from")
	}
	if err := t.noActiveAttempt(planKey, task); err != nil {
		return cp, p, head, err
	}
	if task.StateVersion != expectedStateVersion {
		return cp, p, head, refuse(CodeStaleVersion, "state version is %d, not %d", task.StateVersion, expectedStateVersion)
	}
	p, err = t.Plan(planKey)
	if err != nil {
		return cp, p, head, err
	}
	if err := reviewedAt(p, expectedReviewVersion); err != nil {
		return cp, p, head, err
	}
	if cp.Leaves == nil {
		return cp, p, head, refuse(CodeIllegal, "checkpoint %s could not keep its commit's tree (over %d entries), so no plan can be validated against it: start the plan again", cp.AttemptID, MaxCheckpointLeaves)
	}
	if p.Revision <= cp.Revision {
		return cp, p, head, refuse(CodeIllegal, "amend plan item %d to declare %s first: the plan is still at revision %d, the checkpoint's",
			cp.Item, strings.Join(cp.ScopePaths, ", "), p.Revision)
	}
	head, err = t.auditedHead(planKey, cp)
	if err != nil {
		return cp, p, head, err
	}
	ran, err := t.prefixItems(planKey, cp, head)
	if err != nil {
		return cp, p, head, err
	}
	if err := t.amendedPrefix(planKey, cp, p.Revision, ran); err != nil {
		return cp, p, head, err
	}
	items, err := t.PlanItems(planKey, p.Revision)
	if err != nil {
		return cp, p, head, err
	}
	if err := fitsTree(items, ran, cp.Item, cp.Leaves); err != nil {
		return cp, p, head, err
	}
	return cp, p, head, nil
}

// CheckApproveContinuation is ApproveContinuation's guards at the present
// versions, writing nothing: GET /api/runner's continuationApprovable,
// and, when it refuses, the words the screen shows beside the checkpoint.
func (t *Tx) CheckApproveContinuation(planKey string) error {
	task, err := t.Task(planKey)
	if err != nil {
		return err
	}
	p, err := t.Plan(planKey)
	if err != nil {
		return err
	}
	_, _, _, err = t.continuationAdmits(planKey, task.StateVersion, p.ReviewVersion)
	return err
}

// MaxCheckpointLeaves bounds the leaf entries one checkpoint keeps (D's
// own bound on a commit's listing).
const MaxCheckpointLeaves = 100000

// prefixEnd is where a completed prefix ends: its last item, and the
// ledger entry (attempt and commit) that item's work left as the head.
type prefixEnd struct {
	item            int
	attempt, commit string
}

// auditedHead is "the Store proves the completed prefix still leads to the
// recorded task head": the ledger's last entry is the checkpoint's own
// commit, or, when an approved continuation has run since, a commit of an
// item that continuation completed, every entry after the checkpoint's
// being such a commit, in item order ("The approval remains valid as that
// same revision completes more items only while their stored attempt
// contexts connect its snapshot to the current head"). That head is the
// latest audited one a further revision's approval continues from. Any
// other entry (a commit recorded from elsewhere, another revision's work)
// is a moved head.
func (t *Tx) auditedHead(planKey string, cp Checkpoint) (prefixEnd, error) {
	moved := refuse(CodeHeadMoved, "the task's head moved since checkpoint %s recorded %s: review the change and start the plan again", cp.AttemptID, cp.Commit)
	entries, err := t.History(planKey)
	if err != nil {
		return prefixEnd{}, err
	}
	at := -1
	for i, e := range entries {
		if e.AttemptID == cp.AttemptID && e.Commit == cp.Commit {
			at = i
		}
	}
	if at < 0 {
		return prefixEnd{}, moved
	}
	end := prefixEnd{item: cp.Item, attempt: cp.AttemptID, commit: cp.Commit}
	for _, e := range entries[at+1:] {
		if cp.Approval == nil || e.AttemptID == "" {
			return prefixEnd{}, moved
		}
		a, err := t.Attempt(e.AttemptID)
		if err != nil {
			return prefixEnd{}, err
		}
		if a.State != words.Completed || a.Kind != words.KindExecute || a.Item == nil ||
			a.Context.PlanRevision != cp.Approval.Revision || *a.Item <= end.item {
			return prefixEnd{}, moved
		}
		end = prefixEnd{item: *a.Item, attempt: a.ID, commit: e.Commit}
	}
	return end, nil
}

// prefixItems are the completed prefix's items as their work was done:
// up to the checkpoint's item at the checkpoint's revision, and after it,
// up to head's, at the revision the continuation that ran them approved.
func (t *Tx) prefixItems(planKey string, cp Checkpoint, head prefixEnd) ([]PlanItem, error) {
	was, err := t.PlanItems(planKey, cp.Revision)
	if err != nil {
		return nil, err
	}
	if len(was) < cp.Item {
		return nil, fmt.Errorf("store: checkpoint %s names item %d of revision %d, which has %d", cp.AttemptID, cp.Item, cp.Revision, len(was))
	}
	out := was[:cp.Item]
	if head.item > cp.Item {
		later, err := t.PlanItems(planKey, cp.Approval.Revision)
		if err != nil {
			return nil, err
		}
		if len(later) < head.item {
			return nil, fmt.Errorf("store: revision %d has no item %d", cp.Approval.Revision, head.item)
		}
		out = append(out[:len(out):len(out)], later[cp.Item:head.item]...)
	}
	return out, nil
}

// amendedPrefix is "The person amends the owning item so it declares every
// out-of-scope path": at the amended revision the owning item declares
// each scope path and differs from the checkpoint's item in its scope
// alone, and every other item of the prefix (ran) is unchanged, since the
// prefix's work was done for the items as they were.
func (t *Tx) amendedPrefix(planKey string, cp Checkpoint, revision int, ran []PlanItem) error {
	now, err := t.PlanItems(planKey, revision)
	if err != nil {
		return err
	}
	if len(now) < len(ran) {
		return refuse(CodeIllegal, "revision %d has %d items: it must keep the completed prefix, items 1 to %d", revision, len(now), len(ran))
	}
	for i, it := range ran {
		before, err := specOf(it)
		if err != nil {
			return err
		}
		after, err := specOf(now[i])
		if err != nil {
			return err
		}
		if it.Item != cp.Item {
			if !reflect.DeepEqual(before, after) {
				return refuse(CodeIllegal, "item %d changed in revision %d, but it is part of the completed prefix", it.Item, revision)
			}
			continue
		}
		for _, p := range cp.ScopePaths {
			if !after.InScope(p) {
				return refuse(CodeIllegal, "item %d of revision %d does not declare %s, which its commit changed outside its scope", cp.Item, revision, p)
			}
		}
		before.Scope, after.Scope = nil, nil
		if !reflect.DeepEqual(before, after) {
			return refuse(CodeIllegal, "item %d changed in revision %d beyond its scope paths; only its scope may be amended", cp.Item, revision)
		}
	}
	return nil
}

func specOf(it PlanItem) (plan.Item, error) {
	if len(it.Spec) == 0 {
		return plan.Item{Title: it.Title}, nil
	}
	s, err := plan.ParseSpec(it.Spec)
	if err != nil {
		return s, fmt.Errorf("store: plan item %d's spec: %w", it.Item, err)
	}
	return s, nil
}

// fitsTree validates the items after the prefix against the head's tree,
// in order, each operation seeing the ones before it: a create or a
// rename's target must not exist, a modify, a delete or a rename's source
// must. The tree is the checkpoint's leaves with the declared operations
// of the prefix's later items (ran, after the checkpoint's own) applied:
// the Store keeps no other commit's tree, and each of those items passed
// D's checkTaskTree against the real head before it ran, as every
// remaining item will before it runs.
func fitsTree(items, ran []PlanItem, checkpointItem int, leaves []string) error {
	tree := make(map[string]bool, len(leaves))
	for _, l := range leaves {
		tree[l] = true
	}
	for _, it := range ran[min(checkpointItem, len(ran)):] {
		if err := applyOps(tree, it, false); err != nil {
			return err
		}
	}
	for _, it := range items[min(len(ran), len(items)):] {
		if err := applyOps(tree, it, true); err != nil {
			return err
		}
	}
	return nil
}

// applyOps applies one item's declared file operations to tree; with
// check, an operation that does not fit is refused.
func applyOps(tree map[string]bool, it PlanItem, check bool) error {
	spec, err := specOf(it)
	if err != nil {
		return err
	}
	for _, op := range spec.Files {
		var why string
		switch op.Op {
		case plan.OpCreate:
			if tree[op.Path] {
				why = "it exists"
			}
			tree[op.Path] = true
		case plan.OpModify:
			if !tree[op.Path] {
				why = "it does not exist"
			}
		case plan.OpDelete:
			if !tree[op.Path] {
				why = "it does not exist"
			}
			delete(tree, op.Path)
		case plan.OpRename:
			switch {
			case !tree[op.Path]:
				why = "it does not exist"
			case tree[op.To]:
				why = fmt.Sprintf("%s exists", op.To)
			}
			delete(tree, op.Path)
			tree[op.To] = true
		}
		if check && why != "" {
			return refuse(CodeIllegal, "item %d's %s of %s does not fit the checkpoint's tree: %s", it.Item, op.Op, op.Path, why)
		}
	}
	return nil
}

// unreconciledCommits is "Commits from another revision without a scope
// checkpoint remain blocked because their prefix cannot yet be reconciled
// safely; earlier attempts that committed nothing do not block": a ledger
// entry made by an attempt at another plan revision refuses, unless the
// approved continuation's prefix covers it (an entry at or before the
// head that continuation was approved at).
func (t *Tx) unreconciledCommits(planKey string, p planProgress) error {
	entries, err := t.History(planKey)
	if err != nil {
		return err
	}
	covered := -1
	if p.continued != nil {
		for i, e := range entries {
			if e.AttemptID == p.continued.Approval.HeadAttempt {
				covered = i
			}
		}
	}
	for i, e := range entries {
		if e.AttemptID == "" || i <= covered {
			continue
		}
		a, err := t.Attempt(e.AttemptID)
		if err != nil {
			return err
		}
		if a.Context.PlanRevision != p.plan.Revision {
			return refuse(CodeUnreconciled, "runner commit %s was made at plan revision %d, not %d, with no scope checkpoint to continue from: review the task's commits",
				e.Commit, a.Context.PlanRevision, p.plan.Revision)
		}
	}
	return nil
}

// continuedPrefix folds an approved continuation into the progress: its
// prefix counts as completed at the present revision (the approval stands
// for every item of that revision and snapshot), and the prefix's head
// commit is part of the completed prefix the head guard follows.
func (p *planProgress) continuedPrefix(cp *Checkpoint) {
	if cp == nil {
		return
	}
	p.continued = cp
	p.executed = true
	for _, it := range p.items {
		if _, done := p.completed[it.Item]; !done && it.Item <= cp.Approval.PrefixItem {
			p.completed[it.Item] = p.plan.SnapshotID
		}
	}
	p.completedIDs[cp.AttemptID] = true
	p.completedIDs[cp.Approval.HeadAttempt] = true
}

// Progress is GET /api/runner's view of the plan run, read from rows
// alone: the items that count as completed at the present revision (an
// approved continuation's prefix among them), the next item a resume
// would admit (0 when none is left), and the newest scope checkpoint.
type Progress struct {
	CompletedItems []int
	NextItem       int
	Checkpoint     *Checkpoint
}

// Progress reads the plan run's progress; see Progress.
func (t *Tx) Progress(planKey string) (Progress, error) {
	p, err := t.planProgress(planKey)
	if err != nil {
		return Progress{}, err
	}
	var out Progress
	out.CompletedItems = make([]int, 0, len(p.completed))
	for it := range p.completed {
		out.CompletedItems = append(out.CompletedItems, it)
	}
	slices.Sort(out.CompletedItems)
	out.NextItem, _ = p.next()
	cp, ok, err := t.LatestCheckpoint(planKey)
	if err != nil {
		return Progress{}, err
	}
	if ok {
		out.Checkpoint = &cp
	}
	return out, nil
}
