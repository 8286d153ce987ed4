package github_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/codehost/github/fakegithub"
	"github.com/google/go-cmp/cmp"
)

func TestMergeHappyPath(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 5, sha(1))
	ctx := context.Background()

	res, err := c.Merge(ctx, repo, 5, sha(1))
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if !res.Merged || res.Queued || len(res.SHA) != 40 {
		t.Fatalf("Merge = %+v, want merged with a merge commit", res)
	}
	pr, err := c.PullRequest(ctx, repo, 5)
	if err != nil {
		t.Fatalf("PullRequest: %v", err)
	}
	if !pr.Merged || pr.State != "closed" || pr.MergeCommitSHA != res.SHA {
		t.Errorf("after merging, PullRequest = %+v, want closed, merged at %s", pr, res.SHA)
	}
	want := []string{"PUT /repos/octo/hello/pulls/5/merge", "GET /repos/octo/hello/pulls/5"}
	if diff := cmp.Diff(want, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestMergeRemovedPullRequest(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 5, sha(1))
	srv.ClosePullRequest(repo, 5)
	ctx := context.Background()

	pr, err := c.PullRequest(ctx, repo, 5)
	if err != nil {
		t.Fatalf("PullRequest: %v", err)
	}
	if pr.State != "closed" || pr.Merged || pr.MergeCommitSHA != "" {
		t.Errorf("PullRequest = %+v, want closed, not merged, no merge commit", pr)
	}
	_, err = c.Merge(ctx, repo, 5, sha(1))
	wantErr(t, err, codehost.ErrRefused)
	if !codehost.Definite(err) {
		t.Errorf("Definite(%v) = false for a closed pull request", err)
	}
}

func TestMergeHeadMoved(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 5, sha(1))
	srv.SetHead(repo, 5, sha(2))

	_, err := c.Merge(context.Background(), repo, 5, sha(1))
	wantErr(t, err, codehost.ErrRefused)
	var he *codehost.HostError
	if !errors.As(err, &he) || he.Status != http.StatusConflict ||
		he.Message != "Head branch was modified. Review and try the merge again." {
		t.Errorf("error %#v: want a 409 with GitHub's message", err)
	}
	if !codehost.Definite(err) {
		t.Errorf("Definite(%v) = false for a moved head", err)
	}
	if pr, _ := srv.PullRequest(repo, 5); pr.Merged {
		t.Errorf("the fake merged a pull request whose head moved")
	}
}

// TestMergeRefusals: every refusal GitHub gives is definite, and merges
// nothing.
func TestMergeRefusals(t *testing.T) {
	no := false
	for _, c := range []struct {
		name   string
		setup  func(srv *fakegithub.Server)
		status int
		kind   error
	}{
		{"draft", func(s *fakegithub.Server) {
			s.AddPullRequest(repo, codehost.PullRequest{Number: 5, HeadSHA: sha(1), Draft: true})
		}, http.StatusMethodNotAllowed, codehost.ErrRefused},
		{"not mergeable", func(s *fakegithub.Server) {
			s.AddPullRequest(repo, codehost.PullRequest{Number: 5, HeadSHA: sha(1), Mergeable: &no})
		}, http.StatusMethodNotAllowed, codehost.ErrRefused},
		{"already merged", func(s *fakegithub.Server) {
			s.AddPullRequest(repo, codehost.PullRequest{Number: 5, HeadSHA: sha(1), State: "closed", Merged: true,
				MergeCommitSHA: sha(9)})
		}, http.StatusMethodNotAllowed, codehost.ErrRefused},
		{"no such pull request", func(*fakegithub.Server) {},
			http.StatusNotFound, codehost.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cl := setup(t)
			c.setup(srv)
			before, _ := srv.PullRequest(repo, 5)
			_, err := cl.Merge(context.Background(), repo, 5, sha(1))
			wantErr(t, err, c.kind)
			var he *codehost.HostError
			if !errors.As(err, &he) || he.Status != c.status {
				t.Errorf("error %v: want HTTP %d", err, c.status)
			}
			if !codehost.Definite(err) {
				t.Errorf("Definite(%v) = false", err)
			}
			after, _ := srv.PullRequest(repo, 5)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("a refused merge changed the pull request (-before +after):\n%s", diff)
			}
		})
	}
}

