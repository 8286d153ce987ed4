package planning_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/planning"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// failingRecoveryD is the simulated D whose recovery of leftovers fails.
type failingRecoveryD struct{ *simd.D }

func (failingRecoveryD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	done(dadapter.RecoveryReport{}, errors.New("engine gone"))
}

// TestFailedRecoveryFailsTheWaitingRequest: the first request waits for
// D's recovery of the planning owner's leftovers; when that recovery
// fails, the request fails with its error and no planning attempt starts
// over leftovers nobody removed. Sweep survivor (seed 5150):
// planning/provider.go:Provider.recoveryEnded:ignore-error:31d5f59c.
func TestFailedRecoveryFailsTheWaitingRequest(t *testing.T) {
	loop := &sim.Loop{}
	var trace []string
	d := simd.NewD(func(id string) string { return id }, func(line string) { trace = append(trace, line) })
	p, err := planning.New(planning.Config{D: failingRecoveryD{d}, Loop: loop, IDs: ids.NewSeeded(3), Owner: owner,
		Source: func(string) dadapter.Source { return dadapter.Source{Commit: "c1"} },
		Trace:  func(line string) { trace = append(trace, line) }})
	if err != nil {
		t.Fatal(err)
	}
	id := "cccccccc-cccc-4ccc-8ccc-ccccccccccc9"
	var got *suggest.Outcome
	loop.Call(context.Background(), func() {
		h, err := p.Start(context.Background(), input(id, store.ModeSuggestion))
		if err != nil {
			t.Fatal(err)
		}
		h.OnSettled(func(o suggest.Outcome) { got = &o })
	})
	loop.Drain()
	if d.Handle(id) != nil {
		t.Fatalf("a planning attempt started though recovery failed\n%s", strings.Join(trace, "\n"))
	}
	if got == nil || got.Err == nil || !strings.Contains(got.Err.Error(), "planning's leftovers could not be recovered: engine gone") {
		t.Fatalf("outcome %+v; want recovery's error", got)
	}
}
