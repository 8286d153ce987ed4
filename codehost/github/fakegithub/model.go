package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync"
)

// AddIssue adds or replaces issue is.Number in repo (an empty State is
// "open"). A pull request with the same number is removed: GitHub numbers
// issues and pull requests in one space.
func (s *Server) AddIssue(repo string, is Issue) {
	if is.State == "" {
		is.State = "open"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{repo, is.Number}
	delete(s.pulls, k)
	s.issues[k] = is
}

// AddPullRequest adds or replaces pull request pr.Number in repo (an empty
// State is "open"; an empty BaseRef is "main"). An issue with the same
// number is removed.
func (s *Server) AddPullRequest(repo string, pr PullRequest) {
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.BaseRef == "" {
		pr.BaseRef = "main"
	}
	if pr.Mergeable != nil {
		m := *pr.Mergeable
		pr.Mergeable = &m // the model owns its copy
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{repo, pr.Number}
	delete(s.issues, k)
	s.pulls[k] = &pr
}

// PullRequest returns the model's pull request repo#n, to inspect what a
// merge did, and whether there is one.
func (s *Server) PullRequest(repo string, n int) (PullRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.pulls[key{repo, n}]
	if pr == nil {
		return PullRequest{}, false
	}
	return clonePull(pr), true
}

func clonePull(pr *PullRequest) PullRequest {
	out := *pr
	if pr.Mergeable != nil {
		m := *pr.Mergeable
		out.Mergeable = &m
	}
	return out
}

// ClosePullRequest closes repo#n without merging it: the pull request was
// removed under the coordinator.
func (s *Server) ClosePullRequest(repo string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pull(repo, n).State = "closed"
}

// SetHead moves repo#n's head to sha, as a push to its branch would.
func (s *Server) SetHead(repo string, n int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pull(repo, n).HeadSHA = sha
}

// SetMergeable sets what GitHub says of repo#n's mergeability (nil: still
// computing).
func (s *Server) SetMergeable(repo string, n int, mergeable *bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.pull(repo, n)
	pr.Mergeable = nil
	if mergeable != nil {
		m := *mergeable
		pr.Mergeable = &m
	}
}

// FailIssue makes every read of issue repo#n answer status (0 undoes it).
func (s *Server) FailIssue(repo string, n int, status int) { s.failReads(repo, n, false, status) }

// FailPullRequest makes every read of pull request repo#n answer status (0
// undoes it).
func (s *Server) FailPullRequest(repo string, n int, status int) { s.failReads(repo, n, true, status) }

func (s *Server) failReads(repo string, n int, pull bool, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := readKey{key{repo, n}, pull}
	if status == 0 {
		delete(s.failRead, k)
		return
	}
	s.failRead[k] = status
}

// DropNextMerge makes the next merge request for repo#n get no reply: the
// fake hijacks the connection and closes it. With afterMerging the fake
// first merges (if GitHub's rules allow), so the client sees a network
// failure although the merge happened: the irreversible boundary.
func (s *Server) DropNextMerge(repo string, n int, afterMerging bool) {
	s.setFault(repo, n, fault{kind: faultDrop, afterMerging: afterMerging})
}

// FailNextMerge makes the next merge request for repo#n answer status (a
// 5xx, say). With afterMerging the fake first merges (if GitHub's rules
// allow), as a proxy that fails after GitHub did the work would.
func (s *Server) FailNextMerge(repo string, n int, status int, afterMerging bool) {
	s.setFault(repo, n, fault{kind: faultFail, status: status, afterMerging: afterMerging})
}

// HoldNextMerge makes the next merge request for repo#n wait, before
// anything is merged, until release is called: a merge in flight. reached
// is closed when the request has arrived.
func (s *Server) HoldNextMerge(repo string, n int) (reached <-chan struct{}, release func()) {
	h := &mergeHold{reached: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds[key{repo, n}] = h
	s.mu.Unlock()
	var once sync.Once
	return h.reached, func() { once.Do(func() { close(h.release) }) }
}

// mergeHold is one HoldNextMerge.
type mergeHold struct{ reached, release chan struct{} }

// QueueNextMerge makes the next merge request for repo#n that GitHub's
// rules allow answer 202 and leave the pull request open;
// CompleteQueued merges it later.
func (s *Server) QueueNextMerge(repo string, n int) {
	s.setFault(repo, n, fault{kind: faultQueue})
}

func (s *Server) setFault(repo string, n int, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[key{repo, n}] = f
}

// CompleteQueued finishes the merge queued for repo#n: the pull request is
// merged at the head it was queued at, unless it was closed meanwhile (a
// queue drops a closed pull request).
func (s *Server) CompleteQueued(repo string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{repo, n}
	head, ok := s.queued[k]
	if !ok {
		panic(fmt.Sprintf("fakegithub: no merge queued for %s#%d", repo, n))
	}
	delete(s.queued, k)
	pr := s.pull(repo, n)
	if pr.State != "open" {
		return
	}
	pr.HeadSHA = head
	merge(repo, pr)
}

// merge marks pr merged, with a merge commit derived from what was merged
// so that runs repeat exactly; the caller holds s.mu.
func merge(repo string, pr *PullRequest) {
	pr.State = "closed"
	pr.Merged = true
	pr.MergeCommitSHA = commitID("merge", repo, pr)
}

// commitID is a commit ID for what of pr is named, the same every run.
func commitID(what, repo string, pr *PullRequest) string {
	sum := sha1.Sum(fmt.Appendf(nil, "%s %s#%d at %s", what, repo, pr.Number, pr.HeadSHA))
	return hex.EncodeToString(sum[:])
}
