package web

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestNewRefusesDuplicateTask: a task name configured twice is a
// configuration error, not a silent overwrite of the first task by the
// second (and a screen listing the name twice).
//
// Sweep survivor (seed 20261203): web/server.go:New:drop-guard:00d37f4f.
func TestNewRefusesDuplicateTask(t *testing.T) {
	f := newFixture(t, 1)
	tasks := []Task{
		{Name: "demo", Identity: store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}},
		{Name: "demo", Identity: store.Identity{RepositoryID: "repo", TaskID: "t2", PlanID: "plan"}},
	}
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Tasks: tasks})
	if err == nil || !strings.Contains(err.Error(), "task demo is configured twice") {
		t.Fatalf("New with a duplicate task: server %v, err %v", srv != nil, err)
	}
}
