package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/codehost/github/fakegithub"
	"github.com/codeboost/codeboost/web"
)

// TestServeMergesThroughGitHub: a real `codeboost serve` process whose
// configuration's github block points at a local fake GitHub (fakegithub,
// an httptest server speaking the REST endpoints the client uses), with
// the token in the environment. Over the API: a plan imported and
// approved, Merge clicked, and the merge recorded from GitHub's answer:
// the happy path; a merge whose connection drops after GitHub merged (the
// irreversible boundary's unknown outcome, kept submitting and recorded
// merged once GitHub is read again); a pull request that leaves the merge
// queue closed (removed, requiring a fresh review). Then a restart: the
// merge coordinator's startup reads GitHub again, and the outcomes stand.
func TestServeMergesThroughGitHub(t *testing.T) {
	bin := buildCodeboost(t)
	dir := t.TempDir()
	gh := newGitHub(t)
	head := strings.Repeat("c0de", 10)
	yes := true
	for _, n := range []int{7, 8, 9} {
		gh.AddPullRequest("acme/parser", fakegithub.PullRequest{Number: n, State: "open", HeadSHA: head, BaseRef: "main", Mergeable: &yes})
	}
	task := func(name string, pr int) map[string]any {
		return map[string]any{"name": name, "repository": filepath.Join(dir, "repo"),
			"identity": map[string]string{"repositoryId": "acme-parser", "taskId": name, "planId": "plan"},
			"github":   map[string]any{"repo": "acme/parser", "pullRequest": pr}}
	}
	e := githubEnv(t, dir, gh, map[string]any{"root": filepath.Join(dir, "runner")}, task("happy", 7), task("dropped", 8), task("removed", 9))
	s := startServe(t, bin, e)
	for _, name := range []string{"happy", "dropped", "removed"} {
		s.importAndApprove(t, name)
	}

	// The happy path.
	if r := s.merge(t, "happy"); r.Outcome != "in progress" || r.AttemptID == "" {
		t.Fatalf("the merge click answered %+v; want in progress with its attempt", r)
	}
	s.waitMerge(t, "happy", "merged")
	if pr, _ := gh.PullRequest("acme/parser", 7); !pr.Merged {
		t.Fatalf("GitHub's pull request 7: %+v; want merged", pr)
	}
	if st := s.taskStatus(t, "happy"); st != "merged" {
		t.Fatalf("task happy is %s; want merged", st)
	}

	// The connection drops after GitHub merged: the outcome is unknown, the
	// attempt stays submitting, and reading GitHub again records it merged.
	gh.DropNextMerge("acme/parser", 8, true)
	s.merge(t, "dropped")
	s.waitMerge(t, "dropped", "merged")

	// A queued merge whose pull request is closed without a merge: removed,
	// requiring a fresh review.
	gh.QueueNextMerge("acme/parser", 9)
	s.merge(t, "removed")
	s.waitMerge(t, "removed", "queued")
	gh.ClosePullRequest("acme/parser", 9)
	m := s.waitMerge(t, "removed", "removed")
	if !m.RequiresFreshReview {
		t.Fatalf("the removed merge: %+v; want it to require a fresh review", m)
	}

	// A restart: the startup reads GitHub again; nothing changes.
	s.stop(t, os.Interrupt)
	s = startServe(t, bin, e)
	for name, want := range map[string]string{"happy": "merged", "dropped": "merged", "removed": "removed"} {
		if got := s.mergeState(t, name); got == nil || got.State != want {
			t.Errorf("after the restart, %s's merge is %+v; want %s", name, got, want)
		}
	}
	if strings.Contains(s.out.String(), e2eToken) {
		t.Errorf("serve's output shows the GitHub token")
	}
}

// e2eToken is the fake GitHub's token, passed to serve in the environment
// variable the github block names.
const e2eToken = "e2e-token-0123456789"

// newGitHub starts a fake GitHub for the test.
func newGitHub(t *testing.T) *fakegithub.Server {
	gh := fakegithub.New(e2eToken)
	t.Cleanup(gh.Close)
	return gh
}

