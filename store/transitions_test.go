package store_test

// The contract's "Legal transitions" table, checked two ways: store.Legal
// against an oracle written here straight from the contract's table (not
// from the implementation), over every (from, to) pair and every
// combination of the guard fields; and the durable transitions through the
// Store's real methods on a real SQLite file.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ---------------------------------------------------------------------------
// The oracle.

var (
	allStates    = []words.State{"", words.Pending, words.Running, words.Completed, words.Failed, words.Cancelled, words.Stale}
	allReasons   = []words.Reason{"", words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit}
	allStops     = []words.StopReason{"", words.StopTimeout, words.StopOutputLimit, words.StopCaptureFailure, words.StopCancelled}
	allBools     = []bool{false, true}
	guardFields  = []string{"CurrentAttempt", "FirstReason", "ContextCurrent", "StopReason", "TaskRunning", "CancelRequested", "CompletionGuard"}
	tableOutcome = map[bool]string{true: "legal", false: "refused"}
)

// contractRow is one row of the contract's "Legal transitions" table, its
// guard transcribed in the contract's own words.
type contractRow struct {
	from, to words.State
	says     string // the contract's guard column, abridged
	legal    func(g store.Guard) bool
	// matters lists the guard fields the row's outcome depends on: for each,
	// the exhaustive enumeration below must hold a negative case (a guard
	// refused only because of that field).
	matters []string
}

// isStopReason: "first reason is cancelled, shutdown or time-limit".
func isStopReason(r words.Reason) bool {
	return r == words.ReasonCancelled || r == words.ReasonShutdown || r == words.ReasonTimeLimit
}

// staleGuard: "first reason is stale, or no first reason and the context is
// no longer current".
func staleGuard(g store.Guard) bool {
	return g.FirstReason == words.ReasonStale || (g.FirstReason == "" && !g.ContextCurrent)
}

// dStopped: "a D stopReason of timeout, output-limit or capture-failure".
func dStopped(s words.StopReason) bool {
	return s == words.StopTimeout || s == words.StopOutputLimit || s == words.StopCaptureFailure
}

var contractTable = []contractRow{
	{
		from: words.Pending, to: words.Running,
		says:    "Attempt ID is the task's current attempt; state is pending; no first reason recorded",
		legal:   func(g store.Guard) bool { return g.CurrentAttempt && g.FirstReason == "" },
		matters: []string{"CurrentAttempt", "FirstReason"},
	},
	{
		from: words.Pending, to: words.Cancelled,
		says:    "Same attempt ID; state is pending; first reason is cancelled, shutdown or time-limit",
		legal:   func(g store.Guard) bool { return g.CurrentAttempt && isStopReason(g.FirstReason) },
		matters: []string{"CurrentAttempt", "FirstReason"},
	},
	{
		from: words.Pending, to: words.Stale,
		says:    "Same attempt ID; state is pending; first reason is stale, or no first reason and the context is no longer current",
		legal:   func(g store.Guard) bool { return g.CurrentAttempt && staleGuard(g) },
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent"},
	},
	{
		from: words.Pending, to: words.Failed,
		says:    "Same attempt ID; state is pending; no first reason recorded; captured context still current (otherwise the row takes stale)",
		legal:   func(g store.Guard) bool { return g.CurrentAttempt && g.FirstReason == "" && g.ContextCurrent },
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent"},
	},
	{
		from: words.Running, to: words.Completed,
		says: "Attempt ID is current; state is running; no first reason recorded; captured context still current; task status is running and cancel_requested is null",
		legal: func(g store.Guard) bool {
			return g.CurrentAttempt && g.FirstReason == "" && g.ContextCurrent && g.TaskRunning && !g.CancelRequested
		},
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent", "TaskRunning", "CancelRequested"},
	},
	{
		from: words.Running, to: words.Failed,
		says: "Attempt ID is current; state is running; captured context still current (otherwise the row takes stale); and either no first reason recorded, or first reason shutdown with a D stopReason of timeout, output-limit or capture-failure",
		legal: func(g store.Guard) bool {
			return g.CurrentAttempt && g.ContextCurrent &&
				(g.FirstReason == "" || (g.FirstReason == words.ReasonShutdown && dStopped(g.StopReason)))
		},
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent", "StopReason"},
	},
	{
		from: words.Running, to: words.Cancelled,
		// The table row, plus the completion guard from the paragraph under
		// the table: "the completion guard requires status running; if it
		// somehow is not, the attempt ends cancelled". The completion guard
		// stands in for running → completed, so every other guard of that
		// row still holds (no first reason, context current); with a context
		// that is not current rule 2 ("none, and the captured context is not
		// current → stale; this row comes before every D stop reason") and
		// publication step 4 settle the row stale instead. cancel_requested
		// does not matter: the attempt ends cancelled either way.
		says: "Attempt ID is current; state is running; first reason is cancelled, shutdown or time-limit — or the completion guard: no first reason, context current, task status not running",
		legal: func(g store.Guard) bool {
			if !g.CurrentAttempt {
				return false
			}
			if isStopReason(g.FirstReason) {
				return true
			}
			return g.CompletionGuard && g.FirstReason == "" && g.ContextCurrent && !g.TaskRunning
		},
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent", "TaskRunning", "CompletionGuard"},
	},
	{
		from: words.Running, to: words.Stale,
		// The stale row's own guard, plus the running → failed row's words
		// "captured context still current (otherwise the row takes stale)":
		// for first reason shutdown with D's timeout, output-limit or
		// capture-failure that row is failed, so with a context that is no
		// longer current it is stale. The two rows disagree for exactly that
		// case (the stale row lists only stale or none); this oracle follows
		// the failed row, which names the case, and store.Legal does too.
		// (Cancelled, from the shutdown reason, stays legal there as well.)
		says: "Attempt ID is current; state is running; first reason is stale, or no first reason is recorded and the context is no longer current (and, by the running → failed row, shutdown with D's own stop reason and a context that is not current)",
		legal: func(g store.Guard) bool {
			return g.CurrentAttempt && (staleGuard(g) ||
				(g.FirstReason == words.ReasonShutdown && dStopped(g.StopReason) && !g.ContextCurrent))
		},
		matters: []string{"CurrentAttempt", "FirstReason", "ContextCurrent", "StopReason"},
	},
}