// TestMergeMergeableUnknown: GitHub still computing mergeability is no
// reason to refuse; GitHub decides at merge time.
func TestMergeMergeableUnknown(t *testing.T) {
	srv, c := setup(t)
	srv.AddPullRequest(repo, codehost.PullRequest{Number: 5, HeadSHA: sha(1)})
	pr, err := c.PullRequest(context.Background(), repo, 5)
	if err != nil || pr.Mergeable != nil {
		t.Fatalf("PullRequest = %+v, %v; want Mergeable nil", pr, err)
	}
	if res, err := c.Merge(context.Background(), repo, 5, sha(1)); err != nil || !res.Merged {
		t.Errorf("Merge = %+v, %v; want merged", res, err)
	}
}

// TestMergeNoReply is the irreversible boundary: the connection breaks
// before any reply. Whether or not the fake merged, the client can only
// say "unknown", and a later read tells the truth.
func TestMergeNoReply(t *testing.T) {
	for _, afterMerging := range []bool{true, false} {
		name := map[bool]string{true: "merged then dropped", false: "dropped before merging"}[afterMerging]
		t.Run(name, func(t *testing.T) {
			srv, c := setup(t)
			openPR(srv, 5, sha(1))
			srv.DropNextMerge(repo, 5, afterMerging)
			ctx := context.Background()

			res, err := c.Merge(ctx, repo, 5, sha(1))
			wantErr(t, err, codehost.ErrUnknownOutcome)
			if codehost.Definite(err) {
				t.Errorf("Definite(%v) = true for a merge that got no reply", err)
			}
			var uo *codehost.UnknownOutcomeError
			if !errors.As(err, &uo) || uo.Status != 0 || uo.Err == nil {
				t.Errorf("error %#v: want an *UnknownOutcomeError with no status and its cause", err)
			}
			if res != (codehost.MergeResult{}) {
				t.Errorf("Merge result %+v alongside an error", res)
			}
			pr, err := c.PullRequest(ctx, repo, 5)
			if err != nil {
				t.Fatalf("PullRequest: %v", err)
			}
			if pr.Merged != afterMerging {
				t.Errorf("read again, Merged = %v, want %v", pr.Merged, afterMerging)
			}
			if afterMerging && len(pr.MergeCommitSHA) != 40 {
				t.Errorf("read again, no merge commit: %+v", pr)
			}
		})
	}
}

// TestMergeServerError: a 5xx says nothing about whether the merge
// happened behind the proxy that sent it.
func TestMergeServerError(t *testing.T) {
	for _, c := range []struct {
		status       int
		afterMerging bool
	}{
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, false},
		{http.StatusGatewayTimeout, true},
	} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			srv, cl := setup(t)
			openPR(srv, 5, sha(1))
			srv.FailNextMerge(repo, 5, c.status, c.afterMerging)
			_, err := cl.Merge(context.Background(), repo, 5, sha(1))
			wantErr(t, err, codehost.ErrUnknownOutcome)
			var uo *codehost.UnknownOutcomeError
			if !errors.As(err, &uo) || uo.Status != c.status {
				t.Errorf("error %v: want an unknown outcome with HTTP %d", err, c.status)
			}
			if codehost.Definite(err) {
				t.Errorf("Definite(%v) = true for a %d", err, c.status)
			}
			pr, err := cl.PullRequest(context.Background(), repo, 5)
			if err != nil || pr.Merged != c.afterMerging {
				t.Errorf("read again: %+v, %v; want Merged %v", pr, err, c.afterMerging)
			}
		})
	}
}

func TestMergeQueued(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 5, sha(1))
	srv.QueueNextMerge(repo, 5)
	ctx := context.Background()

	res, err := c.Merge(ctx, repo, 5, sha(1))
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if diff := cmp.Diff(codehost.MergeResult{Queued: true}, res); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
	pr, err := c.PullRequest(ctx, repo, 5)
	if err != nil || pr.State != "open" || pr.Merged || pr.MergeCommitSHA != "" {
		t.Errorf("while queued, PullRequest = %+v, %v; want open, unmerged, no merge commit", pr, err)
	}
	srv.CompleteQueued(repo, 5)
	pr, err = c.PullRequest(ctx, repo, 5)
	if err != nil || !pr.Merged || pr.State != "closed" || len(pr.MergeCommitSHA) != 40 {
		t.Errorf("after the queue, PullRequest = %+v, %v; want merged", pr, err)
	}
}
