package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/internal/testbin"
	"github.com/codeboost/codeboost/web"
)

// TestServeRunsAPlanInContainers is issue 9's end-to-end check, repeated
// CODEBOOST_SOAK times (once by default, in CI too, whose time is
// bounded; `make soak` runs 20): a plan
// imported over the API, started, its first item completed in a container
// and landed as a commit in the runner-owned repository (the review load
// and the diff view show it); then a cancel mid-run, a clean shutdown
// mid-run, and kill -9 of serve mid-run followed by a restart. After each
// step: no labelled Docker object leaks, no attempt is lost or doubled,
// and the user's repository is byte-for-byte unchanged.
func TestServeRunsAPlanInContainers(t *testing.T) {
	cli, agent, bin := begin(t)
	soak(t, func(t *testing.T) { cycle(t, cli, bin, agent) })
}

// soak runs round CODEBOOST_SOAK times (once by default), each a subtest
// of its own, and stops at the first that fails.
func soak(t *testing.T, round func(t *testing.T)) {
	rounds := 1
	if s := os.Getenv("CODEBOOST_SOAK"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CODEBOOST_SOAK=%q is not a positive count", s)
		}
		rounds = n
	}
	for i := 1; i <= rounds; i++ {
		t.Run(fmt.Sprintf("round-%d", i), func(t *testing.T) {
			began := time.Now()
			round(t)
			t.Logf("round %d took %v", i, time.Since(began).Round(time.Millisecond))
		})
		if t.Failed() {
			return
		}
	}
}

// The plan every round imports: item 1 edits and completes; item 2 runs
// until it is stopped (the fake agent reads its mode from the prompt).
const planDoc = `{
  "format": "codeboost-plan/1",
  "title": "End-to-end",
  "items": [
    {"title": "Edit the README", "instructions": "Append a line to README.md."},
    {"title": "Think for a long time", "instructions": "[fakeagent:sleep] Keep going until stopped."}
  ]
}`

const taskName = "e2e"

func cycle(t *testing.T, cli *client.Client, bin, agent string) {
	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	before := digest(t, repo)
	checkRepo := func(when string) {
		t.Helper()
		if after := digest(t, repo); after != before {
			t.Fatalf("%s: the user's repository changed", when)
		}
	}
	env := writeConfig(t, dir, repo, agent)

	s := startServe(t, bin, env)
	s.importApproved(t, planDoc, 2)
	s.action(t, "start", "")
	a1 := s.waitAttempt(t, 1, "completed")
	a2 := s.waitAttempt(t, 2, "running")

	// The completed item is a runner commit: the review load shows the
	// head the Store recorded, and the diff view the commit itself.
	r := s.review(t)
	if len(r.History) == 0 || r.History[len(r.History)-1].AttemptID != a1.ID {
		t.Fatalf("the ledger's last entry is not attempt 1's commit: %+v", r.History)
	}
	if r.Head != r.History[len(r.History)-1].Commit {
		t.Fatalf("the review head %q is not the recorded commit %+v", r.Head, r.History)
	}
	if diff := s.get(t, "/api/diff?task="+taskName+"&attempt="+a1.ID); !strings.Contains(diff, "+Edited by fakeagent.") {
		t.Fatalf("the diff view of attempt 1 does not show its edit:\n%s", diff)
	}
	checkRepo("after a completed item")

	// Cancel mid-run.
	s.action(t, "cancel", a2.ID)
	s.waitAttemptID(t, a2.ID, "cancelled")
	waitNoObjects(t, cli, "after the cancel")
	checkRepo("after the cancel")

	// A clean shutdown mid-run; the restart requeues the task by itself
	// (lane I3): attempt 4 runs item 2 again with no click.
	s.resume(t)
	a3 := s.waitAttempt(t, 3, "running")
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after a clean shutdown")
	s = startServe(t, bin, env)
	if got := s.waitAttemptID(t, a3.ID, "cancelled"); got.Diagnostic != "Stopped by shutdown" {
		t.Fatalf("attempt 3 after the clean shutdown: %+v", got)
	}
	a4 := requeued(t, s, 4)

	// kill -9 mid-run, then a restart: recovery removes the orphaned agent,
	// keeps and exports its storage, finalizes the row ("Interrupted"),
	// removes the storage, and requeues the task once more.
	s.kill(t)
	s = startServe(t, bin, env)
	got := s.waitAttemptID(t, a4.ID, "")
	a5 := requeued(t, s, 5)
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after recovery and the last shutdown")
	s = startServe(t, bin, env) // the last shutdown's requeue: attempt 6
	requeued(t, s, 6)
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "at the end")

	// Nothing lost or doubled: six attempts, one each, and one ledger
	// entry for the one completed attempt.
	st := s.lastStatus
	if len(st.Attempts) != 6 {
		t.Fatalf("%d attempts, want 6: %+v", len(st.Attempts), st.Attempts)
	}
	if oldestFirst(st.Attempts)[4].ID != a5.ID {
		t.Fatalf("attempt 5 is not the one requeued after kill -9: %+v", st.Attempts)
	}
	seen := map[string]bool{}
	for _, a := range st.Attempts {
		if seen[a.ID] {
			t.Fatalf("attempt %s listed twice", a.ID)
		}
		seen[a.ID] = true
	}
	owned := 0
	for _, h := range r.History {
		if h.AttemptID != "" {
			owned++
		}
	}
	if owned != 1 {
		t.Fatalf("%d runner commits in the ledger, want 1", owned)
	}
	if got.State != "failed" || !strings.HasPrefix(got.Diagnostic, "Interrupted") {
		t.Fatalf("attempt 4 after kill -9 and restart: %s (%s), want failed Interrupted", got.State, got.Diagnostic)
	}
	checkRepo("at the end")
}

