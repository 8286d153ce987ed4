package simenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/suggest"
)

// Planner is the simulated planning provider (suggest.Provider): every
// Start records an invocation that the script settles by hand, with a
// reply or an error, so a scenario decides when a planning agent answers,
// as the simulated D does for attempts. It is the running process's: a
// crash drops it with the coordinator, and the next process gets a new
// one. It runs on the world's loop (the coordinator calls it from there);
// a settlement posts to the coordinator's loop, as a real handle's would.
type Planner struct {
	trace       func(string)
	invocations map[string]*PlanInvocation // by request ID
	// StartErr, when set, fails the next Start with it, once: the
	// provider could not start.
	StartErr string
}

// PlanInvocation is one started planning invocation.
type PlanInvocation struct {
	Input   suggest.Input
	Cancels []string // the reasons Cancel was called with, in order
	fns     []func(suggest.Outcome)
	outcome *suggest.Outcome
}

// Settled reports whether the invocation has settled.
func (i *PlanInvocation) Settled() bool { return i.outcome != nil }

// NewPlanner builds a provider that writes its decisions to trace.
func NewPlanner(trace func(string)) *Planner {
	return &Planner{trace: trace, invocations: map[string]*PlanInvocation{}}
}

// Start records the invocation. Its input is the coordinator's copy.
func (p *Planner) Start(_ context.Context, in suggest.Input) (suggest.Handle, error) {
	if err := p.StartErr; err != "" {
		p.StartErr = ""
		p.trace(fmt.Sprintf("planner: start %s refused: %s", in.RequestID, err))
		return nil, errors.New(err)
	}
	inv := &PlanInvocation{Input: in}
	p.invocations[in.RequestID] = inv
	p.trace(fmt.Sprintf("planner: start %s %s of revision %d (next %d), %d items", in.RequestID, in.Mode, in.Revision, in.NextRevision, len(in.Items)))
	return &planHandle{p: p, inv: inv}, nil
}

// Invocation returns the invocation of request id, if one started.
func (p *Planner) Invocation(id string) (*PlanInvocation, bool) {
	inv, ok := p.invocations[id]
	return inv, ok
}

// Settle ends request id's invocation with reply, or with err when err is
// not "": "promise settles after final termination".
func (p *Planner) Settle(id string, reply []byte, err string) error {
	inv, ok := p.invocations[id]
	if !ok {
		return fmt.Errorf("no planning invocation of %s started in this process", id)
	}
	if inv.outcome != nil {
		return fmt.Errorf("the planning invocation of %s has already settled", id)
	}
	o := suggest.Outcome{Reply: reply}
	if err != "" {
		o = suggest.Outcome{Err: errors.New(err)}
		p.trace(fmt.Sprintf("planner: settled %s with error %.80q", id, err))
	} else {
		p.trace(fmt.Sprintf("planner: settled %s with a reply of %d bytes", id, len(reply)))
	}
	inv.outcome = &o
	for _, fn := range inv.fns {
		fn(o)
	}
	inv.fns = nil
	return nil
}

type planHandle struct {
	p   *Planner
	inv *PlanInvocation
}

func (h *planHandle) OnSettled(fn func(suggest.Outcome)) {
	if h.inv.outcome != nil {
		fn(*h.inv.outcome)
		return
	}
	h.inv.fns = append(h.inv.fns, fn)
}

func (h *planHandle) Cancel(reason string) {
	h.inv.Cancels = append(h.inv.Cancels, reason)
	h.p.trace(fmt.Sprintf("planner: cancel %s %s", h.inv.Input.RequestID, reason))
}
