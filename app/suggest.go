package app

import (
	"context"
	"time"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/planning"
	"github.com/codeboost/codeboost/store"
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
// Live planning runs "for a non-demo review with a github block": then the
// provider is package planning's, through D, under this database's
// planning owner token, and each start first reads the task's issue from
// GitHub (a failure is the start's recorded refusal, 502). Without a
// github block, or in the demo, every start is the recorded refusal
// "Planning agent not available yet", and, planning being off, startup
// does not fail the requests an earlier process left pending (FailLeftovers
// runs "while planning is on"): such a request stays pending until the user
// cancels it. A failure to build it is logged and leaves the planning
// routes out; the server runs on.
func (a *App) openSuggest() {
	var provider suggest.Provider
	var issue func(ctx context.Context, planKey string) (string, error)
	switch host := a.host; {
	case a.opt.Parts != nil:
		provider, issue = a.opt.Parts.Planner, a.opt.Parts.Issue
	case host != nil && !a.opt.Demo:
		p, read, err := a.livePlanning(host)
		if err != nil {
			a.log.Error("live planning is off", "err", err)
		} else {
			provider, issue = p, read
		}
	}
	c, err := suggest.New(suggest.Config{Store: a.store, Capability: a.capability, Loop: a.loop, Clock: a.clock,
		IDs: a.ids(), Provider: provider, Issue: issue, Trace: func(line string) { a.traceLine("suggest: " + line) }})
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

// livePlanning is the provider through D and the issue reader.
func (a *App) livePlanning(host codehost.Host) (suggest.Provider, func(context.Context, string) (string, error), error) {
	var token string
	if err := a.capability.Update(func(tx *store.Tx) (err error) {
		token, err = tx.PlanningOwnerToken(a.lock.Device(), a.lock.Inode(), nil)
		return err
	}); err != nil {
		return nil, nil, err
	}
	repos := a.repository()
	issues := map[string]*TaskGitHub{}
	for _, t := range a.opt.Tasks {
		if t.GitHub != nil && t.GitHub.Issue > 0 {
			issues[t.identity().Key()] = t.GitHub
		}
	}
	p, err := planning.New(planning.Config{D: a.d, Loop: a.loop, IDs: a.ids(), Owner: token, Profile: a.opt.Runner.Agent.Profile(),
		Source: func(planKey string) dadapter.Source {
			src := dadapter.Source{Repository: repos(planKey)}
			if t, err := a.store.Task(planKey); err == nil {
				src.Commit = t.Head()
			}
			return src
		},
		Trace: a.traceLine})
	if err != nil {
		return nil, nil, err
	}
	read := func(ctx context.Context, planKey string) (string, error) {
		g := issues[planKey]
		if g == nil {
			return "", nil // the task names no issue: it plans from its plan alone
		}
		is, err := host.Issue(ctx, g.Repo, g.Issue)
		if err != nil {
			return "", err
		}
		return is.Title + "\n\n" + is.Body, nil
	}
	return p, read, nil
}

// closeSuggest is step 6's suggestion close(), after Ask's: admission
// flips to closing, every invocation is aborted, and the next step waits
// until every provider has settled or the shutdown grace has passed (the
// coordinator bounds it: PLANNING_SHUTDOWN_GRACE_MS).
func (a *App) closeSuggest() (*wait, error) {
	if a.suggest == nil {
		return nil, nil
	}
	return on(a.suggest.Close()), nil
}
