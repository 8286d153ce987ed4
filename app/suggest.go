package app

import (
	"context"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/suggest"
)

// suggestOpenLimit bounds startup's FailLeftovers, one Store write on the
// loop.
const suggestOpenLimit = 30 * time.Second

// openSuggest builds the suggestion coordinator (package suggest) after
// the runner's recovery, on the runner's loop and Store: "The coordinator
// is a single in-process owner per runner/store. Construct one instance,
// not one per HTTP request." Its settlement writes hold the shutdown
// capability ("E3's settleSuggestion when it is wired").
//
// It has no provider yet: live planning runs through D in planning's own
// worker and needs the task's github block to read the issue (#117), which
// is being built separately. Until then every start is the recorded
// refusal "Planning agent not available yet", and, planning being off,
// startup does not fail the requests an earlier process left pending
// (FailLeftovers runs "while planning is on"): such a request stays pending
// until the user cancels it (the Store's cancel). A failure to build it is
// logged and leaves the planning routes out; the server runs on.
func (a *App) openSuggest() {
	var provider suggest.Provider // nil: no live planning in this build (see above)
	c, err := suggest.New(suggest.Config{Store: a.store, Capability: a.capability, Loop: a.loop, Clock: a.clock,
		IDs: ids.Random{}, Provider: provider, Trace: func(line string) { a.log.Info("suggest: " + line) }})
	if err != nil {
		a.log.Error("planning is closed", "err", err)
		return
	}
	a.suggest = c
	if provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), suggestOpenLimit)
	defer cancel()
	if n, err := c.FailLeftovers(ctx); err != nil {
		a.log.Error("planning: the requests an earlier process left pending could not be failed", "err", err)
	} else if n > 0 {
		a.log.Info("planning: failed the requests an earlier process left pending", "count", n)
	}
}

// closeSuggest is step 6's suggestion close(), after Ask's: admission
// flips to closing, every invocation is aborted, and it waits until every
// provider has settled or the shutdown grace has passed (the coordinator
// bounds it: PLANNING_SHUTDOWN_GRACE_MS).
func (a *App) closeSuggest() {
	if a.suggest == nil {
		return
	}
	<-a.suggest.Close()
}
