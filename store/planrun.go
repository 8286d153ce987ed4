package store

import (
	"github.com/codeboost/codeboost/words"
)

// This file is the Store half of the contract's "Start and resume": the
// approval gate, the checks both actions share, start's and resume's own
// conditions, and the item executor's check before each later item. The
// runner holds the run itself (runner/planrun.go); every check here runs in
// the transaction that admits the item, so a refusal rolls back the action's
// own writes (start's move from in review to queued among them).
//
// Scope checkpoints and their approved continuations are continuation.go;
// planProgress folds an approved continuation's prefix in. Not here yet:
// owed scope work (a scope pause held in memory when its save failed). The
// owed safety finding is OweFinding (transitions.go), acted on by the
// runner.

// Approve records a person's approval of one item of the current plan
// revision at the current snapshot. It takes the next review version, so an
// approval saved while a plan run is under way stops that run before its
// next item (the run owns the review version it started with), and so the
// gate can tell it is later than every choice.
func (t *Tx) Approve(planKey string, item int) (reviewVersion int, err error) {
	plan, err := t.openItem(planKey, item)
	if err != nil {
		return 0, err
	}
	version, err := t.bumpReview(planKey)
	if err != nil {
		return 0, err
	}
	if _, err := t.exec(`INSERT INTO approvals (plan_key, revision, item, snapshot_id, review_version, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (plan_key, revision, item, snapshot_id) DO UPDATE SET review_version = excluded.review_version,
		created_at = excluded.created_at`, planKey, plan.Revision, item, plan.SnapshotID, version, t.nowMS()); err != nil {
		return 0, err
	}
	return version, t.bump(planKey)
}

// bumpReview advances the plan's review version: every choice, note and
// approval takes the next one.
func (t *Tx) bumpReview(planKey string) (int, error) {
	var version int
	err := t.queryRow(`UPDATE plans SET review_version = review_version + 1 WHERE key = ? RETURNING review_version`, planKey).Scan(&version)
	return version, err
}

// planProgress is what both actions and the item executor read: the current
// plan, its items, and for each item completed at the current revision the
// snapshot its execute attempt used.
type planProgress struct {
	plan      Plan
	items     []PlanItem
	completed map[int]string // item → snapshot of its completed execute attempt
	// completedIDs are the completed execute attempts at the current
	// revision: the completed prefix, whose commits move the head.
	completedIDs map[string]bool
	executed     bool // any execute attempt at the current revision, or an approved continuation
	// continued is the checkpoint whose approved continuation admits at
	// the present revision and snapshot: its prefix counts as completed.
	continued *Checkpoint
}

func (t *Tx) planProgress(planKey string) (planProgress, error) {
	var p planProgress
	var err error
	if p.plan, err = t.Plan(planKey); err != nil {
		return p, err
	}
	if p.items, err = t.PlanItems(planKey, p.plan.Revision); err != nil {
		return p, err
	}
	rows, err := t.attemptsWhere(`plan_key = ? AND kind = ?`, planKey, words.KindExecute)
	if err != nil {
		return p, err
	}
	p.completed, p.completedIDs = map[int]string{}, map[string]bool{}
	for _, a := range rows {
		if a.Context.PlanRevision != p.plan.Revision {
			continue
		}
		p.executed = true
		if a.State == words.Completed && a.Item != nil {
			p.completed[*a.Item] = a.Context.SnapshotID
			p.completedIDs[a.ID] = true
		}
	}
	cp, err := t.continuation(planKey)
	if err != nil {
		return p, err
	}
	p.continuedPrefix(cp)
	return p, nil
}

// prefixHeadGuard is resume's "A completed prefix must still end at the
// task's current head; a moved head refuses instead of silently skipping
// earlier items." The completed prefix's own commits move the head as
// expected, through the ledger; so when the prefix made a commit, the
// ledger's last entry must be one of the prefix's. An entry after it (a
// commit recorded from elsewhere, or another attempt's) is a moved head,
// even one that moved back to the same commit: the ledger, not the SHA,
// tells a moved-and-returned head from the runner's own movement. A
// prefix that committed nothing left no entry to compare with; its head
// is the one its attempts captured, which the context guards keep.
func (t *Tx) prefixHeadGuard(planKey string, p planProgress) error {
	if len(p.completedIDs) == 0 {
		return nil
	}
	entries, err := t.History(planKey)
	if err != nil {
		return err
	}
	last := -1
	for i, e := range entries {
		if p.completedIDs[e.AttemptID] {
			last = i
		}
	}
	if last < 0 || last == len(entries)-1 {
		return nil
	}
	moved := entries[len(entries)-1]
	return refuse(CodeHeadMoved, "the task's head moved since its completed items: item commits end at %s, the ledger now ends at %s; review the change and start the plan again",
		entries[last].Commit, moved.Commit)
}

