package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
)

// TestFailedCommitIsAnErrorAndDropsAfterCommit: a COMMIT that SQLite itself
// refuses (here a deferred foreign key, tasks.current_attempt_id, checked
// only at COMMIT) is the transaction's error, its writes are gone, and the
// effects registered with AfterCommit never run: "it is dropped on rollback,
// including a failed COMMIT" (Tx.AfterCommit; the contract's "Rules for the
// running state", rule 1: "If the transaction rolls back, including when
// COMMIT itself fails, the stop is dropped").
//
// kills: mutant/failed-commit-reported-as-success
func TestFailedCommitIsAnErrorAndDropsAfterCommit(t *testing.T) {
	now := time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "codeboost.db"), Options{Now: func() time.Time { return now }, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}.Key()
	if err := s.Update(func(tx *Tx) error {
		return tx.CreateTask(NewTask{Identity: Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}, SnapshotID: "snap"})
	}); err != nil {
		t.Fatal(err)
	}
	ran := false
	err = s.Update(func(tx *Tx) error {
		tx.AfterCommit(func() { ran = true })
		if _, err := tx.exec(`UPDATE tasks SET current_attempt_id = 'no-such-attempt' WHERE plan_key = ?`, key); err != nil {
			return err
		}
		return tx.bump(key)
	})
	if err == nil {
		t.Fatalf("a COMMIT that failed was reported as success")
	}
	if ran {
		t.Errorf("an AfterCommit effect ran after a failed COMMIT")
	}
	task, err := s.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	if task.CurrentAttemptID != "" || task.StateVersion != 0 {
		t.Errorf("the failed transaction's writes stayed: %+v", task)
	}
}