// githubEnv writes a configuration whose github block points at gh, with
// the runner block runner and the tasks, and passes the token to serve.
func githubEnv(t *testing.T, dir string, gh *fakegithub.Server, runner map[string]any, tasks ...any) env {
	t.Helper()
	cfg := map[string]any{
		"store":  filepath.Join(dir, "cb.db"),
		"runner": runner,
		"github": map[string]any{"apiUrl": gh.URL(), "tokenEnv": "CODEBOOST_E2E_GITHUB_TOKEN"},
		"tasks":  tasks,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	e := env{config: filepath.Join(dir, "codeboost.json"), ready: filepath.Join(dir, "ready"),
		environ: []string{"CODEBOOST_E2E_GITHUB_TOKEN=" + e2eToken}}
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (s *server) importAndApprove(t *testing.T, task string) {
	t.Helper()
	s.importPlanOf(t, task, `{"format": "codeboost-plan/1", "title": "Fix", "items": [{"title": "Fix the parser"}]}`)
}

func (s *server) taskStatus(t *testing.T, task string) string {
	t.Helper()
	return s.reviewOf(t, task).TaskStatus
}

// merge clicks Merge with the versions the task shows now.
func (s *server) merge(t *testing.T, task string) web.ActionReply {
	t.Helper()
	r := s.reviewOf(t, task)
	raw := s.postJSON(t, "/api/merge", web.MergeRequest{Task: task, ActionID: s.actionID(), ExpectedStateVersion: r.StateVersion,
		ExpectedReviewVersion: r.ReviewVersion}, http.StatusOK)
	var out web.ActionReply
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST /api/merge for %s: %s", task, raw)
	}
	return out
}

// mergeInFlight clicks Merge on task while the fake GitHub holds the merge
// command of repo's pull request number, and returns once the command has
// reached GitHub. It returns the hold's release, which the test's end
// calls too.
func (s *server) mergeInFlight(t *testing.T, gh *fakegithub.Server, task, repo string, number int) (release func()) {
	t.Helper()
	reached, release := gh.HoldNextMerge(repo, number)
	t.Cleanup(release)
	s.merge(t, task)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("the merge command never reached GitHub\n%s", s.out.String())
	}
	return release
}

func (s *server) mergeState(t *testing.T, task string) *web.MergeRow {
	t.Helper()
	var r web.MergeReply
	if err := json.Unmarshal([]byte(s.get(t, "/api/merge?task="+task)), &r); err != nil {
		t.Fatal(err)
	}
	return r.Merge
}

// waitMerge polls GET /api/merge (displayStatus, which reads GitHub again
// for a merge in flight) until the task's merge is in state.
func (s *server) waitMerge(t *testing.T, task, state string) web.MergeRow {
	t.Helper()
	var m *web.MergeRow
	s.waitFor(t, task+"'s merge "+state, func() bool {
		m = s.mergeState(t, task)
		return m != nil && m.State == state
	})
	return *m
}

// TestServeRefusesAGitHubBlockWithoutItsToken: a configuration that asks
// for GitHub and whose token variable is not set does not start as if it
// could merge: startup says which variable is missing, and exits.
func TestServeRefusesAGitHubBlockWithoutItsToken(t *testing.T) {
	bin := buildCodeboost(t)
	dir := t.TempDir()
	cfg := `{"store": "` + filepath.Join(dir, "cb.db") + `", "runner": {"root": "` + filepath.Join(dir, "runner") + `"},
		"github": {"tokenEnv": "CODEBOOST_E2E_NO_SUCH_TOKEN"}}`
	e := env{config: filepath.Join(dir, "codeboost.json"), ready: filepath.Join(dir, "ready"), environ: []string{"CODEBOOST_E2E_NO_SUCH_TOKEN="}}
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := tryServe(t, bin, e)
	if err == nil {
		t.Fatalf("serve started without its GitHub token")
	}
	if out := s.out.String(); !strings.Contains(out, "CODEBOOST_E2E_NO_SUCH_TOKEN") {
		t.Errorf("serve's refusal does not name the token variable:\n%s", out)
	}
}

