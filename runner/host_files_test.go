package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestHostFilesNotRemovedHoldTheSlotUnderAMarker: once D settled and the
// terminal write is saved, the attempt directory is removed before the
// storage and the slot are let go. When that removal fails (here an
// immutable file inside it: the test runs as root, so a mode would not stop
// it), GET /api/runner's unresolved is { attemptId, reason:
// "preparation-not-removed" }: "the host-side preparation files could not
// be removed (before the terminal write when D never ran, after it once D
// settled)", and, as every unresolved marker, it holds the slot until
// startup recovery.
func TestHostFilesNotRemovedHoldTheSlotUnderAMarker(t *testing.T) {
	d := &goD{handles: map[string]*goHandle{}}
	c, st, key, attemptID := runningAttempt(t, d, words.KindReview)
	locked := filepath.Join(c.attemptDir(attemptID), "locked")
	if err := os.WriteFile(locked, []byte("cannot be removed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setImmutable(locked, true); err != nil {
		t.Skipf("cannot make a file immutable here: %v", err)
	}
	t.Cleanup(func() { setImmutable(locked, false) })

	d.mu.Lock()
	h := d.handles[attemptID]
	d.mu.Unlock()
	go h.settle(dadapter.Settlement{Output: []byte(`{"ok":true}`)})

	awaitState(t, st, attemptID, words.Completed) // the terminal write comes first
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.Status(key)
		if err != nil {
			t.Fatal(err)
		}
		if s.Unresolved != nil {
			if s.Unresolved.AttemptID != attemptID || s.Unresolved.Reason != words.PreparationNotRemoved {
				t.Errorf("unresolved %+v, want %s of %s", *s.Unresolved, words.PreparationNotRemoved, attemptID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no unresolved marker; slots used %d", c.SlotsUsed())
		}
		time.Sleep(time.Millisecond)
	}
	if n := c.SlotsUsed(); n != 1 {
		t.Errorf("%d slots used, want the marker's 1", n)
	}
}

// createTask creates one task and returns its plan key.
func createTask(t *testing.T, st *store.Store) string {
	t.Helper()
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
		t.Fatal(err)
	}
	return id.Key()
}