// next is the first item with no completed execute attempt at the current
// revision; ok is false when every item has one.
func (p planProgress) next() (item int, ok bool) {
	for _, it := range p.items {
		if _, done := p.completed[it.Item]; !done {
			return it.Item, true
		}
	}
	return 0, false
}

// approvalGate is "Both require an approval for every item at the current
// plan revision".
func (t *Tx) approvalGate(planKey string, p planProgress) error {
	approved, err := t.approvedItems(planKey, p)
	if err != nil {
		return err
	}
	for _, it := range p.items {
		if !approved[it.Item] {
			return refuse(CodeNotApproved, "item %d of revision %d has no current approval", it.Item, p.plan.Revision)
		}
	}
	return nil
}

// ApprovedItems says, for each item of the current plan revision, whether
// it holds an approval the execution gate accepts, so the review screen
// marks any other as needing (re)approval.
func (t *Tx) ApprovedItems(planKey string) (map[int]bool, error) {
	p, err := t.planProgress(planKey)
	if err != nil {
		return nil, err
	}
	return t.approvedItems(planKey, p)
}

// StaleApprovals lists the items of the current plan revision that hold an
// approval the execution gate rejects: saved before a later choice, or
// from a snapshot the item may no longer run on. "The review UI marks any
// approval this execution gate rejects as stale so the reviewer can
// replace it" ("Start and resume").
func (t *Tx) StaleApprovals(planKey string) (map[int]bool, error) {
	p, err := t.planProgress(planKey)
	if err != nil {
		return nil, err
	}
	approved, err := t.approvedItems(planKey, p)
	if err != nil {
		return nil, err
	}
	rows, err := t.query(`SELECT DISTINCT item FROM approvals WHERE plan_key = ? AND revision = ?`, planKey, p.plan.Revision)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stale := map[int]bool{}
	for rows.Next() {
		var item int
		if err := rows.Scan(&item); err != nil {
			return nil, err
		}
		if !approved[item] {
			stale[item] = true
		}
	}
	return stale, rows.Err()
}

// approvedItems is the gate's rule: each approval must be later than the
// latest choice; an item not yet completed needs one from the current
// snapshot; a completed item keeps one from the snapshot its execution
// used (or the current one).
func (t *Tx) approvedItems(planKey string, p planProgress) (map[int]bool, error) {
	latestChoice, err := t.latestChoice(planKey)
	if err != nil {
		return nil, err
	}
	rows, err := t.query(`SELECT item, snapshot_id FROM approvals WHERE plan_key = ? AND revision = ? AND review_version > ?`,
		planKey, p.plan.Revision, latestChoice)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	approved := map[int]map[string]bool{}
	for rows.Next() {
		var item int
		var snapshot string
		if err := rows.Scan(&item, &snapshot); err != nil {
			return nil, err
		}
		if approved[item] == nil {
			approved[item] = map[string]bool{}
		}
		approved[item][snapshot] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[int]bool, len(p.items))
	for _, it := range p.items {
		ok := approved[it.Item][p.plan.SnapshotID]
		if used, done := p.completed[it.Item]; done && approved[it.Item][used] {
			ok = true
		}
		// An approved continuation is the person's approval of this
		// revision and snapshot, validated against the checkpoint's tree.
		out[it.Item] = ok || p.continued != nil
	}
	return out, nil
}

// runnable holds the refusals start and resume share, in the contract's
// order: a closed task, a pending cancel, an active attempt, an active merge.
// ("A runner that cannot run execute attempts" and "an earlier run still
// finishing" are the runner's in-memory checks.)
func (t *Tx) runnable(planKey string) (Task, error) {
	task, err := t.openTask(planKey)
	if err != nil {
		return task, err
	}
	if task.CancelRequested != "" {
		return task, refuse(CodeCancelPending, "cancel task is pending")
	}
	if active, err := t.activeAttempt(planKey); err != nil {
		return task, err
	} else if active != "" {
		return task, refuse(CodeActiveAttempt, "attempt %s is still active", active)
	}
	if active, err := t.activeMerge(planKey); err != nil {
		return task, err
	} else if active != "" {
		return task, refuse(CodeMergeActive, "merge attempt %s is still active", active)
	}
	return task, nil
}

