package fakegithub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/codehost/github/fakegithub"
	"github.com/google/go-cmp/cmp"
)

// These tests speak raw HTTP, so that the fake is checked against GitHub's
// wire format and not only against the client it is used to test.

const token = "ghp_fake"

var head = strings.Repeat("a", 40)

func start(t *testing.T) *fakegithub.Server {
	t.Helper()
	s := fakegithub.New(token)
	t.Cleanup(s.Close)
	return s
}

// send sends one request with the fake's token (or auth, if not "") and
// returns the status and the decoded JSON body.
func send(t *testing.T, s *fakegithub.Server, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth == "" {
		auth = "Bearer " + token
	}
	req.Header.Set("Authorization", auth)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, b, err)
	}
	return resp.StatusCode, out
}

func TestAuthAndRecording(t *testing.T) {
	s := start(t)
	s.AddIssue("o/r", codehost.Issue{Number: 1, Title: "t"})
	if status, body := send(t, s, "GET", "/repos/o/r/issues/1", "Bearer wrong", ""); status != 401 || body["message"] != "Bad credentials" {
		t.Errorf("wrong token: %d %v, want 401 Bad credentials", status, body)
	}
	if status, body := send(t, s, "GET", "/repos/o/r/issues/1", "token "+token, ""); status != 401 {
		t.Errorf("token scheme: %d %v, want 401 (the client sends Bearer)", status, body)
	}
	if status, body := send(t, s, "GET", "/repos/o/r/issues/1", "", ""); status != 200 || body["title"] != "t" {
		t.Errorf("right token: %d %v", status, body)
	}
	if status, _ := send(t, s, "GET", "/repos/o/r/nothing", "", ""); status != 404 {
		t.Errorf("unknown path: %d, want 404", status)
	}
	want := []string{"GET /repos/o/r/issues/1", "GET /repos/o/r/issues/1", "GET /repos/o/r/issues/1", "GET /repos/o/r/nothing"}
	if diff := cmp.Diff(want, s.Requests()); diff != "" {
		t.Errorf("Requests (-want +got):\n%s", diff)
	}
}

func TestIssuesEndpointAnswersForPullRequests(t *testing.T) {
	s := start(t)
	s.AddPullRequest("o/r", codehost.PullRequest{Number: 2, HeadSHA: head})
	status, body := send(t, s, "GET", "/repos/o/r/issues/2", "", "")
	if status != 200 || body["pull_request"] == nil {
		t.Errorf("issue read of a pull request: %d %v, want 200 with pull_request", status, body)
	}
	status, body = send(t, s, "GET", "/repos/o/r/pulls/2", "", "")
	if status != 200 || body["merge_commit_sha"] == nil || body["merged"] != false || body["mergeable"] != nil {
		t.Errorf("open pull request: %d %v, want a test merge commit, merged false, mergeable null", status, body)
	}
}

func TestMergeRules(t *testing.T) {
	s := start(t)
	no := false
	s.AddPullRequest("o/r", codehost.PullRequest{Number: 1, HeadSHA: head})
	s.AddPullRequest("o/r", codehost.PullRequest{Number: 2, HeadSHA: head, Draft: true})
	s.AddPullRequest("o/r", codehost.PullRequest{Number: 3, HeadSHA: head, Mergeable: &no})
	body := `{"sha":"` + head + `","merge_method":"merge"}`
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/repos/o/r/pulls/1/merge", `{"sha":"` + strings.Repeat("b", 40) + `"}`, 409},
		{"/repos/o/r/pulls/1/merge", `{`, 400},
		{"/repos/o/r/pulls/1/merge", `{"merge_method":"octopus"}`, 422},
		{"/repos/o/r/pulls/2/merge", body, 405},
		{"/repos/o/r/pulls/3/merge", body, 405},
		{"/repos/o/r/pulls/4/merge", body, 404},
		{"/repos/o/r/pulls/1/merge", body, 200},
		{"/repos/o/r/pulls/1/merge", body, 405}, // already merged
	} {
		if status, got := send(t, s, "PUT", c.path, "", c.body); status != c.status {
			t.Errorf("PUT %s %s: %d %v, want %d", c.path, c.body, status, got, c.status)
		}
	}
	pr, ok := s.PullRequest("o/r", 1)
	if !ok || !pr.Merged || pr.State != "closed" || len(pr.MergeCommitSHA) != 40 {
		t.Errorf("after merging: %+v", pr)
	}
}

// TestQueueWaitsForAnAllowedMerge: a refused merge does not use up the
// queue knob.
func TestQueueWaitsForAnAllowedMerge(t *testing.T) {
	s := start(t)
	s.AddPullRequest("o/r", codehost.PullRequest{Number: 1, HeadSHA: head})
	s.QueueNextMerge("o/r", 1)
	if status, _ := send(t, s, "PUT", "/repos/o/r/pulls/1/merge", "", `{"sha":"`+strings.Repeat("b", 40)+`"}`); status != 409 {
		t.Errorf("wrong head while a queue knob is set: %d, want 409", status)
	}
	if status, _ := send(t, s, "PUT", "/repos/o/r/pulls/1/merge", "", `{"sha":"`+head+`"}`); status != 202 {
		t.Errorf("queued merge: %d, want 202", status)
	}
	if pr, _ := s.PullRequest("o/r", 1); pr.State != "open" || pr.Merged {
		t.Errorf("while queued: %+v", pr)
	}
	s.CompleteQueued("o/r", 1)
	if pr, _ := s.PullRequest("o/r", 1); !pr.Merged {
		t.Errorf("after CompleteQueued: %+v", pr)
	}
}

func TestKnobMisusePanics(t *testing.T) {
	s := start(t)
	for name, f := range map[string]func(){
		"close missing":     func() { s.ClosePullRequest("o/r", 9) },
		"head of missing":   func() { s.SetHead("o/r", 9, head) },
		"complete unqueued": func() { s.CompleteQueued("o/r", 9) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
