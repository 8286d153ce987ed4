package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestResumeCountsOnlyTheCurrentRevisionsCompletedItems: resume "starts
// at the first item with no completed execute attempt at the current
// revision". An item completed at an earlier revision is work on another
// plan: after a new revision is imported, resume runs item 1 again, not
// the item after the old revision's completed one.
// Sweep survivor (seed 20261203): store/planrun.go:Tx.planProgress:drop-guard:32229d48.
func TestResumeCountsOnlyTheCurrentRevisionsCompletedItems(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.approveAll(key)
	e.executeItem(key, 1, words.Completed)
	e.executeItem(key, 2, words.Failed)
	if ps, err := e.resumePlan(key); err != nil || ps.Item != 2 {
		t.Fatalf("resume at revision 1 = %+v, %v; want item 2", ps, err)
	}
	e.update(func(tx *store.Tx) error {
		_, err := tx.ImportRevision(key, 1, []string{"one again", "two again"})
		return err
	})
	e.approveAll(key)
	ps, err := e.resumePlan(key)
	if err != nil || ps.Item != 1 || ps.Finished {
		t.Fatalf("resume at revision 2 = %+v, %v; want item 1 (nothing of revision 2 has run)", ps, err)
	}
}
