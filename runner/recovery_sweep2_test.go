package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestShutdownReportsAStoppedLoop: Shutdown begins shutdown, then waits for
// Drained. Once the loop has stopped, StopJobs's event never runs (no
// job gets the first reason shutdown, nothing is stopped) and Drained can
// never close, so Shutdown must answer StopJobs's ErrStopped at once,
// as every entry point does for an event that never ran, instead of
// waiting until the caller's context gives up (with context.Background,
// for ever) and reporting only that.
// Sweep survivor (seed 20261203): runner/shutdown.go:Coordinator.Shutdown:ignore-error:0537b744.
func TestShutdownReportsAStoppedLoop(t *testing.T) {
	c, _, loop := productionCoordinator(t, 1, &goD{})
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Shutdown(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Shutdown after the loop stopped: %v, want %v", err, ErrStopped)
	}
	if ctx.Err() != nil {
		t.Error("Shutdown waited for its context to end")
	}
}
