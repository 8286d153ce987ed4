package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

const (
	recordedCause = "plan revision 4 replaced 3"           // the cause saved with first reason stale
	presentCause  = "assignment other replaced unassigned" // what changed, unseen by the runner
)

// settledFacts are a settlement's facts: D ended with exit 0 and valid
// output unless a row says otherwise; the attempt has a 30-minute timeout.
func settledFacts(first words.Reason, stop words.StopReason) terminalFacts {
	f := terminalFacts{firstReason: first, settled: true, stopReason: stop,
		outputValid: true, output: `{"ok":true}`, timeoutMinutes: 30}
	if first == words.ReasonStale {
		f.staleCause = recordedCause
	}
	if stop != "" {
		f.diagnostic = "D: " + string(stop)
	}
	return f
}

// recoveredFacts are a recovered row's facts: the process died before D
// settled; stop is the row's saved stop_reason.
func recoveredFacts(first words.Reason, stop words.StopReason) terminalFacts {
	f := terminalFacts{firstReason: first, stopReason: stop, timeoutMinutes: 30}
	if first == words.ReasonStale {
		f.staleCause = recordedCause
	}
	return f
}

type decideCase struct {
	name string
	f    terminalFacts
	want outcome
}

func with(f terminalFacts, edit func(*terminalFacts)) terminalFacts { edit(&f); return f }

func notCurrent(f *terminalFacts) { f.presentCause = presentCause }

