package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
)

// TestFullLengthWindows runs the contract's two long windows at full
// length, side by side under one engine lock (each waits a minute on an
// engine that does not answer, through a proxy of its own, so neither can
// see the other's objects): R104's 60-second export deadline and decision
// 4's 60-second cleanup window. Run one after the other they were two
// minutes of CI; everything else runs them shortened.
func TestFullLengthWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the full 60-second export deadline and cleanup window")
	}
	w := newWorld(t)
	t.Run("R104-export-that-hangs-is-cut-at-its-deadline", func(t *testing.T) {
		t.Parallel()
		testR104ExportThatHangsIsCutAtItsDeadline(t, w.sub(t))
	})
	t.Run("cleanup-window", func(t *testing.T) {
		t.Parallel()
		testCleanupWindowFullLength(t, w.sub(t))
	})
}

// testR104ExportThatHangsIsCutAtItsDeadline is R104 (review round 32,
// "Export hangs") against a real engine, with the contract's full
// 60-second export deadline (the one test that runs it at full length):
// the export container is made and started, then the engine never
// answers the attach or the wait, so the export would never return. F's
// deadline (ctx) aborts it at 60 s; D removes the export container before
// it settles, so nothing is left; the export fails with the context's
// error, which F records as "Partial output could not be exported" (the
// simulated scenario R104 shows the runner's side: the terminal write and
// the removal go on, and shutdown finishes).
//
// It fails if the export ignores its context (no settlement by the bound)
// or settles before removing its container (NoLeaks at the end).
func testR104ExportThatHangsIsCutAtItsDeadline(t *testing.T, w *world) {
	p, d, st := w.proxied(hungOptions)
	p.Stall(func(req string) bool { return strings.Contains(req, "/attach") || strings.Contains(req, "/wait") })

	const deadline = 60 * time.Second // the contract's export deadline
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	began := time.Now()
	type result struct {
		r   dadapter.ExportResult
		err error
	}
	done := make(chan result, 1)
	d.ExportTaskDiff(ctx, st, 1<<20, func(r dadapter.ExportResult, err error) { done <- result{r, err} })
	got := waitFor(t, "the hung export's settlement", done, deadline+d.opt.CallTimeout+d.opt.CleanupWindow+10*time.Second)
	took := time.Since(began)
	t.Logf("the hung export settled after %v: %v", took.Round(time.Millisecond), got.err)
	if got.err == nil || !errors.Is(got.err, context.DeadlineExceeded) {
		t.Errorf("the hung export returned %v, want the deadline's error", got.err)
	}
	if took < deadline {
		t.Errorf("the export settled after %v, before its deadline: nothing hung", took)
	}
	if len(p.Held()) == 0 {
		t.Errorf("no request was held: the export did not hang on the engine")
	}
	p.Resume()
}
