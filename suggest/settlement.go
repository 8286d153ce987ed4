package suggest

import (
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Result is a request's outcome as its caller sees it: the invocation's
// terminal state in the contract's words (running → completed, failed,
// cancelled or stale), reconciled with the durable row.
type Result struct {
	RequestID string
	// State is words.Completed (the row is ready, or already consumed),
	// words.Failed, words.Cancelled or words.Stale (invalidated); "" when
	// the terminal write could not be saved (Reason says so).
	State words.State
	// Reason is the durable reason (for stale, the row's cause): the
	// actionable words a person reads.
	Reason string
	// Diagnostic is the original provider or Store diagnostic, bounded,
	// kept beside a classification that durable state reconciled: "Retain
	// the original provider/Store diagnostic alongside that
	// classification." "" when there is none.
	Diagnostic string
	// Request is the durable row as settlement left it; zero when it could
	// not be read.
	Request store.PlanRequest
}

// settlement is a request's terminal write's outcome: the result, or the
// storage error that left it unsaved.
type settlement struct {
	res Result
	err error
}

// settled is the provider's outcome, delivered as an event. The first stop
// reason decides the terminal state whatever the provider says ("First
// timeout/cancellation/shutdown reason wins over a later generic provider
// abort"; a reply that arrives after a stop was asked for is discarded, as
// F's first reason decides an attempt's terminal state); otherwise a
// provider error fails the request and a reply is published.
func (c *Coordinator) settled(inv *invocation, o Outcome) {
	if c.byID[inv.id] != inv || inv.handle == nil {
		c.trace("settled %s: after it was abandoned at shutdown; ignored", inv.id)
		return
	}
	switch {
	case inv.h.First != "":
		diag := "the agent replied after the stop was asked for; its reply was discarded"
		if o.Err != nil {
			diag = o.Err.Error()
		}
		inv.terminal = func() settlement { return c.settleStopped(inv, stopState(inv.h.First), inv.stopReason, diag) }
	case o.Err != nil:
		inv.terminal = func() settlement {
			return c.settleStopped(inv, store.RequestFailed, providerFailed+o.Err.Error(), o.Err.Error())
		}
	default:
		inv.terminal = func() settlement { return c.publish(inv, o.Reply) }
	}
	c.step(inv, holder.SettledEv{})
}

// stopState is the durable state a first stop reason ends a request in:
// the user's cancel is cancelled; a timeout and a shutdown are failures
// the user did not ask for, failed as a restart would fail them.
func stopState(r words.Reason) string {
	if r == words.ReasonCancelled {
		return store.RequestCancelled
	}
	return store.RequestFailed
}

// publish is "Before publication, compare the current plan revision and
// snapshot with the captured ones, validate every card via E2, then call
// Store.completeSuggestions, whose CAS also checks the request is still
// pending and bound to the current revision/snapshot", all in one
// transaction, so nothing can move between the checks and the CAS. A
// moved plan settles stale, an invalid reply failed. "If the provider
// rejects or publication CAS refuses after external cancellation or
// revision advance, read durable state and return cancelled/stale instead
// of a provider failure", keeping the refusal as the diagnostic.
func (c *Coordinator) publish(inv *invocation, reply []byte) settlement {
	var moved string
	var invalid error
	var row store.PlanRequest
	err := c.write(func(tx *store.Tx) error {
		p, err := tx.Plan(inv.planKey)
		if err != nil {
			return err
		}
		captured := store.Context{PlanRevision: inv.revision, SnapshotID: inv.snapshot}
		if moved = store.StaleCause(captured, store.Context{PlanRevision: p.Revision, SnapshotID: p.SnapshotID}); moved != "" {
			return nil
		}
		if inv.mode == store.ModeDraft {
			_, invalid = ValidateDraft(reply)
		} else {
			items, err := tx.PlanItems(inv.planKey, inv.revision)
			if err != nil {
				return err
			}
			_, invalid = ValidateCards(reply, len(items))
		}
		if invalid != nil {
			return nil
		}
		if err := tx.CompletePlanRequest(inv.id, inv.revision, inv.snapshot, reply); err != nil {
			return err
		}
		row, err = tx.PlanRequest(inv.id)
		return err
	})
	ref, refused := store.IsRefusal(err)
	switch {
	case err != nil && !refused:
		return settlement{err: err}
	case moved != "":
		return c.settleStopped(inv, store.RequestInvalidated, moved, "the plan moved before publication: "+moved)
	case invalid != nil:
		return c.settleStopped(inv, store.RequestFailed, invalidReply+invalid.Error(), invalid.Error())
	case refused:
		// Another process cancelled or invalidated it, or completed it
		// first: the durable row decides.
		if err := c.cfg.Store.View(func(tx *store.Tx) (err error) { row, err = tx.PlanRequest(inv.id); return err }); err != nil {
			return settlement{err: err}
		}
		if row.State == store.RequestPending {
			return c.settleStopped(inv, store.RequestFailed, replyNotSaved+ref.Message, ref.Message)
		}
		return settlement{res: classify(row, ref.Message)}
	}
	return settlement{res: classify(row, "")}
}

// settleStopped is the cleanup write (settleSuggestion): only the exact
// pending request at its captured revision and snapshot becomes state,
// with reason; any other row is returned as it is and decides the
// classification ("If another process completed the request first,
// cleanup loses without changing the ready result").
func (c *Coordinator) settleStopped(inv *invocation, state, reason, diagnostic string) settlement {
	var row store.PlanRequest
	if err := c.write(func(tx *store.Tx) (err error) {
		row, err = tx.SettlePlanRequest(inv.id, inv.revision, inv.snapshot, state, reason)
		return err
	}); err != nil {
		return settlement{err: err}
	}
	return settlement{res: classify(row, diagnostic)}
}

// classify reads a request's outcome off its durable row.
func classify(row store.PlanRequest, diagnostic string) Result {
	r := Result{RequestID: row.ID, Reason: row.Reason, Diagnostic: bound(diagnostic), Request: row}
	switch row.State {
	case store.RequestReady, store.RequestConsumed:
		r.State = words.Completed
	case store.RequestFailed:
		r.State = words.Failed
	case store.RequestCancelled:
		r.State = words.Cancelled
	case store.RequestInvalidated:
		r.State, r.Reason = words.Stale, row.Cause
	}
	return r
}

// finish is the holder's terminal write's outcome: the caller hears it,
// then the holder goes on. The slot and the handle go only after the
// terminal write succeeded (release). A write that failed leaves an
// unresolved marker in the plan's slot (hold), which refuses every later
// start for the plan until a restart's FailLeftovers reconciles the row:
// ownership is kept when the outcome is unclear.
func (c *Coordinator) finish(inv *invocation, s settlement) {
	if s.err != nil {
		c.trace("settled %s: %s: %s", inv.id, resultNotSaved, short(s.err.Error()))
		c.deliver(inv, Result{RequestID: inv.id, Reason: resultNotSaved, Diagnostic: bound(s.err.Error())})
		c.step(inv, holder.Wrote{Err: s.err})
		return
	}
	line := fmt.Sprintf("settled %s: %s (%s)", inv.id, s.res.State, short(s.res.Reason))
	if d := s.res.Diagnostic; d != "" && !strings.Contains(s.res.Reason, d) {
		line += "; diagnostic: " + short(d)
	}
	c.trace("%s", line)
	// The caller hears its outcome before release can close Close's
	// channel, as on the unsaved path above: shutdown goes on from that
	// channel to close the Store.
	c.deliver(inv, s.res)
	c.step(inv, holder.Wrote{})
}

// hold is the holder's marker: the handle goes, and the plan's slot stays
// held until restart.
func (c *Coordinator) hold(inv *invocation) {
	c.forget(inv)
	c.maybeDrained()
}

func (c *Coordinator) deliver(inv *invocation, r Result) {
	if inv.onSettled != nil {
		inv.onSettled(r)
	}
}

// bound holds a diagnostic to the Store's bound (store.MaxDiagnostic),
// keeping UTF-8 whole: "Durable reasons use the Store's bounded format even
// when a provider returns an oversized diagnostic", and so does what the
// caller is told.
func bound(s string) string {
	if len(s) <= store.MaxDiagnostic {
		return s
	}
	n := store.MaxDiagnostic - len("…")
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// short cuts a reason for a trace line, which names it; the row and the
// Result keep it whole (bounded).
func short(s string) string {
	const max = 160
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
