// Package codehost is the code host (GitHub) as codeboost's merge
// coordinator and live planning see it: an interface small enough to fake,
// the few facts they read, and errors they can classify without parsing
// text.
//
// The one thing this package exists to get right is the merge boundary. A
// merge cannot be taken back, and a request that got no clear answer may
// still have merged. So every error from Host.Merge is either a definite
// refusal (Definite reports true: nothing was merged, for sure) or an
// *UnknownOutcomeError, which obliges the caller to keep the merge in
// flight and read the pull request again later. Nothing in between.
//
// It imports only the standard library, so that the coordinator can depend
// on it without pulling in an HTTP client; the GitHub client lives in
// codehost/github and a fake GitHub for tests in codehost/github/fakegithub.
package codehost

import "context"

// Host is the code host as the merge coordinator and live planning see it.
//
// Implementations check their inputs (CheckRepo, CheckNumber, CheckSHA)
// before sending anything, so that a bad identifier from a plan or a store
// can never reach the host as a path or a merge.
type Host interface {
	// Issue reads an issue (planning reads it before each start).
	Issue(ctx context.Context, repo string, number int) (Issue, error)
	// PullRequest reads a pull request's state (merge checks, queue
	// polling, startup reconciliation).
	PullRequest(ctx context.Context, repo string, number int) (PullRequest, error)
	// Merge asks the host to merge the pull request at exactly headSHA.
	// This is the irreversible boundary: an error that is not a definite
	// refusal (a network failure, a timeout, a 5xx) means the outcome is
	// UNKNOWN — the caller must keep the merge as in flight and read the
	// pull request again later; it must never assume "not merged".
	Merge(ctx context.Context, repo string, number int, headSHA string) (MergeResult, error)
}

// Issue is what planning needs of an issue: its text to plan from and
// whether it is still open, so that a closed issue is not started.
type Issue struct {
	Number int
	Title  string
	Body   string
	State  string // "open" or "closed"
}

// PullRequest is what the merge coordinator needs to decide whether a merge
// may be asked for, and to learn afterwards whether one happened.
type PullRequest struct {
	Number int
	State  string // "open" or "closed"; closed and not Merged is a removed pull request
	Merged bool
	// MergeCommitSHA is set only when Merged: GitHub also fills the field
	// for open pull requests with a test merge commit, which must never be
	// mistaken for a merge.
	MergeCommitSHA string
	// HeadSHA is what Merge must be given: merging at an exact head keeps
	// a push that arrived after the checks from being merged unchecked.
	HeadSHA string
	BaseRef string
	Draft   bool
	// Mergeable is nil while GitHub is still computing it; callers poll
	// again rather than read nil as either answer.
	Mergeable *bool
}

// MergeResult is a merge the host accepted.
type MergeResult struct {
	Merged bool   // merged now, at SHA
	SHA    string // the merge commit, when Merged
	// Queued is a merge accepted but not yet done (HTTP 202): the pull
	// request stays open and the caller polls PullRequest until it is
	// merged or closed.
	Queued bool
}