func checkReviewVersion(p planProgress, expected int) error { return reviewedAt(p.plan, expected) }

// reviewedAt refuses an action taken on a review the plan has since moved
// past: start, resume and an approval send the review version they saw.
func reviewedAt(p Plan, expected int) error {
	if p.ReviewVersion != expected {
		return refuse(CodeStaleReview, "review version is %d, not %d: review the plan again", p.ReviewVersion, expected)
	}
	return nil
}

// ApproveReviewed is a person's approval of one item, given at the review
// version they saw: refused if the review has moved on since (a choice,
// note or other approval saved meanwhile), as start and resume are.
func (t *Tx) ApproveReviewed(planKey string, item, expectedReviewVersion int) (reviewVersion int, err error) {
	p, err := t.Plan(planKey)
	if err != nil {
		return 0, err
	}
	if err := reviewedAt(p, expectedReviewVersion); err != nil {
		return 0, err
	}
	return t.Approve(planKey, item)
}

// PlanStart is what the admitting transaction of "start" or "resume" needs:
// the item to admit, the state version admission must see, and whether it
// claims requeue_pending.
type PlanStart struct {
	Item                 int
	ExpectedStateVersion int64
	ClaimRequeue         bool
	// Finished says resume found no item left to run: every item of the
	// current revision has completed, and the run that ran them never
	// moved the task to in review (a crash or a shutdown came between its
	// last item and that move). The caller finishes the run (FinishPlanRun)
	// instead of admitting anything.
	Finished bool
}

// StartPlan is "start": a task in review or queued, with no execute attempt
// at its current plan revision and no pending requeue (that is resume's),
// every item approved; an in review task moves to queued in this same
// transaction. The run starts at the first item.
func (t *Tx) StartPlan(planKey string, expectedStateVersion int64, expectedReviewVersion int) (PlanStart, error) {
	start, task, err := t.startChecks(planKey, expectedStateVersion, expectedReviewVersion)
	if err != nil {
		return PlanStart{}, err
	}
	if task.Status == words.StatusInReview {
		if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusQueued, planKey); err != nil {
			return PlanStart{}, err
		}
		if err := t.bump(planKey); err != nil {
			return PlanStart{}, err
		}
		start.ExpectedStateVersion++
	}
	return start, nil
}

// startChecks is every check of "start", with no write.
func (t *Tx) startChecks(planKey string, expectedStateVersion int64, expectedReviewVersion int) (PlanStart, Task, error) {
	task, err := t.runnable(planKey)
	if err != nil {
		return PlanStart{}, task, err
	}
	if task.Status != words.StatusInReview && task.Status != words.StatusQueued {
		return PlanStart{}, task, refuse(CodeTaskInactive, "start needs a task in review or queued; this one is %s", task.Status)
	}
	if task.RequeuePending {
		return PlanStart{}, task, refuse(CodeRequeuePending, "recovery listed this task to requeue; resume it instead")
	}
	if task.StateVersion != expectedStateVersion {
		return PlanStart{}, task, refuse(CodeStaleVersion, "state version is %d, not %d", task.StateVersion, expectedStateVersion)
	}
	p, err := t.planProgress(planKey)
	if err != nil {
		return PlanStart{}, task, err
	}
	if err := t.unreconciledCommits(planKey, p); err != nil {
		return PlanStart{}, task, err
	}
	if p.executed {
		return PlanStart{}, task, refuse(CodeIllegal, "revision %d has already started running; resume it instead", p.plan.Revision)
	}
	if err := checkReviewVersion(p, expectedReviewVersion); err != nil {
		return PlanStart{}, task, err
	}
	if err := t.approvalGate(planKey, p); err != nil {
		return PlanStart{}, task, err
	}
	item, ok := p.next()
	if !ok {
		return PlanStart{}, task, refuse(CodeIllegal, "revision %d has no items", p.plan.Revision)
	}
	return PlanStart{Item: item, ExpectedStateVersion: expectedStateVersion}, task, nil
}

// CanStart and CanResume are GET /api/runner's startable and resumable,
// "computed by the same checks" as the actions against the present state
// and review versions, with no write: nil means the Store would admit.
func (t *Tx) CanStart(planKey string) error {
	sv, rv, err := t.versions(planKey)
	if err != nil {
		return err
	}
	_, _, err = t.startChecks(planKey, sv, rv)
	return err
}