// delegated lists the rows of the table whose guards are not Guard fields:
// admission (— → pending: task status, expected state version, no
// non-terminal attempt, current captured context) and the same-state
// first-reason write ("pending → pending, running → running"). store.Legal
// documents that it leaves them to Admit and RecordFirstReason, so asked
// about them it must refuse; TestAdmit* and TestRecordFirstReason cover them.
var delegated = map[[2]words.State]string{
	{"", words.Pending}:            "admission: Tx.Admit",
	{words.Pending, words.Pending}: "first-reason write: Tx.RecordFirstReason",
	{words.Running, words.Running}: "first-reason write: Tx.RecordFirstReason",
}

// oracle answers whether the contract allows g. "Any change not in this
// table is illegal."
func oracle(g store.Guard) bool {
	for _, r := range contractTable {
		if r.from == g.From && r.to == g.To {
			return r.legal(g)
		}
	}
	return false
}

// allGuards enumerates every guard over the domain.
func allGuards(yield func(store.Guard) bool) {
	for _, from := range allStates {
		for _, to := range allStates {
			for _, ca := range allBools {
				for _, fr := range allReasons {
					for _, cc := range allBools {
						for _, sr := range allStops {
							for _, tr := range allBools {
								for _, cr := range allBools {
									for _, cg := range allBools {
										g := store.Guard{From: from, To: to, CurrentAttempt: ca, FirstReason: fr, ContextCurrent: cc,
											StopReason: sr, TaskRunning: tr, CancelRequested: cr, CompletionGuard: cg}
										if !yield(g) {
											return
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func showGuard(g store.Guard) string {
	name := func(s words.State) string {
		if s == "" {
			return "—"
		}
		return string(s)
	}
	return fmt.Sprintf("%s → %s {CurrentAttempt:%t FirstReason:%q ContextCurrent:%t StopReason:%q TaskRunning:%t CancelRequested:%t CompletionGuard:%t}",
		name(g.From), name(g.To), g.CurrentAttempt, g.FirstReason, g.ContextCurrent, g.StopReason, g.TaskRunning, g.CancelRequested, g.CompletionGuard)
}

func contractSays(g store.Guard) string {
	for _, r := range contractTable {
		if r.from == g.From && r.to == g.To {
			return r.says
		}
	}
	if why, ok := delegated[[2]words.State{g.From, g.To}]; ok {
		return "row guarded outside Legal (" + why + ")"
	}
	return "not in the table: illegal"
}

// TestLegalMatchesContractTable compares store.Legal with the oracle on every
// (from, to) pair and every combination of the guard fields.
func TestLegalMatchesContractTable(t *testing.T) {
	var n, mismatches int
	for g := range allGuards {
		n++
		err := store.Legal(g)
		want := oracle(g)
		got := err == nil
		if got != want {
			mismatches++
			if mismatches <= 25 {
				t.Errorf("store.Legal disagrees with the contract:\n  guard:    %s\n  contract: %s (%s)\n  Legal:    %s (%v)",
					showGuard(g), tableOutcome[want], contractSays(g), tableOutcome[got], err)
			}
			continue
		}
		if err == nil {
			continue
		}
		r, ok := store.IsRefusal(err)
		if !ok {
			t.Errorf("%s: refused with %T %v, want a *store.Refusal", showGuard(g), err, err)
			continue
		}
		switch {
		case !g.CurrentAttempt:
			if r.Code != store.CodeNotCurrentAttempt {
				t.Errorf("%s: code %q, want %q", showGuard(g), r.Code, store.CodeNotCurrentAttempt)
			}
		case g.From == words.Running && g.To == words.Completed:
			// Publish turns CodeTaskNotRunning into the completion guard's
			// cancelled, so the code must be used exactly when the
			// completion guard row (running → cancelled, no first reason)
			// allows that write.
			cg := g
			cg.To, cg.CompletionGuard = words.Cancelled, true
			completionGuard := g.FirstReason == "" && oracle(cg)
			if completionGuard != (r.Code == store.CodeTaskNotRunning) {
				t.Errorf("%s: code %q; CodeTaskNotRunning must be used exactly when the completion guard applies (applies: %t)",
					showGuard(g), r.Code, completionGuard)
			}
		default:
			switch r.Code {
			case store.CodeIllegal, store.CodeFirstReasonSet:
			default:
				t.Errorf("%s: unexpected refusal code %q (%s)", showGuard(g), r.Code, r.Message)
			}
		}
	}
	if mismatches > 25 {
		t.Errorf("... and %d more mismatches", mismatches-25)
	}
	if want := len(allStates) * len(allStates) * 2 * len(allReasons) * 2 * len(allStops) * 2 * 2 * 2; n != want {
		t.Fatalf("enumerated %d guards, want %d", n, want)
	}
	t.Logf("checked %d guards", n)
}

// withField returns g with one field set to v.
func withField(g store.Guard, field string, v any) store.Guard {
	switch field {
	case "CurrentAttempt":
		g.CurrentAttempt = v.(bool)
	case "FirstReason":
		g.FirstReason = v.(words.Reason)
	case "ContextCurrent":
		g.ContextCurrent = v.(bool)
	case "StopReason":
		g.StopReason = v.(words.StopReason)
	case "TaskRunning":
		g.TaskRunning = v.(bool)
	case "CancelRequested":
		g.CancelRequested = v.(bool)
	case "CompletionGuard":
		g.CompletionGuard = v.(bool)
	default:
		panic("unknown guard field " + field)
	}
	return g
}

func fieldValues(field string) []any {
	switch field {
	case "FirstReason":
		return []any{words.Reason(""), words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit}
	case "StopReason":
		return []any{words.StopNone, words.StopTimeout, words.StopOutputLimit, words.StopCaptureFailure, words.StopCancelled}
	}
	return []any{false, true}
}

// sensitivity returns, for the pair (from, to), the guard fields on which
// decide's answer depends: those for which some legal guard becomes refused
// by changing that field alone. Each such change is a guard's negative case.
func sensitivity(from, to words.State, decide func(store.Guard) bool) []string {
	dep := map[string]bool{}
	for g := range allGuards {
		if g.From != from || g.To != to || !decide(g) {
			continue
		}
		for _, f := range guardFields {
			for _, v := range fieldValues(f) {
				if !decide(withField(g, f, v)) {
					dep[f] = true
				}
			}
		}
	}
	var out []string
	for f := range dep {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// TestLegalEveryGuardHasANegativeCase proves that the enumeration holds, for
// every row and every guard the contract names on it, a guard that is
// refused only because that one guard fails, and that store.Legal refuses
// it; and that no other field changes the answer.
func TestLegalEveryGuardHasANegativeCase(t *testing.T) {
	legal := func(g store.Guard) bool { return store.Legal(g) == nil }
	for _, r := range contractTable {
		want := append([]string(nil), r.matters...)
		sort.Strings(want)
		if diff := cmp.Diff(want, sensitivity(r.from, r.to, oracle)); diff != "" {
			t.Errorf("oracle %s → %s: fields with a negative case differ from the row's guards (-want +got):\n%s", r.from, r.to, diff)
		}
		if diff := cmp.Diff(want, sensitivity(r.from, r.to, legal)); diff != "" {
			t.Errorf("store.Legal %s → %s: fields that refuse differ from the contract's guards (-want +got):\n%s", r.from, r.to, diff)
		}
	}
	// Every pair outside the table is refused whatever the guard says.
	for _, from := range allStates {
		for _, to := range allStates {
			inTable := false
			for _, r := range contractTable {
				inTable = inTable || (r.from == from && r.to == to)
			}
			if inTable {
				continue
			}
			for g := range allGuards {
				if g.From == from && g.To == to && store.Legal(g) == nil {
					t.Errorf("%s: legal, but the pair is not in the contract's table (%s)", showGuard(g), contractSays(g))
					break
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Durable transitions through the real methods.

var ignoreTimes = cmpopts.IgnoreFields(store.Task{}, "UpdatedAt")

func TestRecordFirstReason(t *testing.T) {
	for _, state := range []words.State{words.Pending, words.Running} {
		for _, reason := range []words.Reason{words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit} {
			t.Run(string(state)+"/"+string(reason), func(t *testing.T) {
				e := newEnv(t)
				key := e.newTask("")
				a := e.admit(key, words.KindReview)
				if state == words.Running {
					e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
				}
				before := e.snap(key)
				e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, reason, "plan revision 2 replaced 1") })
				after := e.snap(key)
				got := e.attempt(a.ID)
				if got.State != state {
					t.Errorf("state %s after recording a first reason, want %s (unchanged)", got.State, state)
				}
				if got.FirstReason != reason {
					t.Errorf("first reason %q, want %q", got.FirstReason, reason)
				}
				wantCause := ""
				if reason == words.ReasonStale {
					wantCause = "plan revision 2 replaced 1"
				}
				if got.StaleCause != wantCause {
					t.Errorf("stale cause %q, want %q", got.StaleCause, wantCause)
				}
				if after.Task.StateVersion != before.Task.StateVersion+1 {
					t.Errorf("state version %d → %d, want +1", before.Task.StateVersion, after.Task.StateVersion)
				}
				if after.Task.ContextGeneration != before.Task.ContextGeneration {
					t.Errorf("context generation moved %d → %d", before.Task.ContextGeneration, after.Task.ContextGeneration)
				}
				if after.Task.Status != before.Task.Status {
					t.Errorf("task status moved %s → %s", before.Task.Status, after.Task.Status)
				}

				// A second stop is refused and changes nothing.
				for _, second := range []words.Reason{words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit} {
					err := e.s.Update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, second, "") })
					wantRefusal(t, err, store.CodeFirstReasonSet)
					if diff := cmp.Diff(after, e.snap(key)); diff != "" {
						t.Errorf("a refused second reason %s changed the database (-before +after):\n%s", second, diff)
					}
				}
			})
		}
	}
}

func TestRecordFirstReasonRefusals(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindReview)
	before := e.snap(key)
	err := e.s.Update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, "bored", "") })
	wantRefusal(t, err, store.CodeBadInput)
	err = e.s.Update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, "", "") })
	wantRefusal(t, err, store.CodeBadInput)
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused reason changed the database:\n%s", diff)
	}

	// A terminal attempt takes no first reason.
	if err := e.finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "clone failed"}); err != nil {
		t.Fatal(err)
	}
	before = e.snap(key)
	err = e.s.Update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonCancelled, "") })
	wantRefusal(t, err, store.CodeIllegal)
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused reason on a terminal row changed the database:\n%s", diff)
	}

	// An attempt that is no longer the task's current one takes none either.
	e.admit(key, words.KindReview)
	before = e.snap(key)
	err = e.s.Update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonCancelled, "") })
	wantRefusal(t, err, store.CodeNotCurrentAttempt)
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused reason changed the database:\n%s", diff)
	}
}

