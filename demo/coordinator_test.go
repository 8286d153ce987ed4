package demo_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/livelog"
	"github.com/codeboost/codeboost/demo"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/sim/simenv"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// follow collects a followed stream without waiting: what is queued, and
// whether it has ended.
func follow(updates <-chan []byte) (string, bool) {
	var b strings.Builder
	for {
		select {
		case c, ok := <-updates:
			if !ok {
				return b.String(), true
			}
			b.Write(c)
		default:
			return b.String(), false
		}
	}
}

// TestCoordinatorRunsTheDemo wires the demo as `serve --demo` does, on the
// simulator's loop and clock instead of the real ones: the real
// coordinator and a Store on a file, the demo agent's D, and the live
// output hub as the runner's output sinks. One attempt completes with the
// agent's result; another, cancelled mid-run, ends cancelled with its
// partial output exported. Both stream while they run and their streams
// end when they settle.
func TestCoordinatorRunsTheDemo(t *testing.T) {
	loop := &simenv.Loop{}
	clock := simenv.NewClock(loop)
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "cb.db"), store.Options{Now: clock.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hub := livelog.NewHub(0)
	agent := demo.New(demo.Options{Loop: loop, Clock: clock, Seed: 2})
	c, err := runner.New(runner.Config{Root: dir, Owner: ids.Random{}.Token()}, runner.Deps{
		Store: st, Capability: st.ShutdownCapability(), D: agent.D(), Clock: clock, Loop: loop, IDs: ids.Random{},
		Output: func(attemptID string) dadapter.OutputSink { return hub.Sink(attemptID) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	admit := func(task string) (key, attemptID string) {
		id := store.Identity{RepositoryID: demo.Repository(), TaskID: task, PlanID: "demo"}
		if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
			t.Fatal(err)
		}
		attemptID, err := c.Admit(ctx, runner.AdmitRequest{PlanKey: id.Key(), Kind: words.KindExecute})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second) // storage, then clone
		if got := hub.Running(); len(got) != 1 || got[0] != attemptID {
			t.Fatalf("running after preparation: %v, want %s", got, attemptID)
		}
		return id.Key(), attemptID
	}
	attempt := func(key string) store.Attempt {
		as, err := st.Attempts(key)
		if err != nil || len(as) != 1 {
			t.Fatalf("attempts: %v, %v", as, err)
		}
		return as[0]
	}

	// Seed 2's first run completes.
	key, id := admit("t1")
	backlog, updates, stop, ok := hub.Follow(id)
	defer stop()
	if !ok {
		t.Fatal("cannot follow a running attempt")
	}
	clock.Advance(12 * time.Second)
	out, ended := follow(updates)
	out = string(backlog) + out
	if !ended || !strings.HasPrefix(out, "demo agent: ") || !strings.Contains(out, "\ndone: ") {
		t.Errorf("stream ended %v:\n%s", ended, out)
	}
	a := attempt(key)
	if a.State != words.Completed {
		t.Fatalf("attempt %s: %s %q", id, a.State, a.Diagnostic)
	}
	if u, ok := dadapter.ParseUsage(a.Result); !ok || u.InputTokens == 0 {
		t.Errorf("result %s carries no usage", a.Result)
	}

	// The second run is cancelled once it has changed something.
	key, id = admit("t2")
	_, updates, stop2, _ := hub.Follow(id)
	defer stop2()
	var streamed string
	for !strings.Contains(streamed, "editing ") {
		clock.Advance(100 * time.Millisecond)
		more, ended := follow(updates)
		if ended {
			t.Fatalf("the run ended before any change:\n%s", streamed+more)
		}
		streamed += more
	}
	task, err := st.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelAttempt(ctx, runner.ActionRequest{PlanKey: key, AttemptID: id, ExpectedStateVersion: task.StateVersion, ActionID: ids.Random{}.UUID()}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	more, ended := follow(updates)
	if !ended || !strings.HasSuffix(more, "received SIGTERM: stopping\n") {
		t.Errorf("after the cancel the stream ended %v with %q", ended, more)
	}
	a = attempt(key)
	if a.State != words.Cancelled || a.StopReason != words.StopCancelled || a.DiagnosticRef == "" {
		t.Errorf("cancelled attempt: %s, stop %q, partial output %q", a.State, a.StopReason, a.DiagnosticRef)
	}
	if got := hub.Running(); len(got) != 0 || c.SlotsUsed() != 0 {
		t.Errorf("after both: running %v, slots %d", got, c.SlotsUsed())
	}
}
