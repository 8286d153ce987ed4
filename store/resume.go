package store

import (
	"github.com/codeboost/codeboost/words"
)

// ResumeItem is the Store half of "resume" (the contract's "Start and
// resume"): the task is running or queued and has started running (an
// execute attempt at any revision, or a requeue recovery left), with no
// pending cancel and no active merge; the run starts at the first item of
// the current revision with no completed execute attempt at that revision.
// The admission that follows claims requeue_pending by compare-and-swap in
// the same transaction, so of two racing resumes (or a resume and I3's
// requeue) exactly one admits. Approvals arrive with the review's execution
// gate; they are not checked here yet.
func (t *Tx) ResumeItem(planKey string) (item int, claim bool, err error) {
	task, err := t.Task(planKey)
	if err != nil {
		return 0, false, err
	}
	if words.Closed(task.Status) {
		return 0, false, refuse(CodeTaskClosed, "task is %s", task.Status)
	}
	if task.Status != words.StatusRunning && task.Status != words.StatusQueued {
		return 0, false, refuse(CodeTaskInactive, "resume needs a running or queued task; this one is %s", task.Status)
	}
	if task.CancelRequested != "" {
		return 0, false, refuse(CodeCancelPending, "cancel task is pending")
	}
	if active, err := t.activeMerge(planKey); err != nil {
		return 0, false, err
	} else if active != "" {
		return 0, false, refuse(CodeMergeActive, "merge attempt %s is still active", active)
	}
	var started int
	if err := t.queryRow(`SELECT COUNT(*) FROM attempts WHERE plan_key = ? AND kind = ?`, planKey, words.KindExecute).Scan(&started); err != nil {
		return 0, false, err
	}
	if started == 0 && !task.RequeuePending {
		return 0, false, refuse(CodeIllegal, "the task has not started running; start it instead")
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return 0, false, err
	}
	items, err := t.PlanItems(planKey, plan.Revision)
	if err != nil {
		return 0, false, err
	}
	done := map[int]bool{}
	rows, err := t.attemptsWhere(`plan_key = ? AND kind = ? AND state = ?`, planKey, words.KindExecute, words.Completed)
	if err != nil {
		return 0, false, err
	}
	for _, a := range rows {
		if a.Item != nil && a.Context.PlanRevision == plan.Revision {
			done[*a.Item] = true
		}
	}
	for _, it := range items {
		if !done[it.Item] {
			return it.Item, task.RequeuePending, nil
		}
	}
	return 0, false, refuse(CodeIllegal, "every item of revision %d has a completed execute attempt", plan.Revision)
}