func TestMarkRunning(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindExecute)
	before := e.snap(key)
	e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	got := e.attempt(a.ID)
	if got.State != words.Running || got.StartedAt == nil {
		t.Errorf("after MarkRunning: state %s started %v, want running with a start time", got.State, got.StartedAt)
	}
	after := e.snap(key)
	if after.Task.StateVersion != before.Task.StateVersion+1 {
		t.Errorf("state version %d → %d, want +1", before.Task.StateVersion, after.Task.StateVersion)
	}
	if after.Task.ContextGeneration != before.Task.ContextGeneration {
		t.Errorf("context generation moved")
	}
	// running → running is not MarkRunning's to write.
	err := e.s.Update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
	wantRefusal(t, err, store.CodeIllegal)
	if diff := cmp.Diff(after, e.snap(key)); diff != "" {
		t.Errorf("refused MarkRunning changed the database:\n%s", diff)
	}
}

func TestMarkRunningRefusedAfterFirstReason(t *testing.T) {
	for _, reason := range []words.Reason{words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit} {
		t.Run(string(reason), func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.admit(key, words.KindExecute)
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, reason, "") })
			before := e.snap(key)
			err := e.s.Update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
			wantRefusal(t, err, store.CodeFirstReasonSet)
			if diff := cmp.Diff(before, e.snap(key)); diff != "" {
				t.Errorf("refused MarkRunning changed the database:\n%s", diff)
			}
		})
	}
}

