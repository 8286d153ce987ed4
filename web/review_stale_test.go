package web

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestReviewLoadNeverHidesAFailedApprovalsRead: the review load shows
// which items are approved at the present snapshot and which approvals
// an earlier snapshot left stale (the person approves those again before
// the item runs); a load whose read of either fails answers 500 rather
// than a view that quietly shows an item unapproved or no approval stale.
// Each of the load's statements fails in turn, over a view with one of
// each.
// Sweep survivor (seed 60221): web/review_api.go:Server.getReview:ignore-error:31d5f59c~6.
func TestReviewLoadNeverHidesAFailedApprovalsRead(t *testing.T) {
	f := newFixture(t, 2)
	if err := f.w.Store.Update(func(tx *store.Tx) error {
		if _, err := tx.Approve(f.key, 1); err != nil {
			return err
		}
		if err := tx.ChangeSnapshot(f.key, "s2"); err != nil {
			return err
		}
		_, err := tx.Approve(f.key, 2)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	base := f.do("GET", "/api/review?task=demo", nil)
	if base.Code != 200 || !strings.Contains(base.Body.String(), `"staleApproval":true`) || !strings.Contains(base.Body.String(), `"approved":true`) {
		t.Fatalf("review load with an approval from snapshot s1 and one from s2: %d %s", base.Code, base.Body)
	}
	reviewLoadIsWholeOr500(t, f, base)
}
