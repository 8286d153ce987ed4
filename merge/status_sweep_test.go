package merge_test

import (
	"context"
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

// readsHost is a host whose reads answer with the caller's context error
// (or an open pull request), counting them; a merge never reaches it here.
type readsHost struct{ reads int }

func (h *readsHost) Issue(ctx context.Context, _ string, _ int) (codehost.Issue, error) {
	return codehost.Issue{}, ctx.Err()
}
func (h *readsHost) PullRequest(ctx context.Context, _ string, n int) (codehost.PullRequest, error) {
	h.reads++
	return codehost.PullRequest{}, ctx.Err()
}
func (h *readsHost) Merge(context.Context, string, int, string) (codehost.MergeResult, error) {
	panic("no merge in these tests")
}

func newMerge(t *testing.T, host codehost.Host) (*merge.Coordinator, *store.Store, *runner.GoroutineLoop) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	loop := runner.NewGoroutineLoop()
	t.Cleanup(loop.Stop)
	c, err := merge.New(merge.Config{Store: st, Capability: st.ShutdownCapability(), Host: host, Loop: loop, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, loop
}

// TestDisplayStatusOfATaskWithoutAMerge: a task that never merged shows no
// merge attempt (not a zero one), and a read that fails is returned, not
// shown as an empty attempt. Sweep survivor (seed 5150):
// merge/status.go:Coordinator.DisplayStatus:drop-guard:047675fa.
func TestDisplayStatusOfATaskWithoutAMerge(t *testing.T) {
	c, st, _ := newMerge(t, &readsHost{})
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}, Status: words.StatusInReview})
	}); err != nil {
		t.Fatal(err)
	}
	s, err := c.DisplayStatus(context.Background(), id.Key())
	if err != nil || s.Attempt != nil {
		t.Fatalf("status of a task that never merged: %+v, %v; want no attempt", s, err)
	}
	st.Close()
	if s, err := c.DisplayStatus(context.Background(), id.Key()); err == nil || s.Attempt != nil {
		t.Fatalf("status with the Store closed: %+v, %v; want the read's error", s, err)
	}
}

// TestDisplayStatusWhoseLoopCallNeverRan: a status whose caller's context
// ended before the in-flight check ran returns that error and reads
// nothing from GitHub; it does not go on as if no call were in flight.
// Sweep survivor (seed 5150):
// merge/status.go:Coordinator.DisplayStatus:ignore-error:85ea7245.
func TestDisplayStatusWhoseLoopCallNeverRan(t *testing.T) {
	host := &readsHost{}
	c, st, _ := newMerge(t, host)
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
	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(tx *store.Tx) error {
		p, err := tx.Plan(key)
		if err != nil {
			return err
		}
		_, err = tx.AdmitMerge(store.MergeAdmission{PlanKey: key, ID: ids.Random{}.UUID(), ActionID: ids.Random{}.UUID(),
			ExpectedStateVersion: task.StateVersion, ExpectedReviewVersion: p.ReviewVersion, Repo: "o/r", Number: 1, HeadSHA: "abc"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := c.DisplayStatus(ctx, key); err == nil {
		t.Fatalf("status with the caller's context ended: %+v and no error", s)
	}
	if host.reads != 0 {
		t.Fatalf("GitHub was read %d times for a status whose in-flight check never ran", host.reads)
	}
}