// TestDecideTerminal is the table of rule 2 of "Rules for the running
// state" (settlement) and of startup recovery's step 3 (finalization), row
// by row in the contract's order, with the contract's exact words.
//
// kills: mutant/no-first-reason-wins mutant/no-stale-precedence mutant/shutdown-beats-d-reason mutant/summary-marks-whole-tail-cut
func TestDecideTerminal(t *testing.T) {
	timedOut30 := words.TimedOutAfter(30)
	if timedOut30 != "Timed out after 30 minutes" {
		t.Fatalf("words.TimedOutAfter(30) = %q", timedOut30)
	}
	cancelledByUser := outcome{state: words.Cancelled, firstReason: words.ReasonCancelled, diagnostic: words.CancelledByUser}
	stoppedByShutdown := outcome{state: words.Cancelled, firstReason: words.ReasonShutdown, diagnostic: words.StoppedByShutdown}
	staleRecorded := outcome{state: words.Stale, firstReason: words.ReasonStale, diagnostic: recordedCause, staleCause: recordedCause}
	timeLimit := outcome{state: words.Cancelled, firstReason: words.ReasonTimeLimit, diagnostic: words.TaskTimeLimitReached}
	stalePresent := outcome{state: words.Stale, diagnostic: presentCause, staleCause: presentCause}
	shutdownStale := outcome{state: words.Stale, firstReason: words.ReasonShutdown, diagnostic: presentCause, staleCause: presentCause}

	cases := []decideCase{
		// Rule 2, at settlement.
		{"cancelled, any result", settledFacts(words.ReasonCancelled, ""), cancelledByUser},
		{"cancelled, D timeout, context changed", with(settledFacts(words.ReasonCancelled, words.StopTimeout), notCurrent), cancelledByUser},
		{"shutdown, D timeout: D's reason wins", settledFacts(words.ReasonShutdown, words.StopTimeout),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: timedOut30}},
		{"shutdown, D output-limit: D's diagnostic", settledFacts(words.ReasonShutdown, words.StopOutputLimit),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: "D: output-limit"}},
		{"shutdown, D capture-failure without a diagnostic", with(settledFacts(words.ReasonShutdown, words.StopCaptureFailure), func(f *terminalFacts) { f.diagnostic = "" }),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: string(words.StopCaptureFailure)}},
		{"shutdown, D timeout, context changed: failed needs a current context", with(settledFacts(words.ReasonShutdown, words.StopTimeout), notCurrent), shutdownStale},
		{"shutdown, D shutdown", settledFacts(words.ReasonShutdown, words.StopShutdown), stoppedByShutdown},
		{"shutdown, D cancelled", settledFacts(words.ReasonShutdown, words.StopCancelled), stoppedByShutdown},
		{"shutdown, valid result", settledFacts(words.ReasonShutdown, ""), stoppedByShutdown},
		{"shutdown, provider error, context changed", with(settledFacts(words.ReasonShutdown, ""), func(f *terminalFacts) { f.exitCode = 1; notCurrent(f) }), stoppedByShutdown},
		{"stale, any result", settledFacts(words.ReasonStale, ""), staleRecorded},
		{"stale, D timeout, context changed again", with(settledFacts(words.ReasonStale, words.StopTimeout), notCurrent), staleRecorded},
		{"time-limit, D timeout", settledFacts(words.ReasonTimeLimit, words.StopTimeout), timeLimit},
		{"time-limit, valid result", settledFacts(words.ReasonTimeLimit, ""), timeLimit},
		{"none, context changed, valid result", with(settledFacts("", ""), notCurrent), stalePresent},
		{"none, context changed, D timeout: stale before every D stop reason", with(settledFacts("", words.StopTimeout), notCurrent), stalePresent},
		{"none, context changed, D output-limit", with(settledFacts("", words.StopOutputLimit), notCurrent), stalePresent},
		{"none, context changed, provider error", with(settledFacts("", ""), func(f *terminalFacts) { f.exitCode = 1; notCurrent(f) }), stalePresent},
		{"none, D timeout", settledFacts("", words.StopTimeout), outcome{state: words.Failed, diagnostic: timedOut30}},
		{"none, D output-limit", settledFacts("", words.StopOutputLimit), outcome{state: words.Failed, diagnostic: "D: output-limit"}},
		{"none, D capture-failure", settledFacts("", words.StopCaptureFailure), outcome{state: words.Failed, diagnostic: "D: capture-failure"}},
		{"none, exit 0, valid output", settledFacts("", ""), outcome{publish: true, state: words.Completed}},
		{"none, exit 0, invalid output", with(settledFacts("", ""), func(f *terminalFacts) { f.outputValid, f.output = false, "not json" }),
			outcome{state: words.Failed, diagnostic: "output did not pass validation: not json"}},
		{"none, provider error", with(settledFacts("", ""), func(f *terminalFacts) { f.exitCode, f.outputValid, f.output = 1, false, "provider error\n" }),
			outcome{state: words.Failed, diagnostic: "exit code 1: provider error"}},
		{"none, exit 2, valid output, no output tail", with(settledFacts("", ""), func(f *terminalFacts) { f.exitCode, f.output = 2, "  " }),
			outcome{state: words.Failed, diagnostic: "exit code 2"}},
		{"none, D cancelled without a first reason", settledFacts("", words.StopCancelled),
			outcome{state: words.Failed, diagnostic: "D stopped the invocation: cancelled"}},
		{"none, long output: the bounded tail", with(settledFacts("", ""), func(f *terminalFacts) { f.exitCode, f.output = 1, strings.Repeat("a", 600)+"END" }),
			outcome{state: words.Failed, diagnostic: "exit code 1: …" + strings.Repeat("a", 509) + "END"}},
		{"none, output of exactly the tail's 512 bytes: whole, with no mark of a cut", with(settledFacts("", ""), func(f *terminalFacts) { f.exitCode, f.output = 1, strings.Repeat("a", 509)+"END" }),
			outcome{state: words.Failed, diagnostic: "exit code 1: " + strings.Repeat("a", 509) + "END"}},
		{"none, provider error with stderr: its end follows stdout's", with(settledFacts("", ""), func(f *terminalFacts) {
			f.exitCode, f.outputValid, f.output, f.stderr = 1, false, "partial\n", "log line\nKeyError: model\n"
		}), outcome{state: words.Failed, diagnostic: "exit code 1: partial; stderr: log line\nKeyError: model"}},
		{"none, long stderr: its last KiB, marked as cut", with(settledFacts("", ""), func(f *terminalFacts) {
			f.exitCode, f.output, f.stderr = 3, " ", strings.Repeat("e", 2000)+"END"
		}), outcome{state: words.Failed, diagnostic: "exit code 3; stderr: …" + strings.Repeat("e", 1021) + "END"}},
		{"none, D's stop: stderr still quoted, stdout not", with(settledFacts("", words.StopCancelled), func(f *terminalFacts) {
			f.output, f.stderr = "partial", "interrupted"
		}), outcome{state: words.Failed, diagnostic: "D stopped the invocation: cancelled; stderr: interrupted"}},
		{"none, budget and deadline passed do not count at settlement", with(settledFacts("", ""), func(f *terminalFacts) { f.budgetPassed, f.deadlinePassed = true, true }),
			outcome{publish: true, state: words.Completed}},

		// Startup recovery, step 3: the same first-reason table.
		{"recovered cancelled", recoveredFacts(words.ReasonCancelled, ""), cancelledByUser},
		{"recovered cancelled, budget passed", with(recoveredFacts(words.ReasonCancelled, ""), func(f *terminalFacts) { f.budgetPassed, f.deadlinePassed = true, true }), cancelledByUser},
		{"recovered stale", recoveredFacts(words.ReasonStale, ""), staleRecorded},
		{"recovered shutdown, saved timeout: D's reason wins", recoveredFacts(words.ReasonShutdown, words.StopTimeout),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: timedOut30}},
		{"recovered shutdown, saved output-limit", recoveredFacts(words.ReasonShutdown, words.StopOutputLimit),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: string(words.StopOutputLimit)}},
		{"recovered shutdown, saved capture-failure", recoveredFacts(words.ReasonShutdown, words.StopCaptureFailure),
			outcome{state: words.Failed, firstReason: words.ReasonShutdown, diagnostic: string(words.StopCaptureFailure)}},
		{"recovered shutdown, saved timeout, context changed", with(recoveredFacts(words.ReasonShutdown, words.StopTimeout), notCurrent), shutdownStale},
		{"recovered shutdown, no saved stop reason: D's reason was lost", recoveredFacts(words.ReasonShutdown, ""), stoppedByShutdown},
		{"recovered time-limit", recoveredFacts(words.ReasonTimeLimit, ""), timeLimit},
		{"recovered none, context changed: before both deadline fallbacks", with(recoveredFacts("", ""), func(f *terminalFacts) { notCurrent(f); f.budgetPassed, f.deadlinePassed = true, true }), stalePresent},
		{"recovered none, budget passed: the time-limit mapping", with(recoveredFacts("", ""), func(f *terminalFacts) { f.budgetPassed, f.deadlinePassed = true, true }), timeLimit},
		{"recovered none, attempt deadline passed", with(recoveredFacts("", ""), func(f *terminalFacts) { f.deadlinePassed = true }),
			outcome{state: words.Failed, diagnostic: words.TimedOut}},
		{"recovered none, nothing expired", recoveredFacts("", ""), outcome{state: words.Failed, diagnostic: words.Interrupted}},
		{"recovered none, a saved timeout alone does not decide", recoveredFacts("", words.StopTimeout), outcome{state: words.Failed, diagnostic: words.Interrupted}},
	}
	for _, c := range cases {
		if got := decideTerminal(c.f); got != c.want {
			t.Errorf("%s:\n  got  %+v\n  want %+v", c.name, got, c.want)
		}
	}
	if got := words.Interrupted; got != "Interrupted: codeboost stopped while this was running" {
		t.Errorf("words.Interrupted = %q", got)
	}
}

