package planning_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/planning"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// world is the provider on the simulator's loop and the simulated D.
type world struct {
	loop  *sim.Loop
	d     *simd.D
	trace []string
	p     *planning.Provider
}

const owner = "0123456789abcdef0123456789abcdef"

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{loop: &sim.Loop{}}
	w.d = simd.NewD(func(id string) string { return id }, func(line string) { w.trace = append(w.trace, line) })
	var err error
	w.p, err = planning.New(planning.Config{D: w.d, Loop: w.loop, IDs: ids.NewSeeded(3), Owner: owner,
		Source: func(string) dadapter.Source { return dadapter.Source{Commit: "c1"} },
		Trace:  func(line string) { w.trace = append(w.trace, line) }})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func input(id, mode string) suggest.Input {
	return suggest.Input{RequestID: id, PlanKey: "r/t/p", Mode: mode, Revision: 1, NextRevision: 2, SnapshotID: "s1",
		Items: []store.PlanItem{{Item: 1, Title: "one"}}, Issue: "Crash on empty input", Deadline: sim.Epoch.Add(time.Hour)}
}

// TestRecoversBeforeTheFirstRequest: the first request of a process waits
// for D's recovery of the planning owner's leftovers, which removes a
// crashed process's planning storage; then it runs as a planning attempt
// of D under the planning owner, and its reply is the agent's cards. Its
// storage is gone before the coordinator hears of it.
func TestRecoversBeforeTheFirstRequest(t *testing.T) {
	w := newWorld(t)
	// A crashed process's planning left storage of this owner behind.
	left := "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa1"
	w.d.PrepareTaskFilesystems(context.Background(), dadapter.StorageOwner{RunnerOwner: owner, AttemptID: left,
		AllocationID: "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbb1"}, dadapter.Source{}, func(dadapter.ProcessGroup) {}, func(dadapter.TaskFilesystems, error) {})
	w.d.ProcessDied()
	id := "cccccccc-cccc-4ccc-8ccc-ccccccccccc1"
	var got *suggest.Outcome
	w.loop.Call(context.Background(), func() {
		h, err := w.p.Start(context.Background(), input(id, store.ModeSuggestion))
		if err != nil {
			t.Fatal(err)
		}
		h.OnSettled(func(o suggest.Outcome) { got = &o })
	})
	w.loop.Drain()
	if w.d.StoragePresent(left) {
		t.Fatalf("the crashed process's planning storage is still there\n%s", strings.Join(w.trace, "\n"))
	}
	dh := w.d.Handle(id)
	if dh == nil {
		t.Fatalf("no planning attempt started\n%s", strings.Join(w.trace, "\n"))
	}
	if in := dh.Input(); in.Phase != words.PhasePlanning || in.RunnerOwner != owner || !strings.Contains(in.Prompt, "Crash on empty input") {
		t.Fatalf("the attempt ran as phase %q, owner %q, prompt %q", in.Phase, in.RunnerOwner, in.Prompt)
	}
	dh.Settle(dadapter.Settlement{Output: []byte(`{"summary":"s","cards":[{"item":0,"title":"Add tests","instructions":"","kind":"add"}]}`)})
	w.loop.Drain()
	if got == nil || got.Err != nil || !strings.HasPrefix(string(got.Reply), "[") {
		t.Fatalf("outcome %+v; want the cards", got)
	}
	if w.d.StoragePresent(id) {
		t.Fatalf("the request's storage outlived its outcome")
	}
}

// TestCancelStopsTheAgent: a cancel reaches D's handle with its reason;
// the outcome comes only once D settled and the storage is gone.
func TestCancelStopsTheAgent(t *testing.T) {
	w := newWorld(t)
	id := "cccccccc-cccc-4ccc-8ccc-ccccccccccc2"
	var h suggest.Handle
	var got *suggest.Outcome
	w.loop.Call(context.Background(), func() {
		h, _ = w.p.Start(context.Background(), input(id, store.ModeDraft))
		h.OnSettled(func(o suggest.Outcome) { got = &o })
	})
	w.loop.Drain()
	w.loop.Call(context.Background(), func() { h.Cancel("shutdown") })
	if c := w.d.Handle(id).Cancels(); len(c) != 1 || c[0] != words.StopShutdown {
		t.Fatalf("D's cancels: %v; want shutdown", c)
	}
	if got != nil {
		t.Fatalf("settled before D did: %+v", got)
	}
	w.d.Handle(id).Settle(dadapter.Settlement{StopReason: words.StopShutdown, ExitCode: 137})
	w.loop.Drain()
	if got == nil || got.Err == nil {
		t.Fatalf("outcome %+v; want the stop as an error", got)
	}
}

func TestReply(t *testing.T) {
	for _, c := range []struct {
		mode, out, want, err string
	}{
		{store.ModeSuggestion, `{"cards":[{"item":1}]}`, `[{"item":1}]`, ""},
		{store.ModeDraft, `{"items":[{"title":"a"}],"summary":"x"}`, `{"items":[{"title":"a"}]}`, ""},
		{store.ModeSuggestion, `not json`, "", "not one JSON object"},
		{store.ModeSuggestion, `{"items":[]}`, "", `no "cards"`},
		{store.ModeDraft, `{"cards":[]}`, "", `no "items"`},
		// strictjson's open reading (issue 19): another key is the agent's
		// own, but a repeated or differently cased answer is not believed.
		{store.ModeSuggestion, `{"cards":[],"cards":[{"item":1}]}`, "", `duplicate key "cards"`},
		{store.ModeSuggestion, `{"Cards":[{"item":1}]}`, "", `no "cards"`},
	} {
		got, err := planning.Reply(c.mode, []byte(c.out))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: %v, want %q", c.mode, c.out, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s %s: %s, %v; want %s", c.mode, c.out, got, err, c.want)
		}
	}
}
