package testscript

import (
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for merge attempts and the rebase marker (issue 3, item 9). The
// merge coordinator and GitHub come later: these write the rows they will
// write, through the Store's own methods.

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
		Command{Name: "rebase-mark", Kind: Action, Usage: "[!] rebase-mark TASK ATTEMPT",
			Summary: "records a rebase in progress for the task (tasks.rebase_in_progress = {\"attemptId\": …}, compare-and-swap from null), as F3 does before it starts a rebase",
			Example: "rebase-mark T1 A", Run: cmdRebaseMark},
		Command{Name: "rebase-abort", Kind: Action, Usage: "[!] rebase-abort TASK ATTEMPT",
			Summary: "clears the task's rebase marker by compare-and-swap on ATTEMPT; prints whether this call cleared it",
			Example: "rebase-abort T1 A", Run: cmdRebaseAbort},
		Command{Name: "rebase-marker", Kind: Assertion, Usage: "rebase-marker TASK ATTEMPT|none",
			Summary: "asserts the attempt the task's rebase marker names, or that there is none",
			Example: "rebase-marker T1 none", Run: cmdRebase},
		Command{Name: "reconciled", Kind: Assertion, Keys: []Key{K("aborted", Text)}, Usage: "reconciled TASKS|none [aborted=ATTEMPTS|none]",
			Summary: "asserts what the last startup recovery repaired in step 5 (merged tasks, comma-separated) and which rebase markers step 4 cleared",
			Example: "reconciled T1 aborted=none", Run: cmdReconciled},
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

func cmdReconciled(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: reconciled TASKS|none [aborted=ATTEMPTS|none]")
	}
	select {
	case <-w.Runner.RecoveryDone():
	default:
		s.fatal(ts, "recovery has not ended")
	}
	r := w.Runner.Recovery()
	var tasks, aborted []string
	for _, k := range r.Reconciled {
		tasks = append(tasks, s.taskName(k))
	}
	for _, x := range r.AbortedRebases {
		f := strings.Fields(x)
		aborted = append(aborted, w.Name(f[len(f)-1]))
	}
	want := map[string]string{"reconciled": a.pos[0]}
	if v, ok := a.lookup("aborted"); ok {
		want["aborted"] = v
	}
	s.compare(ts, "recovery", want, map[string]string{"reconciled": noneOr(strings.Join(tasks, ",")), "aborted": noneOr(strings.Join(aborted, ","))})
}
