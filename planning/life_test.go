package planning_test

// A planning handle's life as an attempt holder (suggest.Handle): the
// owner's recovery before the first start, the storage, D's agent, the
// first stop reason, the storage's removal, and one settlement after
// everything it started has stopped ("Cancellation: first reason retained
// … its result stays pending until provider termination"; "promise
// settles after final termination").

import (
	"context"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/planning"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// lateStorageD reports an allocation only when the test says so, whatever
// its abort: a helper that finished just as the stop came.
type lateStorageD struct {
	*simd.D
	deliver func()
}

func (d *lateStorageD) PrepareTaskFilesystems(_ context.Context, owner dadapter.StorageOwner, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.TaskFilesystems, error)) {
	d.D.PrepareTaskFilesystems(context.Background(), owner, src, onGroup, func(fs dadapter.TaskFilesystems, err error) {
		d.deliver = func() { done(fs, err) }
	})
}

// over rebuilds the world's provider over d (the world's simulated D,
// wrapped).
func (w *world) over(t *testing.T, d dadapter.D) {
	t.Helper()
	var err error
	w.p, err = planning.New(planning.Config{D: d, Loop: w.loop, IDs: ids.NewSeeded(3), Owner: owner,
		Source: func(string) dadapter.Source { return dadapter.Source{Commit: "c1"} },
		Trace:  func(line string) { w.trace = append(w.trace, line) }})
	if err != nil {
		t.Fatal(err)
	}
}

// request is one planning request through the provider.
type request struct {
	w   *world
	id  string
	h   suggest.Handle
	out *suggest.Outcome
	n   int // how many times its outcome was given
}

func (w *world) start(t *testing.T, id, mode string) *request {
	t.Helper()
	r := &request{w: w, id: id}
	w.loop.Call(context.Background(), func() {
		h, err := w.p.Start(context.Background(), input(id, mode))
		if err != nil {
			t.Fatal(err)
		}
		r.h = h
		h.OnSettled(func(o suggest.Outcome) { r.out = &o; r.n++ })
	})
	w.loop.Drain()
	return r
}

func (r *request) cancel(reason string) {
	r.w.loop.Call(context.Background(), func() { r.h.Cancel(reason) })
}

func (r *request) settle(t *testing.T, s dadapter.Settlement) {
	t.Helper()
	h := r.w.d.Handle(r.id)
	if h == nil {
		t.Fatalf("request %s has no agent\n%s", r.id, strings.Join(r.w.trace, "\n"))
	}
	if err := h.Settle(s); err != nil {
		t.Fatal(err)
	}
	r.w.loop.Drain()
}

func (w *world) policy(t *testing.T, op, mode, msg string) {
	t.Helper()
	if err := w.d.SetPolicy(op, simd.Policy{Mode: mode, Msg: msg}); err != nil {
		t.Fatal(err)
	}
}

func (w *world) finish(t *testing.T, op, id string) {
	t.Helper()
	if err := w.d.Finish(op, id, nil); err != nil {
		t.Fatal(err)
	}
	w.loop.Drain()
}

// wantOutcome requires one outcome: the reply, or an error saying want.
func (r *request) wantOutcome(t *testing.T, reply, want string) {
	t.Helper()
	if r.out == nil || r.n != 1 {
		t.Fatalf("request %s: outcome %+v given %d times; want once\n%s", r.id, r.out, r.n, strings.Join(r.w.trace, "\n"))
	}
	if want == "" {
		if r.out.Err != nil || string(r.out.Reply) != reply {
			t.Fatalf("request %s: %s, %v; want reply %s", r.id, r.out.Reply, r.out.Err, reply)
		}
	} else if r.out.Err == nil || !strings.Contains(r.out.Err.Error(), want) {
		t.Fatalf("request %s: %+v; want an error saying %q", r.id, r.out, want)
	}
	if r.w.d.StoragePresent(r.id) {
		t.Fatalf("request %s settled with its storage still there", r.id)
	}
}