// TestServeShutdownAwaitsAMergeInFlight: SIGTERM while a merge command is
// in flight at GitHub. Step 1 closes the merge coordinator (no merge
// command is sent after it), step 3 awaits the merge in flight as
// request-owned work, its outcome is recorded through the shutdown
// capability after the write gate closed, and only then do the
// coordinators close (step 6) and the Store. The next start shows the
// merge merged.
func TestServeShutdownAwaitsAMergeInFlight(t *testing.T) {
	bin := buildCodeboost(t)
	dir := t.TempDir()
	gh := newGitHub(t)
	yes := true
	gh.AddPullRequest("acme/parser", fakegithub.PullRequest{Number: 7, State: "open", HeadSHA: strings.Repeat("c0de", 10), BaseRef: "main", Mergeable: &yes})
	e := githubEnv(t, dir, gh, map[string]any{"root": filepath.Join(dir, "runner")}, map[string]any{"name": "happy", "repository": filepath.Join(dir, "repo"),
		"identity": map[string]string{"repositoryId": "acme-parser", "taskId": "happy", "planId": "plan"},
		"github":   map[string]any{"repo": "acme/parser", "pullRequest": 7}})
	s := startServe(t, bin, e)
	s.importAndApprove(t, "happy")
	release := s.mergeInFlight(t, gh, "happy", "acme/parser", 7)

	s.cmd.Process.Signal(os.Interrupt)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.out.String(), "shutdown") && !strings.Contains(s.out.String(), "merge: closing") {
		if time.Now().After(deadline) {
			t.Fatalf("shutdown did not begin\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // let shutdown reach step 3
	select {
	case err := <-s.done:
		t.Fatalf("serve exited (%v) with a merge still in flight\n%s", err, s.out.String())
	default:
	}
	release()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, s.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not exit once the merge answered\n%s", s.out.String())
	}
	out := s.out.String()
	closing, merged := strings.Index(out, "merge: closing"), strings.Index(out, "merged: merged at")
	idle, askClose := strings.Index(out, "merge: idle: the last merge in flight ended"), strings.Index(out, "ask: close:")
	if closing < 0 || merged < 0 || idle < 0 || askClose < 0 || !(closing < merged && merged < idle && idle < askClose) {
		t.Fatalf("want merge: closing (step 1), the merge recorded and the merge coordinator idle (step 3), then Ask's close (step 6); got at %d, %d, %d, %d:\n%s",
			closing, merged, idle, askClose, out)
	}

	s = startServe(t, bin, e)
	if m := s.mergeState(t, "happy"); m == nil || m.State != "merged" {
		t.Fatalf("after the restart the merge is %+v; want merged", m)
	}
	if st := s.taskStatus(t, "happy"); st != "merged" {
		t.Fatalf("after the restart the task is %s; want merged", st)
	}
}

// TestServePlanningStartWhoseIssueReadFails: live planning is on (a
// github block, not the demo), so a planning start reads the task's issue
// from GitHub first. The fake GitHub fails that read: the start answers
// 502 and is recorded, so its resend answers the same 502 from the record
// without reading GitHub again.
func TestServePlanningStartWhoseIssueReadFails(t *testing.T) {
	bin := buildCodeboost(t)
	dir := t.TempDir()
	gh := newGitHub(t)
	gh.AddIssue("acme/parser", fakegithub.Issue{Number: 3, Title: "Crash on empty input", State: "open"})
	gh.FailIssue("acme/parser", 3, http.StatusBadGateway)
	e := githubEnv(t, dir, gh, map[string]any{"root": filepath.Join(dir, "runner")}, map[string]any{"name": "plan-me", "repository": filepath.Join(dir, "repo"),
		"identity": map[string]string{"repositoryId": "acme-parser", "taskId": "plan-me", "planId": "plan"},
		"github":   map[string]any{"repo": "acme/parser", "issue": 3}})
	s := startServe(t, bin, e)
	r := s.reviewOf(t, "plan-me")
	body, _ := json.Marshal(web.PlanStart{Task: "plan-me", ActionID: s.actionID(), ExpectedRevision: r.Revision, ExpectedSnapshot: r.SnapshotID})
	reads := func() int {
		n := 0
		for _, req := range gh.Requests() {
			if req == "GET /repos/acme/parser/issues/3" {
				n++
			}
		}
		return n
	}
	for i, wantReplayed := range []bool{false, true} {
		resp, err := http.Post(s.url+"/api/plan/suggestions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out web.PlanActionReply
		json.Unmarshal(raw, &out)
		if resp.StatusCode != http.StatusBadGateway || out.Code != "github-failed" || out.Replayed != wantReplayed {
			t.Fatalf("start %d: %d %s; want 502 github-failed (replayed %v)", i+1, resp.StatusCode, raw, wantReplayed)
		}
	}
	if n := reads(); n != 1 {
		t.Fatalf("GitHub's issue was read %d times; want once (the resend answers from the record)", n)
	}
}
