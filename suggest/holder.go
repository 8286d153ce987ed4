package suggest

import (
	"fmt"

	"github.com/codeboost/codeboost/holder"
)

// policy is the suggestion coordinator's: a read-only invocation whose
// provider owns its storage (the planning provider removes it before it
// settles: "promise settles after final termination"), so the holder's
// storage removal is already done when the terminal write is; and one the
// shutdown grace may abandon ("one that has not settled within 20 seconds
// … is ended by abandoning planning's worker").
//
// The E3 order that differs from an attempt's stays the lane's, as the
// contract keeps it ("Leave E3 unchanged"; decision 2): "E3 suggestions
// (requests table) write cancelled to disk when the stop is requested,
// before the provider settles". That write is the user's cancel action
// (cancelIn), not the holder's terminal write; the holder's, at the
// provider's settlement, is the cleanup that then loses to it ("If another
// process completed the request first, cleanup loses without changing the
// ready result"), and the slot is still freed only after both.
var policy = holder.Policy{Abandonable: true}

// step feeds the invocation's holder one event and carries out what it
// asks for.
func (c *Coordinator) step(inv *invocation, ev holder.Event) {
	next, effs, err := holder.Step(inv.h, ev)
	if err != nil {
		c.trace("%s: %v", inv.id, err)
		return
	}
	inv.h = next
	c.do(inv, effs)
}

// do carries out the holder's effects, in order.
func (c *Coordinator) do(inv *invocation, effs []holder.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case holder.Prepare:
			c.step(inv, holder.Prepared{}) // nothing to prepare: the provider prepares its own
		case holder.Start:
			c.startProvider(inv)
		case holder.SaveStart:
			c.step(inv, holder.StartSaved{}) // the request is pending from admission: nothing to save
		case holder.Cancel:
			inv.handle.Cancel(string(e.Reason))
		case holder.WriteTerminal:
			c.finish(inv, inv.terminal())
		case holder.RemoveStorage:
			c.step(inv, holder.StorageRemoved{}) // the provider removed it before it settled
		case holder.FreeSlot:
			c.release(inv)
		case holder.Mark:
			c.hold(inv)
		default:
			panic(fmt.Sprintf("suggest: the holder asked for %s, which the suggestion coordinator's policy never needs", holder.EffectName(e)))
		}
	}
}
