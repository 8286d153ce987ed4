package github_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost"
	"github.com/google/go-cmp/cmp"
)

func TestIssueRead(t *testing.T) {
	srv, c := setup(t)
	want := codehost.Issue{Number: 3, Title: "Add a flag", Body: "It should\nwork.", State: "open"}
	srv.AddIssue(repo, want)
	srv.AddIssue(repo, codehost.Issue{Number: 4, Title: "Empty", State: "closed"})

	got, err := c.Issue(context.Background(), repo, 3)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Issue (-want +got):\n%s", diff)
	}
	got, err = c.Issue(context.Background(), repo, 4)
	if err != nil || got.State != "closed" || got.Body != "" {
		t.Errorf("Issue #4 = %+v, %v; want closed with an empty (null) body", got, err)
	}
}

func TestIssueReadFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		fail   int // FailIssue status, 0 for none
		status int // the status the error should carry
		kind   error
	}{
		{"bad gateway", http.StatusBadGateway, http.StatusBadGateway, codehost.ErrUnavailable},
		{"internal error", http.StatusInternalServerError, http.StatusInternalServerError, codehost.ErrUnavailable},
		{"forbidden", http.StatusForbidden, http.StatusForbidden, codehost.ErrUnauthorized},
		{"gone", http.StatusGone, http.StatusGone, codehost.ErrNotFound},
		{"rate limited", http.StatusTooManyRequests, http.StatusTooManyRequests, codehost.ErrUnavailable},
		{"not found", 0, http.StatusNotFound, codehost.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cl := setup(t)
			if c.fail != 0 {
				srv.AddIssue(repo, codehost.Issue{Number: 3, Title: "t"})
				srv.FailIssue(repo, 3, c.fail)
			}
			is, err := cl.Issue(context.Background(), repo, 3)
			wantErr(t, err, c.kind)
			var he *codehost.HostError
			if !errors.As(err, &he) || he.Status != c.status || he.Op != "read issue" {
				t.Errorf("error %#v: want a read issue error with HTTP %d", err, c.status)
			}
			if is != (codehost.Issue{}) {
				t.Errorf("Issue = %+v alongside an error", is)
			}
		})
	}
}

// TestIssueThatIsAPullRequest: GitHub's issues endpoint answers for pull
// requests too; planning must not take one for an issue.
func TestIssueThatIsAPullRequest(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 8, sha(1))
	_, err := c.Issue(context.Background(), repo, 8)
	wantErr(t, err, codehost.ErrNotFound)
	if !strings.Contains(err.Error(), "is a pull request") {
		t.Errorf("error %q does not say the number is a pull request", err)
	}
}

func TestPullRequestRead(t *testing.T) {
	srv, c := setup(t)
	yes := true
	srv.AddPullRequest(repo, codehost.PullRequest{Number: 5, HeadSHA: sha(1), BaseRef: "trunk", Draft: true, Mergeable: &yes})
	got, err := c.PullRequest(context.Background(), repo, 5)
	if err != nil {
		t.Fatalf("PullRequest: %v", err)
	}
	// The fake, like GitHub, names a test merge commit for an open pull
	// request; the client must not report it.
	want := codehost.PullRequest{Number: 5, State: "open", HeadSHA: sha(1), BaseRef: "trunk", Draft: true, Mergeable: &yes}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PullRequest (-want +got):\n%s", diff)
	}

	srv.FailPullRequest(repo, 5, http.StatusServiceUnavailable)
	_, err = c.PullRequest(context.Background(), repo, 5)
	wantErr(t, err, codehost.ErrUnavailable)
	_, err = c.PullRequest(context.Background(), repo, 6)
	wantErr(t, err, codehost.ErrNotFound)
}

func TestBadToken(t *testing.T) {
	srv, _ := setup(t)
	openPR(srv, 5, sha(1))
	srv.AddIssue(repo, codehost.Issue{Number: 3})
	c := client(t, srv, "ghp_wrong")
	ctx := context.Background()

	_, err := c.Issue(ctx, repo, 3)
	wantErr(t, err, codehost.ErrUnauthorized)
	_, err = c.PullRequest(ctx, repo, 5)
	wantErr(t, err, codehost.ErrUnauthorized)
	_, err = c.Merge(ctx, repo, 5, sha(1))
	wantErr(t, err, codehost.ErrUnauthorized)
	if !codehost.Definite(err) {
		t.Errorf("Definite(%v) = false for a 401", err)
	}
	if pr, _ := srv.PullRequest(repo, 5); pr.Merged {
		t.Errorf("a merge with a bad token merged")
	}
}

// TestBadInputSendsNothing: a bad identifier never becomes a request.
func TestBadInputSendsNothing(t *testing.T) {
	srv, c := setup(t)
	openPR(srv, 5, sha(1))
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
	}{
		{"issue ../x", func() error { _, err := c.Issue(ctx, "../x", 1); return err }},
		{"issue x/..", func() error { _, err := c.Issue(ctx, "x/..", 1); return err }},
		{"issue no slash", func() error { _, err := c.Issue(ctx, "hello", 1); return err }},
		{"issue number 0", func() error { _, err := c.Issue(ctx, repo, 0); return err }},
		{"pull ../x", func() error { _, err := c.PullRequest(ctx, "../x", 5); return err }},
		{"pull path", func() error { _, err := c.PullRequest(ctx, "octo/hello/pulls", 5); return err }},
		{"pull number -1", func() error { _, err := c.PullRequest(ctx, repo, -1); return err }},
		{"merge ../x", func() error { _, err := c.Merge(ctx, "../x", 5, sha(1)); return err }},
		{"merge number 0", func() error { _, err := c.Merge(ctx, repo, 0, sha(1)); return err }},
		{"merge sha not hex", func() error { _, err := c.Merge(ctx, repo, 5, strings.Repeat("z", 40)); return err }},
		{"merge sha short", func() error { _, err := c.Merge(ctx, repo, 5, "abc123"); return err }},
		{"merge sha upper", func() error { _, err := c.Merge(ctx, repo, 5, strings.ToUpper(sha(10))); return err }},
		{"merge sha empty", func() error { _, err := c.Merge(ctx, repo, 5, ""); return err }},
	}
	for _, call := range calls {
		err := call.call()
		if !errors.Is(err, codehost.ErrBadInput) {
			t.Errorf("%s: error %v, want ErrBadInput", call.name, err)
			continue
		}
		noToken(t, err)
		if !codehost.Definite(err) {
			t.Errorf("%s: Definite(%v) = false though nothing was sent", call.name, err)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("bad input sent requests: %q", reqs)
	}
}

// TestOversizedBody: a body over the bound is an error, not a memory
// exhaustion or a half-read issue.
func TestOversizedBody(t *testing.T) {
	srv, c := setup(t)
	srv.AddIssue(repo, codehost.Issue{Number: 3, Title: "huge", Body: strings.Repeat("x", 2<<20)})
	_, err := c.Issue(context.Background(), repo, 3)
	wantErr(t, err, codehost.ErrUnavailable)
	if !strings.Contains(err.Error(), "larger than") {
		t.Errorf("error %q does not say the body was too large", err)
	}
	srv.AddIssue(repo, codehost.Issue{Number: 4, Title: "big but fits", Body: strings.Repeat("x", 1<<19)})
	if is, err := c.Issue(context.Background(), repo, 4); err != nil || len(is.Body) != 1<<19 {
		t.Errorf("a body within the bound: %d bytes, %v", len(is.Body), err)
	}
}
