package runner

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// countingStore is the Store with its read transactions counted; it keeps
// the Store's change token.
type countingStore struct {
	*store.Store
	views *atomic.Int32
}

func (s countingStore) View(fn func(*store.Tx) error) error {
	s.views.Add(1)
	return s.Store.View(fn)
}

// tokenlessStore is a Store without the optional change token
// (changeTokens).
type tokenlessStore struct{ Store }

// TestStatusReadsTheRowsOncePerCommit: statusRows "reads the Store's part
// of a task's status, or reuses the last read of it while the Store's
// change token is unchanged: a screen polls several times a second, and
// these rows change only with a commit." Polls with no commit between
// them read the rows once; a commit makes the next poll read them again
// (and see the change); a Store that offers no change token is read on
// every poll.
func TestStatusReadsTheRowsOncePerCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tokens    bool
		wantReads []int32 // total reads after poll, poll, commit + poll, poll
	}{
		{"change token", true, []int32{1, 1, 2, 2}},
		{"no change token", false, []int32{1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, st, _ := productionCoordinator(t, 1, &goD{})
			views := new(atomic.Int32)
			if tc.tokens {
				c.deps.Store = countingStore{st, views}
			} else {
				c.deps.Store = tokenlessStore{countingStore{st, views}}
			}
			if err := c.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
			if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
				t.Fatal(err)
			}
			base := views.Load()
			poll := func(i int) Status {
				t.Helper()
				s, err := c.Status(id.Key())
				if err != nil {
					t.Fatal(err)
				}
				if got := views.Load() - base; got != tc.wantReads[i] {
					t.Errorf("after poll %d: %d reads of the rows, want %d", i+1, got, tc.wantReads[i])
				}
				return s
			}
			poll(0)
			poll(1)
			if err := st.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(id.Key(), words.StatusNeedsHuman) }); err != nil {
				t.Fatal(err)
			}
			if s := poll(2); s.Task.Status != words.StatusNeedsHuman {
				t.Errorf("the poll after a commit answered the old rows (status %q)", s.Task.Status)
			}
			poll(3)
		})
	}
}