// TestPlanningHandleLife walks one request through every outcome its
// storage, its agent and D can give it, and checks the one outcome: the
// agent's reply, or an error saying why, given only after the storage is
// removed (or its removal failed, which the next process's first request
// recovers).
func TestPlanningHandleLife(t *testing.T) {
	const id = "cccccccc-cccc-4ccc-8ccc-ccccccccccd1"
	cards := `{"cards":[{"item":0,"title":"Add tests","instructions":"","kind":"add"}]}`
	cases := []struct {
		name, mode  string
		arm         func(w *world)
		run         func(t *testing.T, r *request)
		reply, want string
	}{
		{name: "cards", mode: store.ModeSuggestion, reply: `[{"item":0,"title":"Add tests","instructions":"","kind":"add"}]`,
			run: func(t *testing.T, r *request) { r.settle(t, dadapter.Settlement{Output: []byte(cards)}) }},
		{name: "a draft", mode: store.ModeDraft, reply: `{"items":[{"title":"a"}]}`,
			run: func(t *testing.T, r *request) {
				r.settle(t, dadapter.Settlement{Output: []byte(`{"items":[{"title":"a"}]}`)})
			}},
		{name: "an answer with no cards", mode: store.ModeSuggestion, want: `no "cards"`,
			run: func(t *testing.T, r *request) { r.settle(t, dadapter.Settlement{Output: []byte(`{"summary":"x"}`)}) }},
		{name: "the agent exits non-zero", mode: store.ModeSuggestion, want: "the planning agent failed (exit 3): oops",
			run: func(t *testing.T, r *request) {
				r.settle(t, dadapter.Settlement{ExitCode: 3, Diagnostic: "oops", Output: []byte(cards)})
			}},
		{name: "D stops the agent", mode: store.ModeSuggestion, want: "the planning agent was stopped (timeout)",
			run: func(t *testing.T, r *request) {
				r.settle(t, dadapter.Settlement{StopReason: words.StopTimeout, Output: []byte(cards)})
			}},
		{name: "task storage fails", mode: store.ModeSuggestion, want: "task storage: disk full",
			arm: func(w *world) { w.policy(t, simd.OpStorage, "fail", "disk full") },
			run: func(*testing.T, *request) {}},
		{name: "the agent cannot start", mode: store.ModeSuggestion, want: "the planning agent could not start: no engine",
			arm: func(w *world) { w.policy(t, simd.OpStart, "fail", "no engine") },
			run: func(*testing.T, *request) {}},
		{name: "its storage cannot be removed", mode: store.ModeSuggestion, reply: `[{"item":0,"title":"Add tests","instructions":"","kind":"add"}]`,
			arm: func(w *world) { w.policy(t, simd.OpRemove, "fail", "volume busy") },
			run: func(t *testing.T, r *request) {
				r.settle(t, dadapter.Settlement{Output: []byte(cards)})
				r.w.d.RemoveStorageByHand(r.id)
			}},
		{name: "its storage's removal is held", mode: store.ModeSuggestion, reply: `[{"item":0,"title":"Add tests","instructions":"","kind":"add"}]`,
			arm: func(w *world) { w.policy(t, simd.OpRemove, "hold", "") },
			run: func(t *testing.T, r *request) {
				r.settle(t, dadapter.Settlement{Output: []byte(cards)})
				if r.out != nil {
					t.Fatalf("settled before its storage was removed: %+v", r.out)
				}
				r.w.finish(t, simd.OpRemove, r.id)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if c.arm != nil {
				c.arm(w)
			}
			r := w.start(t, id, c.mode)
			c.run(t, r)
			r.wantOutcome(t, c.reply, c.want)
		})
	}
}

