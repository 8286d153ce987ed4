package testscript

import (
	"context"
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/runner"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Several admissions delivered in one tick of the loop.

func init() {
	register(
		Command{Name: "admit-tick", Kind: Action, Words: true, Keys: admitKeys, Usage: "admit-tick 'TASK KIND as=NAME [item=N] [sv=N]' 'TASK KIND as=NAME …'...",
			Summary: "several callers (HTTP handlers in production) each call Admit while the loop is busy; their events queue in the given order and are then delivered one after another with nothing in between (the same tick); prints each one's outcome for stdout to match",
			Example: "admit-tick 'T1 review as=A' 'T2 review as=B'", Run: cmdAdmitTick},
	)
}

// tickResult is one admission of an admit-tick.
type tickResult struct {
	task, name, id string
	err            error
	done           chan struct{}
}

func cmdAdmitTick(ts *gts.TestScript, neg bool, a argSet) {
	if neg {
		ts.Fatalf("admit-tick does not take !: match each admission's outcome with stdout")
	}
	if len(a.pos) < 2 {
		ts.Fatalf("usage: admit-tick 'TASK KIND as=NAME' 'TASK KIND as=NAME'...")
	}
	s := get(ts)
	w := s.world(ts)
	results := make([]*tickResult, len(a.pos))
	w.Loop.Hold()
	seen := map[string]bool{}
	// Each quoted spec is parsed as admit's arguments, with its keys.
	specCmd := *command("admit-tick")
	specCmd.Words = false
	for i, spec := range a.pos {
		a := specCmd.parse(ts, false, strings.Fields(spec))
		if len(a.pos) != 2 {
			ts.Fatalf("admit-tick: %q is not 'TASK KIND as=NAME'", spec)
		}
		key := s.planKey(ts, a.pos[0])
		r := runner.AdmitRequest{PlanKey: key, Kind: a.pos[1], ExpectedStateVersion: s.stateVersion(ts, key, a)}
		if n, ok := a.num("item"); ok {
			r.Item = &n
		}
		name := a.str("as")
		if name != "" {
			if _, err := w.ID(name); err == nil || seen[name] {
				ts.Fatalf("admit-tick: name %s is already used", name)
			}
			seen[name] = true
		}
		res := &tickResult{task: a.pos[0], name: name, done: make(chan struct{})}
		results[i] = res
		// The name is given in the event right before this admission's, so
		// the attempt it admits (if any) carries it in the trace.
		w.Loop.Post(func() { w.NameNext(name) })
		queued := w.Loop.Queued()
		go func() {
			defer close(res.done)
			res.id, res.err = w.Runner.Admit(context.Background(), r)
		}()
		w.Loop.WaitQueued(queued + 1) // this caller's event is queued: the next one queues after it
	}
	// Nothing has run yet: every admission is queued. Deliver them.
	w.Loop.Release()
	for _, res := range results {
		<-res.done
		switch {
		case res.err != nil:
			fmt.Fprintf(ts.Stdout(), "%s: refused: %v\n", res.task, res.err)
		default:
			fmt.Fprintf(ts.Stdout(), "%s: admitted %s\n", res.task, w.Name(res.id))
		}
	}
	if last := results[len(results)-1]; last.err != nil {
		w.NameNext("") // nothing was admitted: the name stays free
	}
}
