package store

import (
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// MergeAdmission is a merge click's admission: which merge attempt it
// begins, the versions the person saw, and the pull request and head the
// merge coordinator's read before admission found.
type MergeAdmission struct {
	PlanKey               string
	ID                    string // the new merge attempt's ID
	ActionID              string // the merge click, whose saved response follows the outcome
	ExpectedStateVersion  int64
	ExpectedReviewVersion int
	Repo                  string
	Number                int
	HeadSHA               string
}

// AdmitMerge is beginMergeAttempt with its guards, in the merge click's
// user-action transaction ("For a merge, the user_actions row is inserted
// in the same transaction as beginMergeAttempt"). It refuses a closed
// task, a pending cancel, an active runner attempt, a merge already
// submitting or queued, a task not in review, a stale state or review
// version, a plan with an item not approved, and, after the pull request
// left the merge queue (removed), a merge with no review since
// (requiresFreshReview).
func (t *Tx) AdmitMerge(a MergeAdmission) (MergeAttempt, error) {
	task, err := t.openTaskFor(a.PlanKey, "merge attempt ID", a.ID)
	if err != nil {
		return MergeAttempt{}, err
	}
	if err := ids.CheckUUID("action ID", a.ActionID); err != nil {
		return MergeAttempt{}, refuse(CodeBadInput, "%s", err.Error())
	}
	if task.StateVersion != a.ExpectedStateVersion {
		return MergeAttempt{}, refuse(CodeStaleVersion, "the task is at state version %d, not %d", task.StateVersion, a.ExpectedStateVersion)
	}
	plan, err := t.Plan(a.PlanKey)
	if err != nil {
		return MergeAttempt{}, err
	}
	if plan.ReviewVersion != a.ExpectedReviewVersion {
		return MergeAttempt{}, refuse(CodeStaleReview, "the review changed (review version %d, not %d): look at it again, then merge", plan.ReviewVersion, a.ExpectedReviewVersion)
	}
	if err := t.mergeable(a.PlanKey, task, plan); err != nil {
		return MergeAttempt{}, err
	}
	if err := t.BeginMergeAttempt(a.PlanKey, a.ID); err != nil {
		return MergeAttempt{}, err
	}
	if _, err := t.exec(`UPDATE merge_attempts SET pr_repo = ?, pr_number = ?, head_sha = ?, review_version = ?, action_id = ? WHERE id = ?`,
		a.Repo, a.Number, a.HeadSHA, plan.ReviewVersion, a.ActionID, a.ID); err != nil {
		return MergeAttempt{}, err
	}
	return t.MergeAttempt(a.ID)
}

// CheckMerge is AdmitMerge's guards at the present versions, writing
// nothing: GET /api/runner's mergeable, so that the screen offers Merge
// exactly when the click would be admitted (a merge attempt already
// submitting or queued included, which BeginMergeAttempt refuses).
func (t *Tx) CheckMerge(planKey string) error {
	task, err := t.openTask(planKey)
	if err != nil {
		return err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return err
	}
	if err := t.mergeable(planKey, task, plan); err != nil {
		return err
	}
	return t.noActiveMerge(planKey)
}

// mergeable is what a merge needs of the task and its plan, whatever
// versions the person saw: no active runner attempt, the task in review
// (or approved but merge blocked), a fresh review after the pull request
// left the merge queue, and every item of the present revision approved.
func (t *Tx) mergeable(planKey string, task Task, plan Plan) error {
	if err := t.noActiveAttempt(planKey, task); err != nil {
		return err
	}
	if task.Status != words.StatusInReview && task.Status != words.StatusMergeBlocked {
		return refuse(CodeTaskInactive, "a task merges from in review; this one is %s", task.Status)
	}
	last, ok, err := t.LatestMerge(planKey)
	if err != nil {
		return err
	}
	if ok && last.RequiresFreshReview && last.ReviewVersion >= plan.ReviewVersion {
		return refuse(CodeStaleReview, "the pull request left the merge queue: review the task again before merging")
	}
	items, err := t.PlanItems(planKey, plan.Revision)
	if err != nil {
		return err
	}
	approved, err := t.ApprovedItems(planKey)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return refuse(CodeNotApproved, "the plan has no items to merge")
	}
	for _, it := range items {
		if !approved[it.Item] {
			return refuse(CodeNotApproved, "plan item %d is not approved", it.Item)
		}
	}
	return nil
}