// TestFinish writes each terminal state from each starting state and checks
// the row, the state version and the task's status.
func TestFinish(t *testing.T) {
	type tc struct {
		name       string
		from       words.State  // pending or running
		reason     words.Reason // recorded first reason, "" for none
		staleFirst bool         // change the context before the terminal write
		term       store.Terminal
		wantCode   string           // "" when the write must succeed
		wantStatus words.TaskStatus // the task's status afterwards (when written)
	}
	cases := []tc{
		{name: "pending failed", from: words.Pending, term: store.Terminal{State: words.Failed, Diagnostic: "clone failed"}, wantStatus: words.StatusRunning},
		{name: "pending cancelled", from: words.Pending, reason: words.ReasonCancelled, term: store.Terminal{State: words.Cancelled}, wantStatus: words.StatusRunning},
		{name: "pending cancelled by shutdown", from: words.Pending, reason: words.ReasonShutdown, term: store.Terminal{State: words.Cancelled, Diagnostic: words.StoppedByShutdown}, wantStatus: words.StatusRunning},
		{name: "pending stale by reason", from: words.Pending, reason: words.ReasonStale, term: store.Terminal{State: words.Stale, StaleCause: "snapshot s2 replaced s1"}, wantStatus: words.StatusRunning},
		{name: "pending stale by context", from: words.Pending, staleFirst: true, term: store.Terminal{State: words.Stale, StaleCause: "assignment b replaced a"}, wantStatus: words.StatusRunning},
		{name: "pending failed with stale context", from: words.Pending, staleFirst: true, term: store.Terminal{State: words.Failed}, wantCode: store.CodeIllegal},
		{name: "pending failed with reason", from: words.Pending, reason: words.ReasonCancelled, term: store.Terminal{State: words.Failed}, wantCode: store.CodeIllegal},
		{name: "pending time limit", from: words.Pending, reason: words.ReasonTimeLimit, term: store.Terminal{State: words.Cancelled, Diagnostic: words.TaskTimeLimitReached}, wantStatus: words.StatusNeedsHuman},
		{name: "running failed", from: words.Running, term: store.Terminal{State: words.Failed, StopReason: words.StopTimeout, Diagnostic: words.TimedOutAfter(30)}, wantStatus: words.StatusRunning},
		{name: "running failed: shutdown lost to D", from: words.Running, reason: words.ReasonShutdown, term: store.Terminal{State: words.Failed, StopReason: words.StopOutputLimit}, wantStatus: words.StatusRunning},
		{name: "running failed: shutdown won", from: words.Running, reason: words.ReasonShutdown, term: store.Terminal{State: words.Failed, StopReason: words.StopShutdown}, wantCode: store.CodeIllegal},
		{name: "running cancelled by shutdown", from: words.Running, reason: words.ReasonShutdown, term: store.Terminal{State: words.Cancelled, Diagnostic: words.StoppedByShutdown}, wantStatus: words.StatusRunning},
		{name: "running cancelled by user", from: words.Running, reason: words.ReasonCancelled, term: store.Terminal{State: words.Cancelled}, wantStatus: words.StatusRunning},
		{name: "running cancelled beats stale context", from: words.Running, reason: words.ReasonCancelled, staleFirst: true, term: store.Terminal{State: words.Cancelled}, wantStatus: words.StatusRunning},
		{name: "running stale by reason", from: words.Running, reason: words.ReasonStale, term: store.Terminal{State: words.Stale}, wantStatus: words.StatusRunning},
		{name: "running stale by context", from: words.Running, staleFirst: true, term: store.Terminal{State: words.Stale, StopReason: words.StopTimeout}, wantStatus: words.StatusRunning},
		{name: "running failed with stale context", from: words.Running, staleFirst: true, term: store.Terminal{State: words.Failed, StopReason: words.StopTimeout}, wantCode: store.CodeIllegal},
		{name: "running cancelled without reason", from: words.Running, term: store.Terminal{State: words.Cancelled}, wantCode: store.CodeIllegal},
		{name: "running time limit", from: words.Running, reason: words.ReasonTimeLimit, term: store.Terminal{State: words.Cancelled, Diagnostic: words.TaskTimeLimitReached}, wantStatus: words.StatusNeedsHuman},
		{name: "completed is Publish's", from: words.Running, term: store.Terminal{State: words.Completed}, wantCode: store.CodeIllegal},
		{name: "memory reason differs from the row", from: words.Running, reason: words.ReasonCancelled, term: store.Terminal{State: words.Cancelled, FirstReason: words.ReasonShutdown}, wantCode: store.CodeIllegal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.admit(key, words.KindExecute)
			if c.from == words.Running {
				e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
			}
			if c.reason != "" {
				e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, c.reason, "") })
			}
			if c.staleFirst {
				e.update(func(tx *store.Tx) error { return tx.Reassign(key, "someone-else") })
			}
			before := e.snap(key)
			err := e.finish(a.ID, c.term)
			if c.wantCode != "" {
				wantRefusal(t, err, c.wantCode)
				if diff := cmp.Diff(before, e.snap(key)); diff != "" {
					t.Errorf("refused terminal write changed the database (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
			got := e.attempt(a.ID)
			if got.State != c.term.State {
				t.Errorf("state %s, want %s", got.State, c.term.State)
			}
			if got.FirstReason != c.reason {
				t.Errorf("first reason %q, want %q (kept from the row)", got.FirstReason, c.reason)
			}
			if got.StopReason != c.term.StopReason || got.Diagnostic != c.term.Diagnostic || got.SettledAt == nil {
				t.Errorf("row stop %q diag %q settled %v; want stop %q diag %q and a settle time",
					got.StopReason, got.Diagnostic, got.SettledAt, c.term.StopReason, c.term.Diagnostic)
			}
			if c.term.State == words.Stale && c.term.StaleCause != "" && got.StaleCause != c.term.StaleCause {
				t.Errorf("stale cause %q, want %q", got.StaleCause, c.term.StaleCause)
			}
			after := e.snap(key)
			if after.Task.Status != c.wantStatus {
				t.Errorf("task status %s, want %s", after.Task.Status, c.wantStatus)
			}
			if after.Task.StateVersion != before.Task.StateVersion+1 {
				t.Errorf("state version %d → %d, want +1", before.Task.StateVersion, after.Task.StateVersion)
			}
			if after.Task.ContextGeneration != before.Task.ContextGeneration {
				t.Errorf("the terminal write moved the context generation")
			}
			if after.Events != before.Events {
				t.Errorf("the terminal write inserted %d feedback events", after.Events-before.Events)
			}
			// A terminal row never moves again.
			for _, again := range []words.State{words.Failed, words.Cancelled, words.Stale} {
				err := e.finish(a.ID, store.Terminal{State: again, FirstReason: c.reason})
				if _, ok := store.IsRefusal(err); !ok {
					t.Errorf("second terminal write %s: %v, want a refusal", again, err)
				}
			}
			if diff := cmp.Diff(after, e.snap(key)); diff != "" {
				t.Errorf("refused second terminal write changed the database:\n%s", diff)
			}
		})
	}
}