// TestDecideTerminalSameAtSettlementAndRecovery: recovery "uses the same
// first-reason mapping as settlement", so wherever a first reason or a
// changed context decides, the same facts give the same terminal row
// whether D settled or the process died first.
func TestDecideTerminalSameAtSettlementAndRecovery(t *testing.T) {
	n := 0
	for _, first := range []words.Reason{"", words.ReasonCancelled, words.ReasonShutdown, words.ReasonStale, words.ReasonTimeLimit} {
		for _, stop := range []words.StopReason{"", words.StopCancelled, words.StopShutdown, words.StopTimeout, words.StopOutputLimit, words.StopCaptureFailure} {
			for _, cause := range []string{"", presentCause} {
				if first == "" && cause == "" {
					continue // neither decides: D's result or the fallbacks do
				}
				s, r := recoveredFacts(first, stop), recoveredFacts(first, stop)
				s.settled, s.exitCode, s.output = true, 1, "provider error"
				s.presentCause, r.presentCause = cause, cause
				gs, gr := decideTerminal(s), decideTerminal(r)
				if gs != gr {
					t.Errorf("first=%q stop=%q cause=%q: settlement %+v, recovery %+v", first, stop, cause, gs, gr)
				}
				n++
			}
		}
	}
	if n != 54 {
		t.Fatalf("%d combinations compared", n)
	}
}

// TestRecoveredDeadlineIncludesItsInstant: recovery reads the attempt's
// deadline and the task's budget the way the live runner does. The live
// timer fires at the deadline itself (afterFunc(Deadline - now)), and the
// launch check refuses at it (!now.Before), so a row recovered at exactly
// its deadline or its budget's end has passed it, as it has a moment
// later; a moment earlier it was interrupted.
func TestRecoveredDeadlineIncludesItsInstant(t *testing.T) {
	created := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	deadline := created.Add(30 * time.Minute)
	a := store.Attempt{ID: "a1", State: words.Running, CreatedAt: created, Deadline: deadline}
	for _, c := range []struct {
		name       string
		now        time.Time
		budget     bool
		state      words.State
		diagnostic string
	}{
		{"a moment before the deadline", deadline.Add(-time.Millisecond), false, words.Failed, words.Interrupted},
		{"at the deadline", deadline, false, words.Failed, words.TimedOut},
		{"after the deadline", deadline.Add(time.Millisecond), false, words.Failed, words.TimedOut},
		{"a moment before the budget's end", deadline.Add(-time.Millisecond), true, words.Failed, words.Interrupted},
		{"at the budget's end", deadline, true, words.Cancelled, words.TaskTimeLimitReached},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := a
			var task store.Task
			if c.budget {
				row.Deadline = deadline.Add(time.Hour)
				task.BudgetDeadline = &deadline
			}
			got := recoveredTerminal(row, task, store.Context{}, c.now)
			if got.State != c.state || got.Diagnostic != c.diagnostic {
				t.Fatalf("recovered at %s: %s %q; want %s %q", c.now.Sub(deadline), got.State, got.Diagnostic, c.state, c.diagnostic)
			}
		})
	}
}

// TestJoinDiagAddsToWhatIsThere: a recovered row's diagnostic gains each
// further cause after "; ", and a cause added to none is the whole
// diagnostic, with no separator before it.
func TestJoinDiagAddsToWhatIsThere(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"", "export failed", "export failed"},
		{"interrupted", "export failed", "interrupted; export failed"},
	} {
		if got := joinDiag(c.a, c.b); got != c.want {
			t.Errorf("joinDiag(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
