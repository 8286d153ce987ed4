package github_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/codehost/github"
	"github.com/codeboost/codeboost/codehost/github/fakegithub"
)

const (
	token = "ghp_TESTs3cr3tTOKEN0123456789abcdefABCDEF"
	repo  = "octo/hello"
)

// sha is a 40-hex commit ID made from b, for readable heads.
func sha(b byte) string { return strings.Repeat(string("0123456789abcdef"[b%16]), 40) }

// setup starts a fake GitHub and a client for it.
func setup(t *testing.T) (*fakegithub.Server, *github.Client) {
	t.Helper()
	srv := fakegithub.New(token)
	t.Cleanup(srv.Close)
	return srv, client(t, srv, token)
}

// client is a client for srv that sends tok.
func client(t *testing.T, srv *fakegithub.Server, tok string) *github.Client {
	t.Helper()
	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: tok, HTTP: srv.Client()})
	if err != nil {
		t.Fatalf("github.New: %v", err)
	}
	return c
}

// openPR adds an open, mergeable pull request #n at head.
func openPR(srv *fakegithub.Server, n int, head string) {
	yes := true
	srv.AddPullRequest(repo, codehost.PullRequest{Number: n, HeadSHA: head, BaseRef: "main", Mergeable: &yes})
}

// wantErr fails unless err matches kind, and checks what every error must
// be: bounded, and free of the token.
func wantErr(t *testing.T, err error, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q (%T) is not %v", err, err, kind)
	}
	noToken(t, err)
}

func noToken(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, token) {
			t.Errorf("an error shows the token: %s", s)
		}
	}
	if len(err.Error()) > codehost.MaxMessage+200 {
		t.Errorf("unbounded error message (%d bytes): %.100s…", len(err.Error()), err)
	}
}
