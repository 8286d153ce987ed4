package simenv

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/codeboost/codeboost/codehost"
)

// GitHub is the simulated code host (codehost.Host): pull requests the
// script sets up and changes, and what the next merge command answers. It
// is outside the runner's process, so it outlives a crash.
//
// Reads made on an HTTP handler's goroutine can be held (Hold) until the
// script releases them, so a scenario can close the write gate between a
// status read and its write. Calls made by the merge coordinator's own
// work (Loop.Go, which the simulator runs at once) are never held: the
// scenario reaches between them through the merge/before-final-reread
// failpoint instead.
type GitHub struct {
	mu      sync.Mutex
	prs     map[string]*codehost.PullRequest // by "repo#n"
	issues  map[string]*codehost.Issue       // by "repo#n"
	failing map[string]string                // issue reads that fail, with their error
	next    []string                         // the next merge answers, in order
	holds   map[string]chan struct{}         // reads of "repo#n" wait until closed
	waiting map[string]chan struct{}         // closed when a held read first waits
	waiters int                              // reads waiting on a hold now
	arrived chan struct{}                    // closed (and replaced) when a read starts waiting
	trace   func(string)
}

// NewGitHub returns a host with no pull requests.
func NewGitHub(trace func(string)) *GitHub {
	return &GitHub{prs: map[string]*codehost.PullRequest{}, issues: map[string]*codehost.Issue{}, failing: map[string]string{},
		holds:   map[string]chan struct{}{},
		waiting: map[string]chan struct{}{}, arrived: make(chan struct{}), trace: trace}
}

func prKey(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) }

// SetPullRequest adds or replaces a pull request.
func (g *GitHub) SetPullRequest(repo string, pr codehost.PullRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cp := pr
	g.prs[prKey(repo, pr.Number)] = &cp
}

// Update changes a pull request in place.
func (g *GitHub) Update(repo string, n int, fn func(*codehost.PullRequest)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	pr := g.prs[prKey(repo, n)]
	if pr == nil {
		return fmt.Errorf("no pull request %s", prKey(repo, n))
	}
	fn(pr)
	return nil
}

// NextMerge queues what the next merge commands answer: merged, queued,
// refused, unknown (no answer, nothing merged) or unknown-merged (no
// answer, but GitHub merged).
func (g *GitHub) NextMerge(answers ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next = append(g.next, answers...)
}

// Hold makes the next reads of the pull request wait until Release; it
// returns a channel closed when a read first waits.
func (g *GitHub) Hold(repo string, n int) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := prKey(repo, n)
	g.holds[k], g.waiting[k] = make(chan struct{}), make(chan struct{})
	return g.waiting[k]
}

// Waiters is the number of reads waiting on a hold now, and a channel
// closed when the next one starts waiting: a scenario that starts a
// request waits until the count grows, whichever pull request it reads.
func (g *GitHub) Waiters() (int, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiters, g.arrived
}

// Waiting lists, sorted by pull request, the channels Hold returned for
// the holds not released yet: a request's read of any of them may wait.
func (g *GitHub) Waiting() []chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys := make([]string, 0, len(g.holds))
	for k := range g.holds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]chan struct{}, 0, len(keys))
	for _, k := range keys {
		out = append(out, g.waiting[k])
	}
	return out
}

// Release lets the held reads of the pull request answer.
func (g *GitHub) Release(repo string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := prKey(repo, n)
	if h := g.holds[k]; h != nil {
		close(h)
		delete(g.holds, k)
	}
}

func (g *GitHub) tracef(format string, args ...any) {
	if g.trace != nil {
		g.trace("github: " + fmt.Sprintf(format, args...))
	}
}

// SetIssue adds or replaces an issue; failing, when not "", is the error
// every read of it answers (a GitHub that fails).
func (g *GitHub) SetIssue(repo string, is codehost.Issue, failing string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cp := is
	g.issues[prKey(repo, is.Number)] = &cp
	if failing != "" {
		g.failing[prKey(repo, is.Number)] = failing
	} else {
		delete(g.failing, prKey(repo, is.Number))
	}
}

