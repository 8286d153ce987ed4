package app

import (
	"context"
	"fmt"
	"time"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/codehost/github"
	"github.com/codeboost/codeboost/merge"
)

// mergeReconcileLimit bounds startup's reading GitHub again for the merges
// an earlier process left in flight.
const mergeReconcileLimit = time.Minute

// openGitHub is the github block as a code host: GitHub's REST client
// with the token read from the environment variable the block names (the
// file never holds it). No block: nil, and codeboost merges nothing. A
// block whose token is not set is a startup error: a configuration that
// asks for GitHub and cannot reach it must not start as if it could.
func (a *App) openGitHub() (codehost.Host, error) {
	if p := a.opt.Parts; p != nil {
		return p.GitHub, nil
	}
	g := a.opt.GitHub
	if g == nil {
		return nil, nil
	}
	name := g.TokenEnv
	if name == "" {
		name = github.DefaultTokenEnv
	}
	token, err := github.TokenFromEnv(name)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return github.New(github.Options{BaseURL: g.APIURL, Token: token, UserAgent: "codeboost"})
}

// openMerge builds the merge coordinator on the runner's loop and Store,
// and runs its startup: every merge an earlier process left submitting or
// queued is read on GitHub again and its outcome recorded ("The next
// startup checks GitHub again, so a skipped merge observation is
// recovered"). A GitHub that does not answer leaves them as they are.
func (a *App) openMerge() error {
	host, err := a.openGitHub()
	if err != nil {
		return err
	}
	a.host = host
	c, err := merge.New(merge.Config{Store: a.store, Capability: a.capability, Host: host, Loop: a.loop, IDs: a.ids(),
		PullRequest: a.pullRequest(), Failpoints: a.failpoints(), Trace: a.traceLine})
	if err != nil {
		return err
	}
	a.merge = c
	ctx, cancel := context.WithTimeout(context.Background(), mergeReconcileLimit)
	defer cancel()
	if err := c.Reconcile(ctx); err != nil {
		a.log.Error("merge: the merges an earlier process left could not all be reconciled", "err", err)
	}
	return nil
}

// pullRequest names each configured task's pull request, by plan key.
func (a *App) pullRequest() func(planKey string) (string, int, bool) {
	if p := a.opt.Parts; p != nil {
		return p.PullRequest
	}
	prs := map[string]*TaskGitHub{}
	for _, t := range a.opt.Tasks {
		if t.GitHub != nil && t.GitHub.PullRequest > 0 {
			prs[t.identity().Key()] = t.GitHub
		}
	}
	return func(planKey string) (string, int, bool) {
		if p := prs[planKey]; p != nil {
			return p.Repo, p.PullRequest, true
		}
		return "", 0, false
	}
}

// stopMerge is step 1's half for merges when no review server does it (the
// server stops the merge coordinator in its own stopping turn).
func (a *App) stopMerge() {
	if a.merge != nil {
		a.merge.Stop()
	}
}

// awaitMerges is step 3's "await request-owned work (the merge
// coordinator)" when no review server awaits it.
func (a *App) awaitMerges() (*wait, error) {
	if a.merge == nil {
		return nil, nil
	}
	idle, err := a.merge.AwaitIdle(context.Background())
	if err != nil {
		a.log.Error("shutdown: the merges in flight could not be awaited", "err", err)
		return nil, nil
	}
	return on(idle), nil
}
