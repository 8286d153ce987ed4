package app_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// quietEngine is an engine that answers and has every image.
type quietEngine struct{ fakeEngine }

func (e *quietEngine) CheckImage(context.Context, string) error { return nil }

// TestRunLogsLeftoverPlanningRequestsThatCannotBeFailed: with live
// planning on, startup fails the planning requests an earlier process left
// pending; when that write fails, the error is logged ("planning: the
// requests an earlier process left pending could not be failed") and the
// server runs on with the request still pending. A trigger that refuses
// the write stands in for a storage error.
// Sweep survivor (seed 20261203): app/suggest.go:App.openSuggest:ignore-error:7c59333a.
func TestRunLogsLeftoverPlanningRequestsThatCannotBeFailed(t *testing.T) {
	_, db, _ := firstStart(t)
	st, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	err = st.Update(func(tx *store.Tx) error {
		if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}}); err != nil {
			return err
		}
		p, err := tx.Plan(id.Key())
		if err != nil {
			return err
		}
		_, err = tx.BeginPlanRequest(id.Key(), store.ModeSuggestion, "3f2a8c10-1b2c-4d3e-8f40-5a6b7c8d9e0f", p.Revision, p.SnapshotID)
		return err
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", store.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TRIGGER refuse_failing BEFORE UPDATE ON plan_requests WHEN NEW.state = 'failed'
		BEGIN SELECT RAISE(ABORT, 'the disk is full'); END`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	gh := httptest.NewServer(http.NotFoundHandler())
	defer gh.Close()
	t.Setenv("CODEBOOST_SWEEP2_TOKEN", "t0ken")
	agent := app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:test"}}
	logs, _, err := runApp(t, app.Options{DB: db, Check: true, Runner: agent,
		GitHub: &app.GitHubConfig{APIURL: gh.URL, TokenEnv: "CODEBOOST_SWEEP2_TOKEN"},
		Engine: func(context.Context, app.EngineOptions) (app.Engine, error) { return &quietEngine{}, nil }})
	if err != nil {
		t.Fatalf("startup: %v\n%s", err, logs)
	}
	if !strings.Contains(logs, "planning: the requests an earlier process left pending could not be failed") ||
		!strings.Contains(logs, "the disk is full") {
		t.Errorf("the failed write of the leftover requests is not logged:\n%s", logs)
	}
}
