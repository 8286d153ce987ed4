package testscript

import (
	"context"
	"fmt"
	"strconv"

	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Merge attempts: their rows written by hand through the Store's own
// methods (issue 3, item 9), and the merge coordinator (package merge): a
// merge click, displayStatus, shutdown's step 1 and step 3 for merges, and
// the startup reconciliation. The HTTP routes are driven with http-begin
// POST /api/merge and GET /api/merge.

func init() {
	register(
		Command{Name: "merge-begin", Kind: Action, Keys: []Key{K("as", Name)}, Usage: "[!] merge-begin TASK as=NAME",
			Summary: "records a merge attempt of the task as submitting (BeginMergeAttempt) and names it",
			Example: "merge-begin T1 as=M", Run: cmdMergeBegin},
		Command{Name: "set-merge-state", Kind: Action, Usage: "[!] set-merge-state MERGE queued|removed|failed|merged",
			Summary: "records a merge attempt's next state; merged is the confirmed outcome (FinishMergeMerged: attempt merged, task merged and task-closed in one transaction)",
			Example: "set-merge-state M merged", Run: cmdMergeState},
		Command{Name: "merge-row", Kind: Assertion, Keys: []Key{K("state", Text), K("fresh", Bool), K("reason", Text), K("reason~", Regexp), K("head", Text)}, Usage: "merge-row MERGE [state=S] [fresh=BOOL] [reason=TEXT] [reason~=REGEXP] [head=SHA]",
			Summary: "asserts a merge attempt's durable row: its state, whether it requires a fresh review (after removed), its reason",
			Example: "merge-row M state=queued", Run: cmdMerge},
		Command{Name: "merge-click", Kind: Action, Keys: []Key{K("as", Name), K("action", ActionName), K("sv", Int), K("rv", Int)}, Usage: "[!] merge-click TASK [as=NAME] [action=NAME] [sv=N] [rv=N]",
			Summary: "a merge click straight at the merge coordinator: its GitHub read, then the user action (beginMergeAttempt and its guards), then the final check, the boundary and the merge command; names the attempt",
			Example: "merge-click T1 as=M action=m1", Run: cmdMergeClick},
		Command{Name: "read-merge-status", Kind: Action, Usage: "[!] read-merge-status TASK",
			Summary: "displayStatus: the task's latest merge attempt, with GitHub read again (and what it shows recorded, through the write gate) while the attempt is in flight; prints it",
			Example: "read-merge-status T1", Run: cmdMergeStatus},
		Command{Name: "merge-stop", Kind: Action, Usage: "merge-stop",
			Summary: "shutdown step 1's half for merges (no merge is admitted and no merge command is sent after it), then step 3's check whether a merge is still in flight",
			Example: "merge-stop", Run: cmdMergeStop},
	)
}

func cmdMergeBegin(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 || a.str("as") == "" {
		ts.Fatalf("usage: merge-begin TASK as=NAME")
	}
	key := s.planKey(ts, a.pos[0])
	id := actionID("merge:" + a.str("as"))
	err := w.Store.Update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, id) })
	if err == nil {
		if aerr := w.Alias(id, a.str("as")); aerr != nil {
			ts.Fatalf("merge-begin: %v", aerr)
		}
	}
	s.expect(ts, neg, "merge-begin", err)
}

func cmdMergeState(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: set-merge-state MERGE STATE")
	}
	s := get(ts)
	w := s.world(ts)
	id := s.attempt(ts, a.pos[0])
	err := w.Store.Update(func(tx *store.Tx) error {
		if a.pos[1] == store.MergeMerged {
			return tx.FinishMergeMerged(id)
		}
		return tx.SetMergeState(id, a.pos[1])
	})
	s.expect(ts, neg, "set-merge-state", err)
}

func cmdMerge(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: merge-row MERGE k=v...")
	}
	id := s.attempt(ts, a.pos[0])
	var m store.MergeAttempt
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { m, err = tx.MergeAttempt(id); return err }); err != nil {
		s.fatal(ts, "merge %s: %v", a.pos[0], err)
	}
	s.compare(ts, "merge "+a.pos[0], a.given(), mergeFields(m))
}

func cmdMergeClick(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: merge-click TASK [as=NAME] [action=NAME] [sv=N] [rv=N]")
	}
	key := s.planKey(ts, a.pos[0])
	r := merge.Request{PlanKey: key, ActionID: s.action(a), ExpectedStateVersion: s.stateVersion(ts, key, a),
		ExpectedReviewVersion: s.reviewVersion(ts, key, a)}
	// A resend of a named click (a lost response) carries the very body
	// it first had, versions included, unless the script says otherwise.
	if name := a.str("action"); name != "" {
		if first, ok := s.mergeClicks[name]; ok {
			if _, ok := a.lookup("sv"); !ok {
				r.ExpectedStateVersion = first.ExpectedStateVersion
			}
			if _, ok := a.lookup("rv"); !ok {
				r.ExpectedReviewVersion = first.ExpectedReviewVersion
			}
		} else {
			if s.mergeClicks == nil {
				s.mergeClicks = map[string]merge.Request{}
			}
			s.mergeClicks[name] = r
		}
	}
	if name := a.str("as"); name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := w.Merge.Merge(context.Background(), r)
	if a.str("as") != "" && err != nil {
		w.NameNext("") // nothing was admitted: the name stays free
	}
	printResponse(ts, s, resp)
	s.expect(ts, neg, "merge-click", err)
}

func printMerge(ts *gts.TestScript, s *scenario, st merge.Status) {
	if st.Attempt == nil {
		fmt.Fprintln(ts.Stdout(), "merge: none")
		return
	}
	m := st.Attempt
	fmt.Fprintf(ts.Stdout(), "merge: %s state=%s fresh=%v reason=%q\n", s.w.Name(m.ID), m.State, m.RequiresFreshReview, m.Reason)
}

func cmdMergeStatus(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: read-merge-status TASK")
	}
	st, err := s.world(ts).Merge.DisplayStatus(context.Background(), s.planKey(ts, a.pos[0]))
	if err == nil {
		printMerge(ts, s, st)
	}
	s.expect(ts, neg, "read-merge-status", err)
}

func cmdMergeStop(ts *gts.TestScript, neg bool, a argSet) {
	w := get(ts).world(ts)
	w.Merge.Stop()
	if _, err := w.Merge.AwaitIdle(context.Background()); err != nil {
		ts.Fatalf("merge-stop: %v", err)
	}
}

// mergeFields are what the merge assertion compares.
func mergeFields(m store.MergeAttempt) map[string]string {
	return map[string]string{"state": m.State, "fresh": strconv.FormatBool(m.RequiresFreshReview), "reason": m.Reason,
		"head": m.HeadSHA}
}
