package suggest

import (
	"fmt"
	"time"

	"github.com/codeboost/codeboost/words"
)

// The exact words this package writes or returns. The first two are the
// contract's own (shared/spec/messages.md), kept in package words with
// the rest of them; the others are this package's
// reasons, each naming what happened so that a person can act on it.
const (
	// NotAvailable is Start's answer without a provider: "Without a
	// github block, or in a demo, the server returns 'Planning agent not
	// available yet'".
	NotAvailable = words.PlanningNotAvailable
	// ServerStopped is the reason of a request the server stopped before
	// it finished: at startup for what an earlier process left pending
	// (FailLeftovers), and at shutdown for what Close aborted.
	ServerStopped = words.PlanningServerStopped

	providerFailed = "The planning agent failed: "
	notStarted     = "The planning agent could not start: "
	invalidReply   = "The planning agent's reply is not valid: "
	replyNotSaved  = "The planning agent's reply could not be saved: "
)

// timedOut is the reason of a request whose budget ran out, in the words
// of an attempt's own timeout ("Timed out after n minutes").
func timedOut(budget time.Duration) string {
	if budget%time.Minute == 0 {
		return words.TimedOutAfter(int(budget / time.Minute))
	}
	return fmt.Sprintf("Timed out after %s", budget)
}

// resultNotSaved is the unresolved marker's words, as the runner's status
// says them: "Needs restart: result could not be saved".
var resultNotSaved = words.NeedsRestart(words.ResultNotSaved)