// TestPlanningStopBeforeTheAgent: a stop that comes before the agent
// starts keeps the agent from starting: while recovery runs (the request
// never allocates), while its storage is allocated (aborted), or when the
// allocation completes just as the stop came (the storage is removed).
// Each settles once with an error naming the stop.
func TestPlanningStopBeforeTheAgent(t *testing.T) {
	const id = "cccccccc-cccc-4ccc-8ccc-ccccccccccd2"
	t.Run("during recovery", func(t *testing.T) {
		w := newWorld(t)
		w.policy(t, simd.OpRecover, "hold", "")
		r := w.start(t, id, store.ModeSuggestion)
		r.cancel("timeout")
		w.finish(t, simd.OpRecover, "")
		if w.d.Handle(id) != nil || len(w.d.Held()) > 0 || w.d.StoragePresent(id) || strings.Contains(strings.Join(w.trace, "\n"), "storage "+id+" requested") {
			t.Fatalf("a request stopped during recovery allocated or started\n%s", strings.Join(w.trace, "\n"))
		}
		r.wantOutcome(t, "", "stopped (timeout) before it started")
	})
	t.Run("during its allocation", func(t *testing.T) {
		w := newWorld(t)
		w.policy(t, simd.OpStorage, "hold", "")
		r := w.start(t, id, store.ModeSuggestion)
		r.cancel("shutdown")
		if aborted, err := w.d.Aborted(simd.OpStorage, id); err != nil || !aborted {
			t.Fatalf("the allocation: aborted %v, %v; want aborted", aborted, err)
		}
		w.finish(t, simd.OpStorage, id)
		if w.d.Handle(id) != nil {
			t.Fatal("an agent started after the stop")
		}
		r.wantOutcome(t, "", "task storage")
	})
	t.Run("the allocation completes as the stop comes", func(t *testing.T) {
		w := newWorld(t)
		late := &lateStorageD{D: w.d}
		w.over(t, late)
		r := w.start(t, id, store.ModeSuggestion)
		r.cancel("cancelled")
		late.deliver()
		w.loop.Drain()
		if w.d.Handle(id) != nil {
			t.Fatal("an agent started after the stop")
		}
		r.wantOutcome(t, "", "stopped (cancelled) before it started")
	})
}

// TestPlanningCancelKeepsTheFirstReason: a stop reaches D's handle with
// the first reason, mapped to D's words (timeout, shutdown, cancelled for
// any other); a later stop, or one after the request settled, asks D for
// nothing more.
func TestPlanningCancelKeepsTheFirstReason(t *testing.T) {
	for i, c := range []struct {
		reason string
		want   words.StopReason
	}{
		{"timeout", words.StopTimeout},
		{"shutdown", words.StopShutdown},
		{"cancelled", words.StopCancelled},
		{"stale", words.StopCancelled},
	} {
		t.Run(c.reason, func(t *testing.T) {
			w := newWorld(t)
			id := "cccccccc-cccc-4ccc-8ccc-ccccccccce0" + string(rune('0'+i))
			r := w.start(t, id, store.ModeSuggestion)
			r.cancel(c.reason)
			r.cancel("shutdown")
			r.cancel("timeout")
			if got := w.d.Handle(id).Cancels(); len(got) != 1 || got[0] != c.want {
				t.Fatalf("D's cancels: %v; want only %s", got, c.want)
			}
			if r.out != nil {
				t.Fatalf("settled before D did: %+v", r.out)
			}
			r.settle(t, dadapter.Settlement{StopReason: c.want, ExitCode: 137})
			r.wantOutcome(t, "", "the planning agent was stopped")
		})
	}
	t.Run("after settlement", func(t *testing.T) {
		w := newWorld(t)
		id := "cccccccc-cccc-4ccc-8ccc-ccccccccce09"
		r := w.start(t, id, store.ModeSuggestion)
		r.settle(t, dadapter.Settlement{Output: []byte(`{"cards":[{"item":1}]}`)})
		r.cancel("timeout")
		if got := w.d.Handle(id).Cancels(); len(got) != 0 {
			t.Fatalf("D's cancels after the request settled: %v; want none", got)
		}
		r.wantOutcome(t, `[{"item":1}]`, "")
	})
}

