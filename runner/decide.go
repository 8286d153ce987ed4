package runner

import (
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/words"
)

// terminalFacts is everything the terminal decision looks at. Settlement
// fills it from the job and D's settlement; startup recovery fills it from a
// row whose process died before D settled.
type terminalFacts struct {
	firstReason  words.Reason // "" for none
	staleCause   string       // the recorded cause, with first reason stale
	presentCause string       // what changed since the context was captured; "" while it is current

	// settled is true at settlement. At recovery it is false: D's result
	// died with the process; of D's facts only the row's saved stop reason
	// remains, and the two deadlines below stand in for the rest.
	settled        bool
	stopReason     words.StopReason // D's; at recovery, the row's saved stop_reason
	exitCode       int
	outputValid    bool   // the output passes validation
	diagnostic     string // D's bounded diagnostic
	output         string // bounded output, for the exit summary
	stderr         string // the end of the agent's standard error, for the exit summary
	timeoutMinutes int    // the attempt's timeout, for "Timed out after n minutes"

	budgetPassed   bool // recovery: the task's budget_deadline has passed
	deadlinePassed bool // recovery: the attempt's deadline has passed
}

// outcome is a terminal decision: a terminal state with its diagnostic, or
// publish (completed, if the compare-and-swap succeeds).
type outcome struct {
	publish       bool
	state         words.State
	firstReason   words.Reason // the first reason the terminal write records
	diagnostic    string
	staleCause    string
	diagnosticRef string // partial-output file, set by the export
}

// decideTerminal is the first-reason table of rule 2 of "Rules for the
// running state", which startup recovery's step 3 applies too ("the same
// first-reason mapping as settlement"). The first reason comes first, then a
// context that is no longer current, then how the attempt ended on its own;
// what only one side knows (D's result at settlement, the deadline fallbacks
// at recovery) branches on f.settled.
func decideTerminal(f terminalFacts) outcome {
	first := f.firstReason
	dOwn := f.stopReason.ByD() // D stopped it itself
	switch {
	case first == words.ReasonShutdown && dOwn:
		// D stopped first: its reason wins, not requeued. A failed row
		// still needs a current context; otherwise it takes stale.
		if f.presentCause != "" {
			return outcome{state: words.Stale, firstReason: first, diagnostic: f.presentCause, staleCause: f.presentCause}
		}
		o := failedByD(f)
		o.firstReason = first
		return o
	case first != "":
		return outcome{state: terminalForReason(first), firstReason: first,
			diagnostic: reasonDiagnostic(first, f.staleCause), staleCause: f.staleCause}
	case f.presentCause != "":
		// Before every D stop reason and both deadline fallbacks: a
		// timeout that coincides with a context change always ends stale.
		return outcome{state: words.Stale, diagnostic: f.presentCause, staleCause: f.presentCause}
	case !f.settled && f.budgetPassed:
		return outcome{state: words.Cancelled, firstReason: words.ReasonTimeLimit, diagnostic: words.TaskTimeLimitReached}
	case !f.settled && f.deadlinePassed:
		return outcome{state: words.Failed, diagnostic: words.TimedOut}
	case f.settled && dOwn:
		return failedByD(f)
	case !f.settled:
		return outcome{state: words.Failed, diagnostic: words.Interrupted}
	case f.stopReason == words.StopNone && f.exitCode == 0 && f.outputValid:
		return outcome{publish: true, state: words.Completed}
	}
	summary := fmt.Sprintf("exit code %d", f.exitCode)
	switch {
	case f.stopReason != words.StopNone:
		summary = "D stopped the invocation: " + string(f.stopReason)
	case f.exitCode == 0:
		summary = "output did not pass validation"
	}
	if tail := lastBytes(f.output, 512); tail != "" && f.stopReason == words.StopNone {
		summary += ": " + tail
	}
	if tail := lastBytes(f.stderr, 1024); tail != "" {
		summary += "; stderr: " + tail
	}
	return outcome{state: words.Failed, diagnostic: summary}
}

// lastBytes is the end of s, trimmed, at most n bytes of it (marked "…"
// when cut): the end of an agent's output is where it says why it failed.
func lastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + strings.ToValidUTF8(s[len(s)-n:], "")
	}
	return s
}

// failedByD is failed with D's reason: "Timed out after n minutes", or D's
// bounded diagnostic (recovery has none saved: the reason itself).
func failedByD(f terminalFacts) outcome {
	if f.stopReason == words.StopTimeout {
		return outcome{state: words.Failed, diagnostic: words.TimedOutAfter(f.timeoutMinutes)}
	}
	d := f.diagnostic
	if d == "" {
		d = string(f.stopReason)
	}
	return outcome{state: words.Failed, diagnostic: d}
}
