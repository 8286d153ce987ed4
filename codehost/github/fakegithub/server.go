// Package fakegithub is a fake GitHub REST API for tests: the three
// endpoints codehost/github speaks, over real HTTP (httptest), with an
// in-memory model and fault knobs for the failures the merge coordinator
// must survive — above all a merge that happened although the client saw
// only a broken connection.
//
// It is an ordinary package, not a _test file, so that other packages'
// tests and an end-to-end serve test can start one. All state is per
// Server and guarded by its mutex; a Server is safe for concurrent use.
//
// Misusing a knob (closing a pull request that was never added, completing
// a merge that was never queued) panics: it is a bug in the test, not a
// behaviour to model.
package fakegithub

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/codeboost/codeboost/codehost"
)

// Issue and PullRequest are the model's records: the same facts the client
// reads, so a test can compare what it put in with what came back.
type (
	Issue       = codehost.Issue
	PullRequest = codehost.PullRequest
)

// Server is a running fake GitHub.
type Server struct {
	token string
	srv   *httptest.Server

	mu       sync.Mutex
	issues   map[key]Issue
	pulls    map[key]*PullRequest
	failRead map[readKey]int    // persistent: answer this status to a read
	faults   map[key]fault      // one-shot: what the next merge does
	queued   map[key]string     // accepted (202) merges, by the head they were asked at
	holds    map[key]*mergeHold // one-shot: the next merge waits for its release
	requests []string           // every request, "METHOD /path"
}

// key names an issue or a pull request: GitHub numbers both in one space.
type key struct {
	repo string
	n    int
}

type readKey struct {
	key
	pull bool
}

type faultKind int

const (
	faultDrop  faultKind = iota + 1 // hijack the connection and close it
	faultFail                       // answer status
	faultQueue                      // answer 202 and leave the pull request open
)

// fault is a one-shot knob for the next merge of one pull request.
type fault struct {
	kind         faultKind
	status       int
	afterMerging bool // merge (if the rules allow) before failing
}

// New starts a fake GitHub that accepts only "Authorization: Bearer token".
func New(token string) *Server {
	if token == "" {
		panic("fakegithub: New needs a token: the client always sends one")
	}
	s := &Server{
		token:    token,
		issues:   map[key]Issue{},
		pulls:    map[key]*PullRequest{},
		failRead: map[readKey]int{},
		faults:   map[key]fault{},
		queued:   map[key]string{},
		holds:    map[key]*mergeHold{},
	}
	s.srv = httptest.NewServer(s.handler())
	return s
}

// URL is the base URL to give the client (Options.BaseURL).
func (s *Server) URL() string { return s.srv.URL }

// Client is an HTTP client for this server whose connections Close ends,
// so tests need not share http.DefaultTransport's pool.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close shuts the server down, waiting for requests in flight.
func (s *Server) Close() { s.srv.Close() }

// Requests returns every request received so far, in order, as
// "METHOD /path" (for example "PUT /repos/o/r/pulls/1/merge"), including
// those refused for bad credentials.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
}

// pull returns the pull request repo#n; the caller holds s.mu.
func (s *Server) pull(repo string, n int) *PullRequest {
	pr := s.pulls[key{repo, n}]
	if pr == nil {
		panic(fmt.Sprintf("fakegithub: no pull request %s#%d", repo, n))
	}
	return pr
}