// CanResume: see CanStart.
func (t *Tx) CanResume(planKey string) error {
	sv, rv, err := t.versions(planKey)
	if err != nil {
		return err
	}
	_, err = t.ResumePlan(planKey, sv, rv)
	return err
}

func (t *Tx) versions(planKey string) (int64, int, error) {
	task, err := t.Task(planKey)
	if err != nil {
		return 0, 0, err
	}
	plan, err := t.Plan(planKey)
	return task.StateVersion, plan.ReviewVersion, err
}

// ResumePlan is "resume": a task running or queued that has started running
// (an execute attempt at any revision, or a requeue recovery left), every
// item approved; the run starts at the first item with no completed execute
// attempt at the current revision, whether the last item completed, failed
// or was stopped. When every item has completed, resume finishes the run
// (PlanStart.Finished) as its last item's run would have: a task left
// running with nothing to run is never left for a person who can do
// nothing about it. The admission claims requeue_pending by compare-and-swap
// in the same transaction, so of two racing resumes (or a resume and I3's
// requeue) exactly one admits.
func (t *Tx) ResumePlan(planKey string, expectedStateVersion int64, expectedReviewVersion int) (PlanStart, error) {
	task, err := t.runnable(planKey)
	if err != nil {
		return PlanStart{}, err
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return PlanStart{}, refuse(CodeTaskInactive, "resume needs a running or queued task; this one is %s", task.Status)
	}
	var started int
	if err := t.queryRow(`SELECT COUNT(*) FROM attempts WHERE plan_key = ? AND kind = ?`, planKey, words.KindExecute).Scan(&started); err != nil {
		return PlanStart{}, err
	}
	if started == 0 && !task.RequeuePending {
		return PlanStart{}, refuse(CodeIllegal, "the task has not started running; start it instead")
	}
	p, err := t.planProgress(planKey)
	if err != nil {
		return PlanStart{}, err
	}
	if err := t.unreconciledCommits(planKey, p); err != nil {
		return PlanStart{}, err
	}
	if err := checkReviewVersion(p, expectedReviewVersion); err != nil {
		return PlanStart{}, err
	}
	if err := t.approvalGate(planKey, p); err != nil {
		return PlanStart{}, err
	}
	if err := t.prefixHeadGuard(planKey, p); err != nil {
		return PlanStart{}, err
	}
	item, ok := p.next()
	if !ok {
		return PlanStart{ExpectedStateVersion: expectedStateVersion, ClaimRequeue: task.RequeuePending, Finished: true}, nil
	}
	return PlanStart{Item: item, ExpectedStateVersion: expectedStateVersion, ClaimRequeue: task.RequeuePending}, nil
}

// FinishPlanRun ends a plan run whose every item completed: the task moves
// to in review, for a person to review the work before merge (the contract
// leaves that status to the review flow; in review is the one status from
// which start does not run the same revision again), and its run's review
// version and any requeue claim are cleared.
func (t *Tx) FinishPlanRun(planKey string) error {
	if _, err := t.exec(`UPDATE tasks SET status = ?, run_review_version = NULL, requeue_pending = 0 WHERE plan_key = ?`,
		words.StatusInReview, planKey); err != nil {
		return err
	}
	return t.bump(planKey)
}

// NextPlanItem is the item executor's check before each later item of a
// run: the review version the action started with is unchanged (a choice,
// approval or note saved while the earlier item ran stops the run), the
// task is still open and running with no pending cancel, and every item is
// still approved. When no item is left, the run is finished in this same
// transaction (FinishPlanRun).
func (t *Tx) NextPlanItem(planKey string, reviewVersion int) (next PlanStart, finished bool, err error) {
	task, err := t.runnable(planKey)
	if err != nil {
		return next, false, err
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return next, false, refuse(CodeTaskInactive, "task is %s", task.Status)
	}
	p, err := t.planProgress(planKey)
	if err != nil {
		return next, false, err
	}
	if p.plan.ReviewVersion != reviewVersion {
		return next, false, refuse(CodeStaleReview, "the review changed while the run was under way (version %d, the run started at %d): review and resume", p.plan.ReviewVersion, reviewVersion)
	}
	item, ok := p.next()
	if !ok {
		return next, true, t.FinishPlanRun(planKey)
	}
	if err := t.approvalGate(planKey, p); err != nil {
		return next, false, err
	}
	return PlanStart{Item: item, ExpectedStateVersion: task.StateVersion, ClaimRequeue: task.RequeuePending}, false, nil
}