// TestFinishPendingCancelClosesTask: with cancel_requested set, the terminal
// write closes the task as cancelled and inserts exactly one task-closed
// event, even when the first reason is the time limit; never needs human.
func TestFinishPendingCancelClosesTask(t *testing.T) {
	for _, firstReason := range []words.Reason{words.ReasonCancelled, words.ReasonTimeLimit, words.ReasonShutdown} {
		for _, finding := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/finding=%t", firstReason, finding), func(t *testing.T) {
				e := newEnv(t)
				key := e.newTask("")
				a := e.running(key, words.KindExecute)
				if firstReason != words.ReasonCancelled {
					e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, firstReason, "") })
				}
				if finding {
					e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "wrote outside its files") })
				}
				actionID := "0b6f1f0e-7a8e-4c3e-9d5a-1f2e3d4c5b6a"
				var outcome string
				e.update(func(tx *store.Tx) error {
					var err error
					outcome, _, err = tx.CancelTask(key, actionID, true)
					return err
				})
				if outcome != store.CancelTaskStopping {
					t.Fatalf("CancelTask outcome %q, want %q", outcome, store.CancelTaskStopping)
				}
				if got := e.task(key); got.Status != words.StatusRunning || got.CancelRequested != actionID {
					t.Fatalf("while stopping: status %s cancel_requested %q", got.Status, got.CancelRequested)
				}
				if got := e.attempt(a.ID).FirstReason; got != firstReason {
					t.Fatalf("first reason %q, want %q (the first one wins)", got, firstReason)
				}
				if err := e.finish(a.ID, store.Terminal{State: words.Cancelled, Diagnostic: words.TaskTimeLimitReached}); err != nil {
					t.Fatal(err)
				}
				task := e.task(key)
				if task.Status != words.StatusCancelled {
					t.Errorf("task status %s, want cancelled (a pending cancel task wins)", task.Status)
				}
				if task.CancelRequested != "" {
					t.Errorf("cancel_requested %q left set", task.CancelRequested)
				}
				if n := e.rawInt(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = ?`, key, words.EventTaskClosed); n != 1 {
					t.Errorf("%d task-closed events, want exactly 1", n)
				}
				if got := e.rawString(`SELECT action_id FROM feedback_events WHERE plan_key = ? AND kind = ?`, key, words.EventTaskClosed); got != actionID {
					t.Errorf("task-closed keyed by %q, want the cancel action %q", got, actionID)
				}
				// A closed task's status never changes.
				for _, s := range words.TaskStatuses {
					err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, s) })
					wantRefusal(t, err, store.CodeTaskClosed)
				}
				if got := e.task(key).Status; got != words.StatusCancelled {
					t.Errorf("closed task moved to %s", got)
				}
			})
		}
	}
}

// TestFinishClosedTaskNeverChanges: a task closed by other means (merged,
// forced here by raw SQL under a running attempt) keeps its status through
// the time limit and a safety finding.
func TestFinishClosedTaskNeverChanges(t *testing.T) {
	for _, closed := range []words.TaskStatus{words.StatusMerged, words.StatusCancelled} {
		for _, reason := range []words.Reason{words.ReasonTimeLimit, ""} {
			t.Run(string(closed)+"/"+string(reason), func(t *testing.T) {
				e := newEnv(t)
				key := e.newTask("")
				a := e.running(key, words.KindExecute)
				e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "changed .git/config") })
				term := store.Terminal{State: words.Failed}
				if reason != "" {
					e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, reason, "") })
					term = store.Terminal{State: words.Cancelled}
				}
				e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, closed, key)
				if err := e.finish(a.ID, term); err != nil {
					t.Fatal(err)
				}
				if got := e.task(key).Status; got != closed {
					t.Errorf("closed task %s moved to %s", closed, got)
				}
			})
		}
	}
}

// TestFinishSafetyFindingNeedsHuman: the terminal write sends the task to
// needs human whatever outcome wins.
func TestFinishSafetyFindingNeedsHuman(t *testing.T) {
	for _, c := range []struct {
		reason words.Reason
		state  words.State
	}{
		{"", words.Failed},
		{words.ReasonCancelled, words.Cancelled},
		{words.ReasonStale, words.Stale},
		{words.ReasonShutdown, words.Cancelled},
	} {
		t.Run(string(c.state)+"/"+string(c.reason), func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.running(key, words.KindExecute)
			e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "agent committed") })
			if c.reason != "" {
				e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, c.reason, "") })
			}
			if got := e.task(key).Status; got != words.StatusRunning {
				t.Fatalf("recording a finding moved the task to %s before the terminal write", got)
			}
			if err := e.finish(a.ID, store.Terminal{State: c.state}); err != nil {
				t.Fatal(err)
			}
			if got := e.task(key).Status; got != words.StatusNeedsHuman {
				t.Errorf("task status %s, want needs human", got)
			}
			if got := e.attempt(a.ID).SafetyFinding; got != "agent committed" {
				t.Errorf("finding %q not kept on the row", got)
			}
		})
	}
	// A finding on a completed attempt sends the task to needs human too.
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindExecute)
	e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "agent committed") })
	if state, err := e.publish(a.ID, []byte(`{}`), ""); err != nil || state != words.Completed {
		t.Fatalf("Publish: %s, %v", state, err)
	}
	if got := e.task(key).Status; got != words.StatusNeedsHuman {
		t.Errorf("completed with a finding: task status %s, want needs human", got)
	}
}

func TestPublishCompleted(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindReview)
	before := e.snap(key)
	result := []byte(`{"findings":[]}`)
	state, err := e.publish(a.ID, result, "")
	if err != nil || state != words.Completed {
		t.Fatalf("Publish: %q, %v; want completed", state, err)
	}
	got := e.attempt(a.ID)
	if got.State != words.Completed || string(got.Result) != string(result) || got.ExitCode == nil || *got.ExitCode != 0 || got.SettledAt == nil {
		t.Errorf("row after Publish: state %s result %s exit %v settled %v", got.State, got.Result, got.ExitCode, got.SettledAt)
	}
	after := e.snap(key)
	if after.Task.StateVersion != before.Task.StateVersion+1 {
		t.Errorf("state version %d → %d, want +1", before.Task.StateVersion, after.Task.StateVersion)
	}
	if after.Task.ContextGeneration != before.Task.ContextGeneration || len(after.History) != 0 {
		t.Errorf("Publish without a commit moved the generation or wrote history")
	}
	if after.Task.Status != words.StatusRunning {
		t.Errorf("task status %s; publication does not change it", after.Task.Status)
	}
	// A completed row never moves again, and cannot be published twice.
	if _, err := e.publish(a.ID, result, ""); err == nil {
		t.Errorf("second Publish succeeded")
	}
	if diff := cmp.Diff(after, e.snap(key)); diff != "" {
		t.Errorf("second Publish changed the database:\n%s", diff)
	}
}

func TestPublishRefusals(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env, key string, a store.Attempt) string // returns the attempt to publish
		code  string
	}{
		{"first reason recorded", func(e *env, key string, a store.Attempt) string {
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonCancelled, "") })
			return a.ID
		}, store.CodeIllegal},
		{"time limit recorded", func(e *env, key string, a store.Attempt) string {
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonTimeLimit, "") })
			return a.ID
		}, store.CodeIllegal},
		{"snapshot changed", func(e *env, key string, a store.Attempt) string {
			e.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") })
			return a.ID
		}, store.CodeIllegal},
		{"reassigned", func(e *env, key string, a store.Attempt) string {
			e.update(func(tx *store.Tx) error { return tx.Reassign(key, "other") })
			return a.ID
		}, store.CodeIllegal},
		{"plan revision changed", func(e *env, key string, a store.Attempt) string {
			e.update(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 1, []string{"x"}); return err })
			return a.ID
		}, store.CodeIllegal},
		{"cancel task pending", func(e *env, key string, a store.Attempt) string {
			// The coordinator already holds a reason in memory, so the row
			// has none; cancel_requested alone must refuse.
			e.update(func(tx *store.Tx) error {
				_, _, err := tx.CancelTask(key, "3c1d1b8e-5e4f-4a6b-8c7d-9e0f1a2b3c4d", false)
				return err
			})
			if fr := e.attempt(a.ID).FirstReason; fr != "" {
				t.Fatalf("CancelTask(recordReason=false) wrote first reason %q", fr)
			}
			return a.ID
		}, store.CodeIllegal},
		{"not the current attempt", func(e *env, key string, a store.Attempt) string {
			// a ends; a new attempt becomes current; a's late result arrives.
			if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
				t.Fatal(err)
			}
			e.running(key, words.KindReview)
			return a.ID
		}, store.CodeNotCurrentAttempt},
		{"still pending", func(e *env, key string, a store.Attempt) string {
			if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
				t.Fatal(err)
			}
			return e.admit(key, words.KindReview).ID
		}, store.CodeIllegal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.running(key, words.KindExecute)
			id := c.setup(e, key, a)
			before := e.snap(key)
			state, err := e.publish(id, []byte(`{"ok":true}`), "c0ffee")
			wantRefusal(t, err, c.code)
			if state != "" {
				t.Errorf("refused Publish returned state %q", state)
			}
			after := e.snap(key)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("refused Publish changed the database (-before +after):\n%s", diff)
			}
			if len(after.History) != 0 {
				t.Errorf("refused Publish wrote %d history rows", len(after.History))
			}
		})
	}
}

// TestPublishCompletionGuard: the task's status is forced out of running
// behind the Store's back; Publish ends the attempt cancelled with the
// contract's words instead of completed.
func TestPublishCompletionGuard(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindExecute)
	e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsAmendment, key)
	before := e.snap(key)
	state, err := e.publish(a.ID, []byte(`{}`), "c0ffee")
	if err != nil || state != words.Cancelled {
		t.Fatalf("Publish: %q, %v; want cancelled by the completion guard", state, err)
	}
	got := e.attempt(a.ID)
	if got.State != words.Cancelled || got.Diagnostic != words.TaskLeftRunning {
		t.Errorf("row: state %s diagnostic %q; want cancelled %q", got.State, got.Diagnostic, words.TaskLeftRunning)
	}
	if got.Result != nil {
		t.Errorf("cancelled row kept result %s", got.Result)
	}
	after := e.snap(key)
	if len(after.History) != 0 || after.Task.ContextGeneration != before.Task.ContextGeneration {
		t.Errorf("completion guard recorded the commit: history %v, generation %d → %d",
			after.History, before.Task.ContextGeneration, after.Task.ContextGeneration)
	}
	if after.Task.StateVersion != before.Task.StateVersion+1 {
		t.Errorf("state version %d → %d, want +1", before.Task.StateVersion, after.Task.StateVersion)
	}
	if after.Task.Status != words.StatusNeedsAmendment {
		t.Errorf("task status %s; the completion guard leaves it", after.Task.Status)
	}
}

// TestPublishCompletionGuardYieldsToStale: when the context also changed,
// publication is refused (the row then takes stale), not cancelled.
func TestPublishCompletionGuardYieldsToStale(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindExecute)
	e.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, "snap-2") })
	e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsAmendment, key)
	before := e.snap(key)
	_, err := e.publish(a.ID, []byte(`{}`), "")
	wantRefusal(t, err, store.CodeIllegal)
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused Publish changed the database:\n%s", diff)
	}
	if err := e.finish(a.ID, store.Terminal{State: words.Stale}); err != nil {
		t.Errorf("settling stale after the refusal: %v", err)
	}
	// The completion guard cannot be claimed on a stale context either.
	e2 := newEnv(t)
	key2 := e2.newTask("")
	b := e2.running(key2, words.KindExecute)
	e2.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key2, "snap-2") })
	e2.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusNeedsAmendment, key2)
	err = e2.finish(b.ID, store.Terminal{State: words.Cancelled, CompletionGuard: true, Diagnostic: words.TaskLeftRunning})
	wantRefusal(t, err, store.CodeIllegal)
}

// TestPublishLedger: a commit is recorded in the publication transaction:
// one history row, the referenced code moves, the generation rises by one.
func TestPublishLedger(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindExecute)
	before := e.snap(key)
	state, err := e.publish(a.ID, []byte(`{}`), "c0ffee")
	if err != nil || state != words.Completed {
		t.Fatalf("Publish: %q, %v", state, err)
	}
	after := e.snap(key)
	if diff := cmp.Diff([]store.HistoryEntry{{AttemptID: a.ID, Commit: "c0ffee"}}, after.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if after.Task.ContextGeneration != before.Task.ContextGeneration+1 {
		t.Errorf("context generation %d → %d, want exactly +1", before.Task.ContextGeneration, after.Task.ContextGeneration)
	}
	if after.Task.StateVersion <= before.Task.StateVersion {
		t.Errorf("state version did not rise")
	}
	if after.Task.ReferencedCodeHash != "c0ffee" {
		t.Errorf("referenced code %q, want the commit", after.Task.ReferencedCodeHash)
	}
	if got := e.attempt(a.ID).State; got != words.Completed {
		t.Errorf("state %s", got)
	}
}

// TestPublishLedgerSameTransaction: when COMMIT fails, neither the completed
// row nor the ledger entry nor the generation survives.
func TestPublishLedgerSameTransaction(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindExecute)
	before := e.snap(key)
	if err := e.fp.Enable("store/commit", "1*return"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.publish(a.ID, []byte(`{}`), "c0ffee"); err == nil {
		t.Fatal("Publish succeeded through a failed COMMIT")
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("a failed COMMIT left part of the publication (-before +after):\n%s", diff)
	}
	// The same publication then succeeds as a whole.
	if state, err := e.publish(a.ID, []byte(`{}`), "c0ffee"); err != nil || state != words.Completed {
		t.Fatalf("Publish after the fault: %q, %v", state, err)
	}
	if n := len(e.snap(key).History); n != 1 {
		t.Errorf("%d history rows, want 1", n)
	}
}

func TestPublishBadResult(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindReview)
	before := e.snap(key)
	_, err := e.publish(a.ID, []byte(`{not json`), "")
	wantRefusal(t, err, store.CodeBadInput)
	big, _ := json.Marshal(strings.Repeat("x", store.MaxResult))
	_, err = e.publish(a.ID, big, "")
	wantRefusal(t, err, store.CodeBadInput)
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("refused Publish changed the database:\n%s", diff)
	}
}

// TestTaskStatusFrozenWhileAttemptActive: "A task's status does not change
// while it has an active attempt."
func TestTaskStatusFrozenWhileAttemptActive(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindExecute)
	for _, phase := range []words.State{words.Pending, words.Running} {
		if phase == words.Running {
			e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
		}
		for _, s := range []words.TaskStatus{words.StatusNeedsAmendment, words.StatusNeedsHuman, words.StatusQueued, words.StatusInReview} {
			before := e.snap(key)
			err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, s) })
			wantRefusal(t, err, store.CodeActiveAttempt)
			if diff := cmp.Diff(before, e.snap(key)); diff != "" {
				t.Errorf("%s attempt: refused SetTaskStatus(%s) changed the database:\n%s", phase, s, diff)
			}
		}
	}
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}
	before := e.task(key)
	e.update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, words.StatusNeedsAmendment) })
	after := e.task(key)
	if after.Status != words.StatusNeedsAmendment {
		t.Errorf("status %s after the attempt ended, want needs amendment", after.Status)
	}
	if after.StateVersion != before.StateVersion+1 || after.ContextGeneration != before.ContextGeneration {
		t.Errorf("SetTaskStatus: state version %d → %d (want +1), generation %d → %d (want unchanged)",
			before.StateVersion, after.StateVersion, before.ContextGeneration, after.ContextGeneration)
	}
	// A task closes only by cancel task or a confirmed merge.
	for _, s := range []words.TaskStatus{words.StatusMerged, words.StatusCancelled} {
		err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, s) })
		wantRefusal(t, err, store.CodeIllegal)
	}
	err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, "paused") })
	wantRefusal(t, err, store.CodeBadInput)
}

func TestClosedStatusNeverChanges(t *testing.T) {
	for _, closed := range []words.TaskStatus{words.StatusMerged, words.StatusCancelled} {
		t.Run(string(closed), func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask(closed)
			before := e.snap(key)
			for _, s := range words.TaskStatuses {
				err := e.s.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, s) })
				wantRefusal(t, err, store.CodeTaskClosed)
			}
			err := e.s.Update(func(tx *store.Tx) error {
				_, _, err := tx.CancelTask(key, "3c1d1b8e-5e4f-4a6b-8c7d-9e0f1a2b3c4d", true)
				return err
			})
			wantRefusal(t, err, store.CodeTaskClosed)
			if diff := cmp.Diff(before, e.snap(key), ignoreTimes); diff != "" {
				t.Errorf("closed task changed:\n%s", diff)
			}
		})
	}
}