// requeued waits for the n-th attempt, the one the restart's requeue
// admitted (lane I3), to run item 2, and checks that serve logged it and
// that no Resume is offered for it: the claim is spent.
func requeued(t *testing.T, s *server, n int) web.AttemptRow {
	t.Helper()
	a := s.waitAttempt(t, n, "running")
	if a.Kind != "execute" || a.Item == nil || *a.Item != 2 {
		t.Fatalf("attempt %d, the requeue's, is not item 2's execute: %+v", n, a)
	}
	if !strings.Contains(s.out.String(), "requeued e2e-repo/1/plan after the restart") {
		t.Fatalf("serve did not log the requeue:\n%s", s.out.String())
	}
	if st := s.status(t); st.Resumable {
		t.Fatalf("Resume is offered while the requeued attempt %d runs", n)
	}
	return a
}

// env is one round's files, and any variables serve gets on top of the
// test's environment.
type env struct {
	config, ready string
	environ       []string // e.g. DOCKER_HOST=...; nil: the test's environment as it is
}

func writeConfig(t *testing.T, dir, repo, agent string) env {
	t.Helper()
	cfg := map[string]any{
		"store": filepath.Join(dir, "cb.db"),
		"runner": map[string]any{
			"root":  filepath.Join(dir, "runner"),
			"agent": map[string]any{"image": agent, "argv": []string{"prompt"}, "pids": 64},
		},
		"tasks": []any{map[string]any{
			"name": taskName, "repository": repo,
			"identity": map[string]string{"repositoryId": "e2e-repo", "taskId": "1", "planId": "plan"},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	p := filepath.Join(dir, "codeboost.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return env{config: p, ready: filepath.Join(dir, "ready")}
}

// server is one `codeboost serve` process.
type server struct {
	cmd        *exec.Cmd
	url        string
	out        *syncBuffer
	done       chan error
	n          int
	lastStatus web.TaskStatus
}

func startServe(t *testing.T, bin string, e env) *server {
	t.Helper()
	s, err := tryServe(t, bin, e)
	if err != nil {
		t.Fatalf("serve exited during startup: %v\n%s", err, s.out.String())
	}
	return s
}

// tryServe is startServe for a startup that may fail: when serve exits
// before it is ready, it returns the server (its output in out, its exit
// status in cmd.ProcessState) and the exit error (an error too for an exit
// with status 0).
func tryServe(t *testing.T, bin string, e env) (*server, error) {
	t.Helper()
	os.Remove(e.ready)
	addr := freeAddr(t)
	s := &server{url: "http://" + addr, out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "serve", "--config", e.config, "--listen", addr, "--ready", e.ready)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if e.environ != nil {
		s.cmd.Env = append(os.Environ(), e.environ...)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(60 * time.Second):
				s.cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", s.out.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(e.ready); err == nil {
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			if err == nil {
				err = errors.New("exit status 0 before ready")
			}
			return s, err
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 60 s:\n%s", s.out.String())
		}
	}
}

// stop sends sig and waits for a clean exit.
func (s *server) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	s.cmd.Process.Signal(sig)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve exited with %v after %v:\n%s", err, sig, s.out.String())
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("serve did not exit within 120 s of %v:\n%s", sig, s.out.String())
	}
}

// kill is kill -9: no shutdown step runs.
func (s *server) kill(t *testing.T) {
	t.Helper()
	s.cmd.Process.Kill()
	<-s.done
}

func (s *server) actionID() string {
	s.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", time.Now().UnixNano()%1e12+int64(s.n))
}

func (s *server) post(t *testing.T, path string, body any) web.ActionReply {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r web.ActionReply
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != 200 || r.Outcome == "refused" {
		t.Fatalf("POST %s %s: %d %s", path, b, resp.StatusCode, raw)
	}
	return r
}

func (s *server) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

func (s *server) status(t *testing.T) web.TaskStatus {
	t.Helper()
	var r web.RunnerReply
	if err := json.Unmarshal([]byte(s.get(t, "/api/runner?task="+taskName)), &r); err != nil {
		t.Fatal(err)
	}
	for _, ts := range r.Tasks {
		if ts.Name == taskName {
			s.lastStatus = ts
			return ts
		}
	}
	t.Fatalf("no task %s in the runner's status", taskName)
	return web.TaskStatus{}
}

func (s *server) review(t *testing.T) web.ReviewReply {
	t.Helper()
	var r web.ReviewReply
	if err := json.Unmarshal([]byte(s.get(t, "/api/review?task="+taskName)), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *server) approveAll(t *testing.T, items int) {
	t.Helper()
	for i := 1; i <= items; i++ {
		item := i
		s.post(t, "/api/review", web.ReviewAction{Task: taskName, Action: "approve", ActionID: s.actionID(),
			Item: &item, ExpectedReviewVersion: s.review(t).ReviewVersion})
	}
}

func (s *server) action(t *testing.T, action, attemptID string) {
	t.Helper()
	st := s.status(t)
	s.post(t, "/api/runner", web.RunnerAction{Task: taskName, Action: action, AttemptID: attemptID, ActionID: s.actionID(),
		ExpectedStateVersion: st.StateVersion, ExpectedReviewVersion: st.ReviewVersion})
}

// resume runs the plan again once the runner offers it.
func (s *server) resume(t *testing.T) {
	t.Helper()
	s.until(t, "resume is offered", func(st web.TaskStatus) bool { return st.Resumable })
	s.action(t, "resume", "")
}

// waitAttempt waits for the n-th attempt (1-based, oldest first) to be in
// state, and returns it.
func (s *server) waitAttempt(t *testing.T, n int, state string) web.AttemptRow {
	t.Helper()
	var got web.AttemptRow
	s.until(t, fmt.Sprintf("attempt %d %s", n, state), func(st web.TaskStatus) bool {
		rows := oldestFirst(st.Attempts)
		if len(rows) < n {
			return false
		}
		got = rows[n-1]
		return got.State == state
	})
	return got
}

// waitAttemptID waits for the attempt to be in state ("" for any terminal
// state).
func (s *server) waitAttemptID(t *testing.T, id, state string) web.AttemptRow {
	t.Helper()
	var got web.AttemptRow
	s.until(t, "attempt "+id+" "+state, func(st web.TaskStatus) bool {
		for _, a := range st.Attempts {
			if a.ID == id {
				got = a
				if state == "" {
					return a.State != "pending" && a.State != "running"
				}
				return a.State == state
			}
		}
		return false
	})
	return got
}

func (s *server) until(t *testing.T, what string, ok func(web.TaskStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st := s.status(t)
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Fatalf("waited 90 s for %s; status:\n%s\nserve's output:\n%s", what, b, s.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func oldestFirst(rows []web.AttemptRow) []web.AttemptRow {
	out := append([]web.AttemptRow(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// waitNoObjects waits until no container, volume or network carries a
// codeboost runner label: settlement and removal run after the row's
// terminal write, so the last removal may trail the state by a moment.
func waitNoObjects(t *testing.T, cli *client.Client, when string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := labelled(t, cli)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: labelled objects left: %v", when, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// labelled lists every object any runner labelled (see objectsLabelled).
func labelled(t *testing.T, cli *client.Client) []string {
	t.Helper()
	return objectsLabelled(t, cli, "io.codeboost.runner")
}

// userRepo makes the user's repository: two commits with fixed dates.
func userRepo(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) { gitIn(t, dir, args...) }
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# A project\n"), 0o644)
	git("add", "README.md")
	git("commit", "-q", "-m", "first")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	git("add", "main.go")
	git("commit", "-q", "-m", "second")
	return dir
}

// gitIn runs git in dir as the user of the tests' repositories, at a
// fixed date, with no configuration of the machine's, and returns its
// output, trimmed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u",
		"GIT_COMMITTER_EMAIL=u@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// digest hashes every file of the repository, .git included: names,
// modes, contents and modification times.
func digest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %v %d\n", rel, fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// buildCodeboost is the production binary, built once per test process
// (testbin removes it when the tests end).
func buildCodeboost(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Codeboost()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMain(m *testing.M) { testbin.Main(m) }
