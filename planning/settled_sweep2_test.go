package planning_test

import (
	"context"
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

// TestOnSettledAfterTheHandleSettled: fn registered on a handle that has
// already settled is called at once with its outcome (suggest.Handle's
// "If the handle has already settled, fn is called at once"), so a
// request whose attempt ended early is never left pending forever.
//
// Sweep survivor (seed 20261203): planning/provider.go:handle.OnSettled:drop-guard:d9c436f1.
func TestOnSettledAfterTheHandleSettled(t *testing.T) {
	loop := &sim.Loop{}
	d := simd.NewD(func(id string) string { return id }, nil)
	p, err := planning.New(planning.Config{D: failingRecoveryD{d}, Loop: loop, IDs: ids.NewSeeded(3), Owner: owner,
		Source: func(string) dadapter.Source { return dadapter.Source{Commit: "c1"} }})
	if err != nil {
		t.Fatal(err)
	}
	var h suggest.Handle
	loop.Call(context.Background(), func() {
		h, err = p.Start(context.Background(), input("cccccccc-cccc-4ccc-8ccc-ccccccccccc8", store.ModeSuggestion))
	})
	if err != nil {
		t.Fatal(err)
	}
	loop.Drain() // the recovery fails, and the handle settles with its error
	var got *suggest.Outcome
	loop.Call(context.Background(), func() { h.OnSettled(func(o suggest.Outcome) { got = &o }) })
	if got == nil || got.Err == nil || !strings.Contains(got.Err.Error(), "engine gone") {
		t.Fatalf("outcome given to fn registered after settlement: %+v; want recovery's error at once", got)
	}
}
