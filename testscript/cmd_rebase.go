package testscript

import (
	"fmt"

	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// The rebase marker (issue 3, item 9): F3 records a rebase in progress
// before it starts one, and clears it by compare-and-swap.

func init() {
	register(
		Command{Name: "rebase-mark", Kind: Action, Usage: "[!] rebase-mark TASK ATTEMPT",
			Summary: "records a rebase in progress for the task (tasks.rebase_in_progress = {\"attemptId\": …}, compare-and-swap from null), as F3 does before it starts a rebase",
			Example: "rebase-mark T1 A", Run: cmdRebaseMark},
		Command{Name: "rebase-abort", Kind: Action, Usage: "[!] rebase-abort TASK ATTEMPT",
			Summary: "clears the task's rebase marker by compare-and-swap on ATTEMPT; prints whether this call cleared it",
			Example: "rebase-abort T1 A", Run: cmdRebaseAbort},
		Command{Name: "rebase-marker", Kind: Assertion, Usage: "rebase-marker TASK ATTEMPT|none",
			Summary: "asserts the attempt the task's rebase marker names, or that there is none",
			Example: "rebase-marker T1 none", Run: cmdRebase},
	)
}

func cmdRebaseMark(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: rebase-mark TASK ATTEMPT")
	}
	s := get(ts)
	key, id := s.planKey(ts, a.pos[0]), s.attempt(ts, a.pos[1])
	err := s.world(ts).Store.Update(func(tx *store.Tx) error { return tx.SetRebaseInProgress(key, id) })
	s.expect(ts, neg, "rebase-mark", err)
}

func cmdRebaseAbort(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: rebase-abort TASK ATTEMPT")
	}
	s := get(ts)
	key, id := s.planKey(ts, a.pos[0]), s.attempt(ts, a.pos[1])
	var ok bool
	err := s.world(ts).Store.Update(func(tx *store.Tx) (err error) { ok, err = tx.AbortRebase(key, id); return err })
	s.expect(ts, neg, "rebase-abort", err)
	fmt.Fprintf(ts.Stdout(), "cleared: %v\n", ok)
}

func cmdRebase(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: rebase-marker TASK ATTEMPT|none")
	}
	s := get(ts)
	w := s.world(ts)
	key := s.planKey(ts, a.pos[0])
	var list []store.Rebase
	if err := w.Store.View(func(tx *store.Tx) (err error) { list, err = tx.RebasesInProgress(); return err }); err != nil {
		s.fatal(ts, "rebase: %v", err)
	}
	got := "none"
	for _, r := range list {
		if r.PlanKey == key {
			got = w.Name(r.AttemptID)
		}
	}
	s.compare(ts, "rebase marker of "+a.pos[0], map[string]string{"attempt": a.pos[1]}, map[string]string{"attempt": got})
}
