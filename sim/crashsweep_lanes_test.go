package sim

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// The crash-point sweep's neighbouring lanes (issue 11): a question, a
// suggestion request and a merge run beside the runner's attempts, on the
// same loop and Store, so the sweep also crashes inside their events and
// commits. After each restart their startups run (Ask's, the merge
// coordinator's reconciliation, the failing of planning requests left
// pending) and checkLanes holds them to their invariants.

// reviewedTask creates a task in review with a one-item plan, approved: a
// task that can ask, plan and merge.
func reviewedTask(name string) step {
	return func(w *sweepWorld) bool {
		id := store.Identity{RepositoryID: "r", TaskID: name, PlanID: "p"}
		err := w.Store.Update(func(tx *store.Tx) error {
			if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}, Status: words.StatusInReview}); err != nil {
				return err
			}
			_, err := tx.Approve(id.Key(), 1)
			return err
		})
		if err == nil {
			w.keys[name] = id.Key()
		}
		return err == nil
	}
}

// askQuestion asks a question about task, named name.
func askQuestion(task, name string) step {
	return func(w *sweepWorld) bool {
		resp, _ := w.Ask.Ask(context.Background(), ask.Request{PlanKey: w.keys[task], ActionID: w.IDs.UUID(), Text: "why this order?"})
		if resp.AttemptID != "" {
			w.ids[name] = resp.AttemptID
			w.Alias(resp.AttemptID, name)
			w.questions = append(w.questions, resp.AttemptID)
		}
		return w.alive()
	}
}

// requestSuggestions starts a suggestion request for task; its provider is
// never settled by the workload, so it is pending whenever a crash comes.
func requestSuggestions(task string) step {
	return func(w *sweepWorld) bool {
		w.Suggest.Start(context.Background(), suggest.StartRequest{PlanKey: w.keys[task], Mode: store.ModeSuggestion,
			ExpectedRevision: 1, ExpectedSnapshot: "s1"})
		return w.alive()
	}
}

// clickMerge sets the task's pull request on the simulated GitHub and
// clicks Merge; what GitHub answers is answer.
func clickMerge(task, answer string) step {
	return func(w *sweepWorld) bool {
		key := w.keys[task]
		repo := "owner/" + task
		yes := true
		w.GitHub.SetPullRequest(repo, codehost.PullRequest{Number: 1, State: "open", HeadSHA: fmt.Sprintf("%040x", len(task)), Mergeable: &yes})
		w.TaskPRs[key] = PRRef{Repo: repo, Number: 1}
		w.GitHub.NextMerge(answer)
		t, _ := w.Store.Task(key)
		var plan store.Plan
		w.Store.View(func(tx *store.Tx) (err error) { plan, err = tx.Plan(key); return err })
		w.Merge.Merge(context.Background(), merge.Request{PlanKey: key, ActionID: w.IDs.UUID(),
			ExpectedStateVersion: t.StateVersion, ExpectedReviewVersion: plan.ReviewVersion})
		return w.alive()
	}
}

// startLanes checks the lanes' startup, which the restart ran in serve's
// order (package app): the merge coordinator's reconciliation, Ask's
// startup, and the failing of planning requests an earlier process left
// pending; checkLanes then checks what they did.
func (w *sweepWorld) startLanes(fail func(format string, args ...any)) {
	if w.Ask == nil || w.Merge == nil || w.Suggest == nil {
		fail("startup did not reach every lane: ask %v, merge %v, suggest %v", w.Ask != nil, w.Merge != nil, w.Suggest != nil)
		return
	}
	select {
	case <-w.Ask.Opened():
	default:
		fail("Ask's startup has not ended")
		return
	}
	if err := w.Ask.OpenErr(context.Background()); err != nil {
		fail("Ask's startup: %v", err)
	}
}

// checkLanes: no question, planning request or merge is left in flight by
// the crashed process; a question's task storage is gone; a merge GitHub
// merged is recorded merged, its task merged.
func (w *sweepWorld) checkLanes(fail func(format string, args ...any)) {
	for _, id := range w.questions {
		var q store.Question
		if err := w.Store.View(func(tx *store.Tx) (err error) { q, err = tx.Question(id); return err }); err != nil {
			continue // the crash came before its row committed
		}
		if !q.Terminal() {
			fail("question %s is still %s", w.Name(id), q.State)
		}
		if w.D.StoragePresent(id) {
			fail("the task storage of question %s is left behind", w.Name(id))
		}
	}
	for name, key := range w.keys {
		var reqs []store.PlanRequest
		var m store.MergeAttempt
		var hasMerge bool
		w.Store.View(func(tx *store.Tx) (err error) {
			if reqs, err = tx.PlanRequests(key); err != nil {
				return err
			}
			m, hasMerge, err = tx.LatestMerge(key)
			return err
		})
		for _, r := range reqs {
			if r.State == store.RequestPending {
				fail("planning request %s of %s is still pending", r.ID, name)
			}
		}
		if !hasMerge {
			continue
		}
		if m.State == store.MergeSubmitting {
			fail("merge %s of %s is still submitting after the reconciliation", m.ID, name)
		}
		ref := w.TaskPRs[key]
		var pr codehost.PullRequest
		w.GitHub.Update(ref.Repo, ref.Number, func(p *codehost.PullRequest) { pr = *p })
		task, _ := w.Store.Task(key)
		if pr.Merged != (m.State == store.MergeMerged) || pr.Merged != (task.Status == words.StatusMerged) {
			fail("task %s: GitHub merged %v, its merge %s, the task %s", name, pr.Merged, m.State, task.Status)
		}
	}
}
