package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/codehost/github/fakegithub"
	"github.com/codeboost/codeboost/web"
)

// TestServeShutdownWithEveryLaneBusy: a real `codeboost serve` on Docker
// (the fake agent, which sleeps when its prompt says "[fakeagent:sleep]")
// with its github block on a local fake GitHub, SIGTERMed while every lane
// is busy: an attempt running in its container, a question's agent
// running, a planning request pending with its planning agent running (the
// issue it plans from says to sleep), and a merge command in flight at
// GitHub. Shutdown runs its steps in order: step 1 closes the merge
// coordinator, Ask and the runner's admission in one turn; step 3 awaits
// the merge in flight, whose outcome lands through the shutdown
// capability; steps 4 and 5 stop the attempt and write its terminal state;
// step 6 aborts and awaits the question and the planning request. Nothing
// labelled is left on the engine, and the next start shows each lane's
// outcome.
func TestServeShutdownWithEveryLaneBusy(t *testing.T) {
	cli, agent, bin := begin(t)
	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	gh := newGitHub(t)
	yes := true
	gh.AddPullRequest("acme/parser", fakegithub.PullRequest{Number: 7, State: "open", HeadSHA: strings.Repeat("c0de", 10), BaseRef: "main", Mergeable: &yes})
	gh.AddIssue("acme/parser", fakegithub.Issue{Number: 3, Title: "Plan the parser fix", Body: "[fakeagent:sleep] Take your time.", State: "open"})
	task := func(name string, github map[string]any) map[string]any {
		t := map[string]any{"name": name, "repository": repo,
			"identity": map[string]string{"repositoryId": "acme-parser", "taskId": name, "planId": "plan"}}
		if github != nil {
			t["github"] = github
		}
		return t
	}
	e := githubEnv(t, dir, gh, map[string]any{"root": filepath.Join(dir, "runner"), "agent": map[string]any{"image": agent, "argv": []string{"prompt"}, "pids": 64}}, task("work", nil), task("ship", map[string]any{"repo": "acme/parser", "pullRequest": 7, "issue": 3}))
	s := startServe(t, bin, e)

	// The runner's lane: an attempt that runs until it is stopped.
	sleepDoc := `{"format": "codeboost-plan/1", "title": "Busy", "items": [{"title": "Think", "instructions": "[fakeagent:sleep] Keep going."}]}`
	s.importPlanOf(t, "work", sleepDoc)
	r := s.reviewOf(t, "work")
	s.post(t, "/api/runner", web.RunnerAction{Task: "work", Action: "start", ActionID: s.actionID(),
		ExpectedStateVersion: r.StateVersion, ExpectedReviewVersion: r.ReviewVersion})
	s.waitFor(t, "the attempt running", func() bool { return strings.Contains(s.get(t, "/api/runner?task=work"), `"state":"running"`) })

	// The question's lane: its agent sleeps too.
	s.importPlanOf(t, "ship", `{"format": "codeboost-plan/1", "title": "Ship", "items": [{"title": "Fix the parser"}]}`)
	item := 1
	s.postJSON(t, "/api/questions", web.QuestionRequest{Task: "ship", ActionID: s.actionID(), Item: &item, Text: "[fakeagent:sleep] Why this order?"}, http.StatusOK)
	s.waitFor(t, "the question running", func() bool { return strings.Contains(s.get(t, "/api/questions?task=ship"), `"state":"running"`) })

	// The planning lane: a suggestion request whose planning agent sleeps
	// (the issue it was given says so).
	r = s.reviewOf(t, "ship")
	s.postJSON(t, "/api/plan/suggestions", web.PlanStart{Task: "ship", ActionID: s.actionID(), ExpectedRevision: r.Revision, ExpectedSnapshot: r.SnapshotID}, http.StatusOK)
	s.waitFor(t, "the planning agent started", func() bool { return strings.Contains(s.out.String(), "the planning agent started") })

	// The merge lane: the merge command is in flight at GitHub.
	release := s.mergeInFlight(t, gh, "ship", "acme/parser", 7)

	s.cmd.Process.Signal(syscall.SIGTERM)
	s.waitFor(t, "step 1", func() bool { return strings.Contains(s.out.String(), "shutdown: admission closed") })
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(s.out.String(), "stopping ") {
		t.Fatalf("a job was stopped (step 4) before the merge in flight (step 3) ended\n%s", s.out.String())
	}
	release()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, s.out.String())
		}
	case <-time.After(150 * time.Second):
		t.Fatalf("serve did not exit\n%s", s.out.String())
	}
	out := s.out.String()
	order := []string{"merge: closing", "ask: admission stopped", "shutdown: admission closed", "merged: merged at", "merge: idle",
		"stopping ", "ask: close:", "ask: closed", "suggest: shutdown: admission closed", "suggest: shutdown: every provider settled"}
	at := -1
	for _, line := range order {
		i := strings.Index(out[at+1:], line)
		if i < 0 {
			t.Fatalf("shutdown's log lacks %q after the steps before it; want the order %q\n%s", line, order, out)
		}
		at += 1 + i
	}
	waitNoObjects(t, cli, "after the shutdown")

	// The next start: each lane's outcome.
	s = startServe(t, bin, e)
	if got := s.get(t, "/api/runner?task=work"); !strings.Contains(got, "Stopped by shutdown") {
		t.Errorf("the attempt after the restart: %s", got)
	}
	if got := s.get(t, "/api/questions?task=ship"); !strings.Contains(got, `"reason":"Server stopped"`) || !strings.Contains(got, `"retryable":true`) {
		t.Errorf("the question after the restart: %s", got)
	}
	if got := s.get(t, "/api/plan/requests?task=ship"); !strings.Contains(got, `"state":"failed"`) {
		t.Errorf("the planning request after the restart: %s", got)
	}
	if m := s.mergeState(t, "ship"); m == nil || m.State != "merged" {
		t.Errorf("the merge after the restart: %+v", m)
	}
	if !strings.Contains(s.out.String(), "requeued ") {
		t.Errorf("the restart did not requeue the stopped attempt's task:\n%s", s.out.String())
	}
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after the second shutdown")
}

func (s *server) importPlanOf(t *testing.T, task, doc string) {
	t.Helper()
	s.post(t, "/api/plan/import", web.PlanImport{Task: task, ActionID: s.actionID(), ExpectedRevision: s.reviewOf(t, task).Revision, Plan: doc})
	r := s.reviewOf(t, task)
	for _, it := range r.Items {
		item := it.Item
		s.post(t, "/api/review", web.ReviewAction{Task: task, Action: "approve", ActionID: s.actionID(), Item: &item,
			ExpectedReviewVersion: s.reviewOf(t, task).ReviewVersion})
	}
}

func (s *server) reviewOf(t *testing.T, task string) web.ReviewReply {
	t.Helper()
	var r web.ReviewReply
	if err := json.Unmarshal([]byte(s.get(t, "/api/review?task="+task)), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// postJSON posts body and asserts the HTTP status.
func (s *server) postJSON(t *testing.T, path string, body any, want int) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: %d %s; want %d", path, b, resp.StatusCode, raw, want)
	}
	return raw
}

func (s *server) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out\n%s", what, s.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
