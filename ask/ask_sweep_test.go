package ask_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
)

// TestAskReportsAnEventThatNeverRan: Ask hands its work to the loop and
// waits. When the event never ran (the loop had stopped, or the caller's
// context ended first) the caller gets that error, never an empty saved
// response with no error, which would read as a question admitted. The
// runner's entry points hold the same rule
// (runner.TestEntryPointsReportAnEventThatNeverRan). Sweep survivor
// (seed 5150): ask/ask.go:Coordinator.Ask:ignore-error:05b9dd0b.
func TestAskReportsAnEventThatNeverRan(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loop := runner.NewGoroutineLoop()
	c, err := ask.New(ask.Config{Store: st, Capability: st.ShutdownCapability(), Loop: loop, Clock: runner.NewRealClock(),
		IDs: ids.Random{}, Owner: ids.Random{}.Token()})
	if err != nil {
		t.Fatal(err)
	}
	req := ask.Request{PlanKey: "repo/task/plan", ActionID: ids.Random{}.UUID(), Text: "why?"}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if resp, err := c.Ask(ctx, req); err == nil {
		t.Errorf("Ask with its context ended: %+v and no error", resp)
	}
	loop.Stop()
	if resp, err := c.Ask(context.Background(), req); err == nil {
		t.Errorf("Ask with the loop stopped: %+v and no error", resp)
	}
}
