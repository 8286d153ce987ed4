package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/web"
)

// TestMergeReadsTheTasksPullRequest: a task whose github block names a
// pull request is merged through that pull request: a merge reads it on
// GitHub first, and is never refused as naming none.
// Sweep survivor (seed 20261203): app/merge.go:App.openMerge:negate:96e603d0.
func TestMergeReadsTheTasksPullRequest(t *testing.T) {
	dir, db, _ := firstStart(t)
	var mu sync.Mutex
	var asked []string
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer gh.Close()
	t.Setenv("CODEBOOST_SWEEP2_TOKEN", "t0ken")
	base, out := serveUntilCleanup(t, app.Options{DB: db, Listen: "127.0.0.1:0",
		Tasks: []app.TaskConfig{
			{Name: "merge-me", Repository: filepath.Join(dir, "repo"),
				Identity: app.IdentityConfig{RepositoryID: "r", TaskID: "merge-me", PlanID: "p"}, GitHub: &app.TaskGitHub{Repo: "acme/parser", PullRequest: 7}}},
		GitHub: &app.GitHubConfig{APIURL: gh.URL, TokenEnv: "CODEBOOST_SWEEP2_TOKEN"}}, filepath.Join(dir, "ready"))
	body, _ := json.Marshal(web.MergeRequest{Task: "merge-me", ActionID: "3f2a8c10-1b2c-4d3e-8f40-5a6b7c8d9e0f"})
	resp, err := http.Post(base+"api/merge", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(string(reply), "names no pull request") || len(asked) == 0 || !strings.HasSuffix(asked[len(asked)-1], "/repos/acme/parser/pulls/7") {
		t.Errorf("merge answered %d %s; GitHub was asked %q, want a read of acme/parser#7\n%s", resp.StatusCode, reply, asked, out.String())
	}
}
