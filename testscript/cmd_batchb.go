package testscript

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/runner"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func init() {
	register(
		Command{Name: "admit-tick", Usage: "admit-tick 'TASK KIND as=NAME [item=N] [sv=N]' 'TASK KIND as=NAME …'...",
			Summary: "posts several admissions to the coordinator's loop and only then delivers them, one after another with nothing in between (the same tick); prints each one's outcome for stdout to match",
			Example: "admit-tick 'T1 review as=A' 'T2 review as=B'", Run: cmdAdmitTick},
	)
}

// tickResult is one admission of an admit-tick.
type tickResult struct {
	task, name, id string
	err            error
	done           bool
}

func cmdAdmitTick(ts *gts.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("admit-tick does not take !: match each admission's outcome with stdout")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: admit-tick 'TASK KIND as=NAME' 'TASK KIND as=NAME'...")
	}
	s := get(ts)
	w := s.world(ts)
	results := make([]*tickResult, len(args))
	seen := map[string]bool{}
	for i, spec := range args {
		a := parse(strings.Fields(spec))
		if len(a.pos) != 2 {
			ts.Fatalf("admit-tick: %q is not 'TASK KIND as=NAME'", spec)
		}
		key := s.planKey(ts, a.pos[0])
		r := runner.AdmitRequest{PlanKey: key, Kind: a.pos[1], ExpectedStateVersion: s.stateVersion(ts, key, a)}
		if v, ok := a.kv["item"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				ts.Fatalf("item=%s: %v", v, err)
			}
			r.Item = &n
		}
		name := a.kv["as"]
		if name != "" {
			if _, err := w.ID(name); err == nil || seen[name] {
				ts.Fatalf("admit-tick: name %s is already used", name)
			}
			seen[name] = true
		}
		res := &tickResult{task: a.pos[0], name: name}
		results[i] = res
		// The name is given in the event right before this admission's, so
		// the attempt it admits (if any) carries it in the trace.
		w.Loop.Post(func() { w.NameNext(name) })
		w.Runner.AdmitAsync(r, func(id string, err error) {
			res.id, res.err, res.done = id, err, true
			if err != nil {
				w.NameNext("") // nothing was admitted: the name stays free
			}
		})
	}
	// Nothing has run yet: every admission is queued. Deliver them.
	w.Loop.Drain()
	for _, res := range results {
		switch {
		case !res.done:
			s.fatal(ts, "admit-tick: the admission for %s was never delivered", res.task)
		case res.err != nil:
			fmt.Fprintf(ts.Stdout(), "%s: refused: %v\n", res.task, res.err)
		default:
			fmt.Fprintf(ts.Stdout(), "%s: admitted %s\n", res.task, w.Name(res.id))
		}
	}
}
