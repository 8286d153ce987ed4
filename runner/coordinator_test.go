package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestNewRefusesABadConfig: the owner token is used as a label and in every
// path under the runner root, so a coordinator is never built with one that
// is not 32 lowercase hex, nor with a root that is not absolute, whatever
// else is missing.
//
// kills: mutant/new-ignores-bad-config
func TestNewRefusesABadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"owner token with a path in it", Config{Root: "/var/lib/codeboost", Owner: "../x"}, "owner token"},
		{"owner token in upper case", Config{Root: "/var/lib/codeboost", Owner: strings.Repeat("A", 32)}, "owner token"},
		{"relative root", Config{Root: "runner", Owner: strings.Repeat("a", 32)}, "absolute path"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg, Deps{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error about the %s", c.name, err, c.want)
		}
	}
	// A good configuration without the parts the coordinator drives.
	good := Config{Root: "/var/lib/codeboost", Owner: strings.Repeat("a", 32)}
	if _, err := New(good, Deps{}); err == nil || err.Error() != "runner: Store, D, Clock, Loop and IDs are required" {
		t.Errorf("New with no dependencies = %v", err)
	}
}

// TestEntryPointsReportAnEventThatNeverRan: every entry point hands its work
// to the loop and waits. When the event never ran (the loop had stopped, or
// the caller's context ended first), the caller gets that error, never an
// empty answer that looks like success: a user action that applied nothing
// for a passing reason must say so, so the UI may resend it.
//
// kills: mutant/cancel-hides-call-error
func TestEntryPointsReportAnEventThatNeverRan(t *testing.T) {
	c, st, loop := productionCoordinator(t, 1, &goD{})
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
		t.Fatal(err)
	}
	r := ActionRequest{PlanKey: id.Key(), AttemptID: ids.Random{}.UUID(), ActionID: ids.Random{}.UUID()}
	entries := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"CancelAttempt", func(ctx context.Context) error { _, err := c.CancelAttempt(ctx, r); return err }},
		{"CancelTask", func(ctx context.Context) error { _, err := c.CancelTask(ctx, r); return err }},
		{"Retry", func(ctx context.Context) error { _, err := c.Retry(ctx, r); return err }},
		{"RunAgain", func(ctx context.Context) error { _, err := c.RunAgain(ctx, r); return err }},
		{"Start", func(ctx context.Context) error { _, err := c.Start(ctx, r); return err }},
		{"Resume", func(ctx context.Context) error { _, err := c.Resume(ctx, r); return err }},
		{"Admit", func(ctx context.Context) error {
			_, err := c.Admit(ctx, AdmitRequest{PlanKey: id.Key(), Kind: words.KindReview})
			return err
		}},
		{"ChangeContext", func(ctx context.Context) error {
			return c.ChangeContext(ctx, id.Key(), func(*store.Tx) error { return nil })
		}},
		{"StopJobs", func(ctx context.Context) error { return c.StopJobs(ctx) }},
		// Sweep survivor (seed 1618): runner/actions.go:Coordinator.ReviewAction:ignore-error:f8bcec57.
		{"ReviewAction", func(ctx context.Context) error {
			_, err := c.ReviewAction(ctx, store.Action{PlanKey: id.Key(), ActionID: r.ActionID, Kind: "review/note"},
				func(*store.Tx) (store.Response, error) { return store.Response{Outcome: "applied"}, nil })
			return err
		}},
	}

	// The caller's context ended before the event was delivered.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, e := range entries {
		if err := e.call(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended context: %v, want %v", e.name, err, context.Canceled)
		}
	}

	// The loop has stopped.
	loop.Stop()
	for _, e := range entries {
		if err := e.call(context.Background()); !errors.Is(err, ErrStopped) {
			t.Errorf("%s after the loop stopped: %v, want %v", e.name, err, ErrStopped)
		}
	}
	if as, err := st.Attempts(id.Key()); err != nil || len(as) != 0 {
		t.Errorf("attempts: %v, %v; want none", as, err)
	}
}

// TestRequeueOfNoTaskSaysSo: a requeue names its task by plan key; one
// the Store does not have is refused with the task read's words, before
// anything else is read or admitted; a user action's version check says
// the same.
func TestRequeueOfNoTaskSaysSo(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, &goD{})
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Requeue(context.Background(), "no/such/plan"); err == nil || err.Error() != `no task "no/such/plan"` {
		t.Errorf("Requeue of a plan key with no task: %+v, %v", resp, err)
	}
	// So is a user action's version check.
	r := ActionRequest{PlanKey: "no/such/plan", AttemptID: ids.Random{}.UUID(), ActionID: ids.Random{}.UUID()}
	if resp, err := c.CancelAttempt(context.Background(), r); err == nil || !strings.Contains(err.Error(), `no task "no/such/plan"`) {
		t.Errorf("CancelAttempt of a plan key with no task: %+v, %v", resp, err)
	}
}