// TestPlanningRecoveryOncePerProcess: the first start recovers the
// owner's leftovers once, however many starts wait for it; later starts
// go straight to their storage. A recovery that fails fails the waiting
// requests, and the next start tries again; a leftover whose removal
// fails fails them too.
func TestPlanningRecoveryOncePerProcess(t *testing.T) {
	a, b, c := "cccccccc-cccc-4ccc-8ccc-ccccccccccf1", "cccccccc-cccc-4ccc-8ccc-ccccccccccf2", "cccccccc-cccc-4ccc-8ccc-ccccccccccf3"
	t.Run("recovered", func(t *testing.T) {
		w := newWorld(t)
		w.policy(t, simd.OpRecover, "hold", "")
		w.start(t, a, store.ModeSuggestion)
		w.start(t, b, store.ModeSuggestion)
		if held := w.d.Held(); len(held) != 1 {
			t.Fatalf("held D ops %v; want one recovery for both starts", held)
		}
		w.finish(t, simd.OpRecover, "")
		if w.d.Handle(a) == nil || w.d.Handle(b) == nil {
			t.Fatalf("the waiting starts did not go on after recovery\n%s", strings.Join(w.trace, "\n"))
		}
		w.start(t, c, store.ModeSuggestion)
		if w.d.Handle(c) == nil || len(w.d.Held()) != 0 {
			t.Fatalf("a start after recovery recovered again or did not start; held %v", w.d.Held())
		}
	})
	t.Run("recovery fails, then succeeds", func(t *testing.T) {
		w := newWorld(t)
		w.policy(t, simd.OpRecover, "fail", "engine gone")
		ra := w.start(t, a, store.ModeSuggestion)
		ra.wantOutcome(t, "", "planning's leftovers could not be recovered: engine gone")
		w.policy(t, simd.OpRecover, "auto", "")
		w.start(t, b, store.ModeSuggestion)
		if w.d.Handle(b) == nil {
			t.Fatalf("the next start after a failed recovery did not start\n%s", strings.Join(w.trace, "\n"))
		}
	})
	t.Run("a leftover cannot be removed", func(t *testing.T) {
		w := newWorld(t)
		w.d.AddStorage(dadapter.StorageOwner{RunnerOwner: owner, AttemptID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa7",
			AllocationID: "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbb7"})
		w.policy(t, simd.OpRemove, "fail", "volume busy")
		ra := w.start(t, a, store.ModeSuggestion)
		if w.d.Handle(a) != nil {
			t.Fatal("a request started over leftovers nobody removed")
		}
		ra.wantOutcome(t, "", "planning's leftover storage bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbb7 could not be removed: volume busy")
	})
}

// TestPlanningStartRefusesABadRequestID: a request ID that is not a
// lowercase UUID is refused at once; no handle, nothing asked of D.
func TestPlanningStartRefusesABadRequestID(t *testing.T) {
	w := newWorld(t)
	var err error
	var h suggest.Handle
	w.loop.Call(context.Background(), func() { h, err = w.p.Start(context.Background(), input("../etc", store.ModeSuggestion)) })
	if err == nil || h != nil {
		t.Fatalf("Start with a bad request ID: %v, %v; want refused", h, err)
	}
	w.loop.Drain()
	if len(w.d.Held()) != 0 || len(w.trace) != 0 {
		t.Fatalf("D was asked for something: %v", w.trace)
	}
}

// TestPlanningNewChecksItsConfiguration: New refuses a configuration
// without its D, Loop, IDs or Source, or with an owner token that is not
// 32 lowercase hex.
func TestPlanningNewChecksItsConfiguration(t *testing.T) {
	w := newWorld(t)
	good := planning.Config{D: w.d, Loop: w.loop, IDs: ids.NewSeeded(1), Owner: owner,
		Source: func(string) dadapter.Source { return dadapter.Source{} }}
	if _, err := planning.New(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	for name, edit := range map[string]func(*planning.Config){
		"no D":          func(c *planning.Config) { c.D = nil },
		"no Loop":       func(c *planning.Config) { c.Loop = nil },
		"no IDs":        func(c *planning.Config) { c.IDs = nil },
		"no Source":     func(c *planning.Config) { c.Source = nil },
		"no owner":      func(c *planning.Config) { c.Owner = "" },
		"a short owner": func(c *planning.Config) { c.Owner = owner[:31] },
	} {
		cfg := good
		edit(&cfg)
		if _, err := planning.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestPlanningPrompt: the prompt names the issue only when there is one,
// and asks a draft for the whole next revision, a suggestion for cards.
func TestPlanningPrompt(t *testing.T) {
	in := input("cccccccc-cccc-4ccc-8ccc-ccccccccccf9", store.ModeSuggestion)
	in.Issue = ""
	if p := planning.Prompt(in); strings.Contains(p, "The issue:") || !strings.Contains(p, `{"cards"`) {
		t.Fatalf("prompt without an issue:\n%s", p)
	}
	in.Mode = store.ModeDraft
	if p := planning.Prompt(in); !strings.Contains(p, "Write revision 2 whole") || strings.Contains(p, `{"cards"`) {
		t.Fatalf("a draft's prompt:\n%s", p)
	}
}
