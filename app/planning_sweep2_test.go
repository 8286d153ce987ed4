package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/web"
)

// sourceEngine is an engine that answers and has every image, and tells
// the test what task storage was asked to be seeded from; it makes none.
type sourceEngine struct {
	quietEngine
	sources chan dadapter.Source
}

func (e *sourceEngine) PrepareTaskFilesystems(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source,
	onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	e.sources <- src
	e.quietEngine.PrepareTaskFilesystems(ctx, owner, src, onGroup, done)
}

var servingAt = regexp.MustCompile(`serving \S+ at (http://\S+/)`)

// TestLivePlanningSeedsFromTheTasksHead: a live planning request's task
// storage is made from the task's present code (its referenced commit),
// not from whatever the task's repository's HEAD is, so the agent plans
// against the code the plan is about.
// Sweep survivor (seed 20261203): app/suggest.go:App.livePlanning:negate:687c9e9f.
func TestLivePlanningSeedsFromTheTasksHead(t *testing.T) {
	dir, db, _ := firstStart(t)
	gh := httptest.NewServer(http.NotFoundHandler())
	defer gh.Close()
	t.Setenv("CODEBOOST_SWEEP2_TOKEN", "t0ken")
	engine := &sourceEngine{sources: make(chan dadapter.Source, 4)}
	ready := filepath.Join(dir, "ready")
	opt := app.Options{DB: db, Ready: ready, Listen: "127.0.0.1:0",
		Runner: app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:test"}},
		Tasks: []app.TaskConfig{{Name: "plan-me", Repository: filepath.Join(dir, "repo"),
			Identity: app.IdentityConfig{RepositoryID: "r", TaskID: "plan-me", PlanID: "p"}, GitHub: &app.TaskGitHub{Repo: "acme/parser"}}},
		GitHub: &app.GitHubConfig{APIURL: gh.URL, TokenEnv: "CODEBOOST_SWEEP2_TOKEN"},
		Engine: func(context.Context, app.EngineOptions) (app.Engine, error) { return engine, nil }}
	// A first start creates the task; its work then lands on a commit.
	first := opt
	first.Check, first.Ready, first.Listen = true, "", ""
	if logs, _, err := runApp(t, first); err != nil {
		t.Fatalf("first start: %v\n%s", err, logs)
	}
	const head = "0123456789abcdef0123456789abcdef01234567"
	raw, err := sql.Open("sqlite", store.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`UPDATE tasks SET referenced_code_hash = ?`, head)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}

	url, out := serveUntilCleanup(t, opt, ready)
	body, _ := json.Marshal(web.PlanStart{Task: "plan-me", ActionID: "3f2a8c10-1b2c-4d3e-8f40-5a6b7c8d9e0f", ExpectedRevision: 1, ExpectedSnapshot: "initial"})
	resp, err := http.Post(url+"api/plan/suggestions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	select {
	case src := <-engine.sources:
		if src.Commit != head {
			t.Errorf("planning's storage seeded from %+v, want the task's head %s", src, head)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no task storage was asked for; the start answered %d %s\n%s", resp.StatusCode, reply, out.String())
	}
}

// runUntilReady runs a in this process and waits for its ready file;
// serve ending first, or not ready within 30 s, fails the test with what
// logs returns. The channel gives Run's error.
func runUntilReady(t *testing.T, a *app.App, ready string, logs func() string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- a.Run() }()
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			return done
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended before it was ready: %v\n%s", err, logs())
		default:
		}
		if i > 3000 {
			t.Fatalf("serve never became ready:\n%s", logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveUntilCleanup runs serve with opt in this process until the test
// ends (then a SIGINT stops it, and its error fails the test), and returns
// the review server's URL and the log.
func serveUntilCleanup(t *testing.T, opt app.Options, ready string) (string, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	log, _ := app.NewLogger(out, app.LogText)
	opt.Log, opt.Stderr, opt.Ready = log, io.Discard, ready
	a, err := app.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	done := runUntilReady(t, a, ready, out.String)
	t.Cleanup(func() {
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	})
	m := servingAt.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no URL in the log:\n%s", out.String())
	}
	return m[1], out
}
