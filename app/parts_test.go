package app

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/sim/simenv"
)

// simParts are the simulated parts a process can run on (package
// sim/simenv, which package sim's worlds use too), with the decisions
// traced into lines.
func simParts() (*Parts, *traceLines) {
	loop := &simenv.Loop{}
	clock := simenv.NewClock(loop)
	lines := &traceLines{}
	d := simd.NewD(func(id string) string { return id }, lines.add)
	d.Now = clock.Now
	return &Parts{Clock: clock, Loop: loop, IDs: ids.NewSeeded(1), D: d, Planner: simenv.NewPlanner(lines.add), Trace: lines.add}, lines
}

// runOnLoop drives steps as package sim's worlds do: whenever the
// simulated loop falls idle (nothing of the process runs on a goroutine of
// its own there, so Steps.Wait would wait for ever).
func runOnLoop(loop *simenv.Loop, steps *Steps) error {
	loop.Idle = func() bool {
		before := loop.Events()
		steps.Next()
		return loop.Events() != before
	}
	defer func() { loop.Idle = nil }()
	loop.Drain()
	if !steps.Done() {
		return errors.New("the steps wait for something the loop will not do")
	}
	return steps.Err()
}

type traceLines struct {
	mu    sync.Mutex
	lines []string
}

func (t *traceLines) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
}

func (t *traceLines) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// TestPlanningStartupLogsOnlyWhatItFailed: with planning on, startup fails
// the planning requests an earlier process left pending, and tells the
// operator when it did; a start that found none says nothing, so that the
// log line always means a request a user will see failed.
// Sweep survivor (seed 60221): app/suggest.go:App.openSuggest:boundary:f1518837.
func TestPlanningStartupLogsOnlyWhatItFailed(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	parts, lines := simParts()
	var log bytes.Buffer
	a, err := New(Options{DB: filepath.Join(t.TempDir(), "codeboost.db"), Check: true, Parts: parts,
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := runOnLoop(parts.Loop.(*simenv.Loop), a.Startup()); err != nil {
		t.Fatal(err)
	}
	if err := runOnLoop(parts.Loop.(*simenv.Loop), a.Shutdown()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lines.String(), "suggest: startup: failed 0 planning requests an earlier process left pending") {
		t.Fatalf("planning's startup did not run (is planning on?):\n%s", lines)
	}
	if strings.Contains(log.String(), "left pending") {
		t.Errorf("a start with nothing left pending logged that it failed some:\n%s", log.String())
	}
}