// Issue answers the issue as the script set it, or its failure.
func (g *GitHub) Issue(ctx context.Context, repo string, number int) (codehost.Issue, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := prKey(repo, number)
	if msg := g.failing[k]; msg != "" {
		g.tracef("read issue %s: fails: %s", k, msg)
		return codehost.Issue{}, fmt.Errorf("%w: %s", codehost.ErrUnavailable, msg)
	}
	is := g.issues[k]
	if is == nil {
		return codehost.Issue{}, fmt.Errorf("%w: issue %s", codehost.ErrNotFound, k)
	}
	g.tracef("read issue %s", k)
	return *is, nil
}

// PullRequest answers the pull request as the script last set it, after
// any hold.
func (g *GitHub) PullRequest(ctx context.Context, repo string, number int) (codehost.PullRequest, error) {
	k := prKey(repo, number)
	g.mu.Lock()
	hold, waiting := g.holds[k], g.waiting[k]
	g.mu.Unlock()
	if hold != nil {
		g.mu.Lock()
		select {
		case <-waiting:
		default:
			close(waiting)
		}
		g.waiters++
		close(g.arrived)
		g.arrived = make(chan struct{})
		g.mu.Unlock()
		<-hold
		g.mu.Lock()
		g.waiters--
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	pr := g.prs[k]
	if pr == nil {
		return codehost.PullRequest{}, fmt.Errorf("%w: %s", codehost.ErrNotFound, k)
	}
	g.tracef("read %s: %s", k, describe(*pr))
	return *pr, nil
}

func describe(pr codehost.PullRequest) string {
	switch {
	case pr.Merged:
		return "merged"
	case pr.State != "open":
		return "closed"
	}
	return "open at " + pr.HeadSHA
}

// Merge answers the next scripted answer (merged when none is queued),
// with GitHub's own rules first: a closed or merged pull request, or a
// head that moved, is refused.
func (g *GitHub) Merge(ctx context.Context, repo string, number int, headSHA string) (codehost.MergeResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := prKey(repo, number)
	pr := g.prs[k]
	if pr == nil {
		return codehost.MergeResult{}, fmt.Errorf("%w: %s", codehost.ErrNotFound, k)
	}
	answer := "merged"
	if len(g.next) > 0 {
		answer, g.next = g.next[0], g.next[1:]
	}
	g.tracef("merge %s at %s: %s", k, headSHA, answer)
	switch {
	case pr.Merged || pr.State != "open":
		return codehost.MergeResult{}, &codehost.HostError{Op: "merge", Repo: repo, Number: number, Status: 405, Kind: codehost.ErrRefused, Message: "Pull Request is not mergeable"}
	case pr.HeadSHA != headSHA:
		return codehost.MergeResult{}, &codehost.HostError{Op: "merge", Repo: repo, Number: number, Status: 409, Kind: codehost.ErrRefused, Message: "Head branch was modified. Review and try the merge again."}
	}
	switch answer {
	case "queued":
		return codehost.MergeResult{Queued: true}, nil
	case "refused":
		return codehost.MergeResult{}, &codehost.HostError{Op: "merge", Repo: repo, Number: number, Status: 405, Kind: codehost.ErrRefused, Message: "Required status check is failing"}
	case "unknown":
		return codehost.MergeResult{}, &codehost.UnknownOutcomeError{Repo: repo, Number: number, Message: "connection reset by peer"}
	case "unknown-merged":
		pr.Merged, pr.State, pr.MergeCommitSHA = true, "closed", "m"+headSHA[1:]
		return codehost.MergeResult{}, &codehost.UnknownOutcomeError{Repo: repo, Number: number, Message: "connection reset by peer"}
	}
	pr.Merged, pr.State, pr.MergeCommitSHA = true, "closed", "m"+headSHA[1:]
	return codehost.MergeResult{Merged: true, SHA: pr.MergeCommitSHA}, nil
}

// PullRequests lists the pull requests' keys, sorted (for checks).
func (g *GitHub) PullRequests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var keys []string
	for k := range g.prs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
