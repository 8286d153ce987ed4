package runner

import (
	"fmt"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/words"
)

// The runner's jobs run on the one attempt holder (package holder), as
// Ask's questions, planning's invocations and the suggestion
// coordinator's do. The holder decides the order (settled → inspection →
// export → terminal write → host files → storage → commit ref → slot);
// this file feeds it the job's events and carries out the effects it asks
// for, each of which reports back as the next event. What is the
// runner's own is how an effect is done: the preparation's three steps,
// the launch check, publication's guards, rule 2's decision.

// policyFor is the runner's policy for an attempt of kind: every attempt
// keeps host-side files (the attempt directory and its clone); a
// writable one has the agent's work audited and published, its partial
// output exported when it did not complete, and the commit ref of one
// that did not complete dropped.
func policyFor(kind string) holder.Policy {
	return holder.Policy{Writable: words.Writable(kind), HostFiles: true}
}

// step feeds j's holder one event and carries out what it asks for.
func (c *Coordinator) step(j *job, ev holder.Event) {
	next, effs, err := holder.Step(j.h, ev)
	if err != nil {
		c.traceAttempt(j.attemptID, "attempt %s: %v", j.attemptID, err)
		return
	}
	if j.h.Phase < holder.Settled && next.Phase >= holder.Settled {
		c.stopTimers(j) // settled, or ended without D: no deadline or budget applies any more
	}
	j.h = next
	c.do(j, effs)
}

// do carries out the holder's effects for j, in order.
func (c *Coordinator) do(j *job, effs []holder.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case holder.Prepare:
			c.prepareStorage(j)
		case holder.AbortPreparation:
			c.abortPreparation(j)
		case holder.Start:
			c.launch(j)
		case holder.SaveStart:
			c.markRunning(j)
		case holder.Cancel:
			j.handle.Cancel(e.Reason)
			c.traceAttempt(j.attemptID, "d cancel %s %s", j.attemptID, e.Reason)
		case holder.Audit:
			c.audit(j)
		case holder.Export:
			c.export(j)
		case holder.WriteTerminal:
			c.terminalWrite(j)
		case holder.RemoveHostFiles:
			c.removeHostFiles(j)
		case holder.RemoveStorage:
			c.release(j)
		case holder.ReleaseCommit:
			c.releaseCommit(j)
		case holder.FreeSlot:
			c.freeSlot(j)
		case holder.Mark:
			c.toMarker(j, e.Reason)
		default:
			panic(fmt.Sprintf("runner: the holder asked for %s, which the runner does not know", holder.EffectName(e)))
		}
	}
}
