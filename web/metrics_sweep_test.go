package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestMetricsCountNothingOfAnUnreadTask: a scrape counts a task's attempts
// from its status read; a read that fails partway (here after the
// attempts were read, at a later statement of the same transaction) is no
// read, and the task counts nothing rather than what the failed read had
// gathered when it failed.
// Sweep survivor (seed 271828): web/metrics.go:Server.registerGauges:ignore-error:31d5f59c.
func TestMetricsCountNothingOfAnUnreadTask(t *testing.T) {
	w := newSimWorld(t)
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	if err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}, Status: words.StatusRunning})
	}); err != nil {
		t.Fatal(err)
	}
	task, err := w.Store.Task(id.Key())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: id.Key(), Kind: words.KindReview,
		ExpectedStateVersion: task.StateVersion}); err != nil {
		t.Fatal(err)
	}
	w.Loop.Drain()
	srv, err := New(Options{Runner: w.Runner, Store: w.Store, Clock: w.Clock, Tasks: []Task{{Name: "demo", Identity: id}}})
	if err != nil {
		t.Fatal(err)
	}
	// The fault: every statement after the first n of the status read.
	spec := ""
	for n := 1; n < 40 && spec == ""; n++ {
		s := fmt.Sprintf("%d*off->return", n)
		if err := w.FP.Enable("store/statement", s); err != nil {
			t.Fatal(err)
		}
		st, err := w.Runner.Status(id.Key())
		w.FP.Disable("store/statement")
		if err != nil && len(st.Attempts) == 1 {
			spec = s
		}
	}
	if spec == "" {
		t.Fatal("no statement of the status read fails after the attempts were read")
	}
	if err := w.FP.Enable("store/statement", spec); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	w.FP.Disable("store/statement")
	body := rec.Body.String()
	for _, state := range []string{"pending", "running"} {
		if want := fmt.Sprintf(`codeboost_attempts{state=%q} 0`, state); !strings.Contains(body, want) {
			t.Errorf("metrics with the task's status read failing lack %q:\n%s", want, body)
		}
	}
	// Read whole, the same task's attempt is counted.
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `codeboost_attempts{state="running"} 1`) && !strings.Contains(rec.Body.String(), `codeboost_attempts{state="pending"} 1`) {
		t.Errorf("metrics read whole do not count the attempt:\n%s", rec.Body.String())
	}
}
