package store_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestApproveContinuationReportsAnUnreadablePrefixSpec: approve-continuation
// compares each item of the completed prefix as it ran (the checkpoint's
// revision) with the amended revision's ("every other item of the prefix is
// unchanged", and the owning item "differs from the checkpoint's item in its
// scope alone"). A stored spec on either side that no longer parses (a
// database another build or a failing disk left) is that read's error: never
// an item taken as declaring nothing, which would refuse the amendment as a
// change or let it through unchecked, and never a refusal. Nothing is
// written and the task stays paused.
func TestApproveContinuationReportsAnUnreadablePrefixSpec(t *testing.T) {
	for _, c := range []struct{ name, revision string }{
		{"as it ran", "1"},
		{"as amended", "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, key := amendedWithLaterItem(t, []string{"docs/x.md"}, `[{"op": "modify", "path": "docs/x.md"}]`)
			e.rawExec(`UPDATE plan_items SET spec = '{"title": 2' WHERE plan_key = ? AND item = 1 AND revision = `+c.revision, key)
			err := e.approve(key)
			if err == nil || store.RefusalCode(err) != "" || !strings.Contains(err.Error(), "plan item 1's spec") {
				t.Fatalf("approve with item 1's spec unreadable at revision %s: %v, want the spec's error", c.revision, err)
			}
			if n := e.rawInt(`SELECT COUNT(*) FROM continuation_approvals`); n != 0 || e.task(key).Status != words.StatusNeedsAmendment {
				t.Fatalf("the error left %d approvals and status %s", n, e.task(key).Status)
			}
		})
	}
}
