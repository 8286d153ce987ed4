package merge_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// sweep2Host answers every pull request read with pr, or with err when set;
// a merge never reaches it here.
type sweep2Host struct {
	pr  codehost.PullRequest
	err error
}

func (h *sweep2Host) Issue(context.Context, string, int) (codehost.Issue, error) {
	return codehost.Issue{}, h.err
}
func (h *sweep2Host) PullRequest(context.Context, string, int) (codehost.PullRequest, error) {
	return h.pr, h.err
}
func (h *sweep2Host) Merge(context.Context, string, int, string) (codehost.MergeResult, error) {
	panic("no merge in these tests")
}

// sweep2Setup is a merge coordinator whose tasks all name o/r#1, and one
// approved task in review.
func sweep2Setup(t *testing.T, host codehost.Host) (*merge.Coordinator, *store.Store, *runner.GoroutineLoop, string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := runner.NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	c, err := merge.New(merge.Config{Store: st, Capability: st.ShutdownCapability(), Host: host, Loop: loop, IDs: ids.Random{},
		PullRequest: func(string) (string, int, bool) { return "o/r", 1, true }})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, loop, approvedTaskInReview(t, st)
}

// approvedTaskInReview creates task t1, in review with its one item
// approved: a task a merge click is admitted for. It returns its key.
func approvedTaskInReview(t *testing.T, st *store.Store) string {
	t.Helper()
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	key := id.Key()
	if err := st.Update(func(tx *store.Tx) error {
		if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}, Status: words.StatusInReview}); err != nil {
			return err
		}
		_, err := tx.Approve(key, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestMergeWhoseLoopHasStopped: a merge click read GitHub, but the loop
// stopped before its admission event could run: the click gets the loop's
// error (not a blank success), and nothing is recorded, so the same click
// can be sent again.
//
// Sweep survivor (seed 20261203): merge/admission.go:Coordinator.Merge:ignore-error:66dbdf47.
func TestMergeWhoseLoopHasStopped(t *testing.T) {
	yes := true
	host := &sweep2Host{pr: codehost.PullRequest{Number: 1, State: "open", HeadSHA: "abc", Mergeable: &yes}}
	c, st, loop, key := sweep2Setup(t, host)
	loop.Stop()
	r := merge.Request{PlanKey: key, ActionID: ids.Random{}.UUID(), ExpectedStateVersion: 1, ExpectedReviewVersion: 1}
	resp, err := c.Merge(context.Background(), r)
	if !errors.Is(err, runner.ErrStopped) {
		t.Fatalf("Merge with the loop stopped = %+v, %v; want %v", resp, err, runner.ErrStopped)
	}
	var active []store.MergeAttempt
	if err := st.View(func(tx *store.Tx) (err error) { active, err = tx.ActiveMerges(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(active) != 0 {
		t.Errorf("merge attempts after a click whose admission never ran: %+v", active)
	}
}

// TestReconcileWhenGitHubCannotBeRead: at startup, a submitting attempt
// whose pull request cannot be read is left as it is ("A read that fails
// leaves the attempt as it is"), never judged from an empty answer (which
// would end it as closed without a merge).
//
// Sweep survivor (seed 20261203): merge/status.go:Coordinator.Reconcile:ignore-error:31d5f59c.
func TestReconcileWhenGitHubCannotBeRead(t *testing.T) {
	host := &sweep2Host{err: fmt.Errorf("%w: GitHub is down", codehost.ErrUnavailable)}
	c, st, _, key := sweep2Setup(t, host)
	mergeID := ids.Random{}.UUID()
	if err := st.Update(func(tx *store.Tx) error {
		task, err := tx.Task(key)
		if err != nil {
			return err
		}
		p, err := tx.Plan(key)
		if err != nil {
			return err
		}
		_, err = tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: mergeID, ActionID: ids.Random{}.UUID(),
			ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: p.ReviewVersion, Repo: "o/r", Number: 1, HeadSHA: "abc"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var m store.MergeAttempt
	if err := st.View(func(tx *store.Tx) (err error) { m, err = tx.MergeAttempt(mergeID); return err }); err != nil {
		t.Fatal(err)
	}
	if m.State != store.MergeSubmitting {
		t.Errorf("attempt after a startup whose GitHub read failed: %+v; want it still %s", m, store.MergeSubmitting)
	}
}
