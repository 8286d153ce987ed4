package web

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestDrainLimitWarnsOnlyOfRequestsStillRunning: shutdown step 2 waits for
// the admitted requests up to the drain limit, and the log says so when
// the limit, not the last request, ended the wait ("requests still running
// at the drain limit", with their count). A drain that ended at once
// because no request was running logs nothing at the limit: a warning then
// would send the person reading the log after a request that never hung.
// Sweep survivor (seed 918273): web/server.go:Server.BeginDrain:negate:28a4c90a.
func TestDrainLimitWarnsOnlyOfRequestsStillRunning(t *testing.T) {
	for _, running := range []int{0, 2} {
		f := newFixture(t, 1)
		var log bytes.Buffer
		srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Log: slog.New(slog.NewTextHandler(&log, nil)),
			Tasks: []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}}})
		if err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		for range running {
			srv.active[&request{}] = struct{}{} // admitted, not returned
		}
		srv.mu.Unlock()
		drained := srv.BeginDrain()
		f.w.Clock.Advance(DrainLimit)
		f.w.Loop.Drain()
		select {
		case <-drained:
		default:
			t.Fatalf("%d requests running: the drain did not end at its limit", running)
		}
		warned := strings.Contains(log.String(), "requests still running at the drain limit")
		if want := running > 0; warned != want || want && !strings.Contains(log.String(), "requests=2") {
			t.Errorf("%d requests running at the drain limit: the log says %q; want the warning with their count: %v", running, log.String(), want)
		}
	}
}
