// Package planning is live planning's provider (suggest.Provider): each
// planning request runs as a read-only planning attempt of D, in task
// storage labelled with this database's planning owner, never the
// runner's or Ask's ("A live planning provider runs only through D (#117),
// in planning's own worker, in containers labelled with this database's
// planning owner"). Those containers are "removed by D's recoverLeftovers
// for that owner before the first planning request of the next process,
// not at startup": the provider recovers its owner's leftovers before the
// first start it is given, and holds that start until recovery ends.
//
// Every callback of D is posted to the loop the provider is given (the
// runner's), where the suggestion coordinator calls it, so the provider's
// state belongs to that loop alone.
package planning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/words"
)

// Config is the provider's parts.
type Config struct {
	D    dadapter.D
	Loop runner.Loop
	IDs  ids.Source // allocation IDs
	// Owner is the planning owner token (store.Tx.PlanningOwnerToken).
	Owner   string
	Profile dadapter.AgentProfile
	// Source is what a request's task storage is made from: the task's
	// repository and its recorded head.
	Source func(planKey string) dadapter.Source
	Trace  func(line string)
}

// Provider is live planning through D.
type Provider struct {
	cfg Config

	// owned by the loop
	recovered bool      // the owner's leftovers are gone
	waiting   []*handle // starts held until recovery ends
	recover   bool      // a recovery is running
}

// New checks the configuration.
func New(cfg Config) (*Provider, error) {
	if cfg.D == nil || cfg.Loop == nil || cfg.IDs == nil || cfg.Source == nil {
		return nil, errors.New("planning: D, Loop, IDs and Source are required")
	}
	if !ids.ValidToken(cfg.Owner) {
		return nil, fmt.Errorf("planning: owner token %q is not 32 lowercase hex", cfg.Owner)
	}
	return &Provider{cfg: cfg}, nil
}

func (p *Provider) trace(format string, args ...any) {
	if p.cfg.Trace != nil {
		p.cfg.Trace("planning: " + fmt.Sprintf(format, args...))
	}
}

func (p *Provider) post(fn func()) { p.cfg.Loop.Post(fn) }

// Start launches one planning attempt for in. It returns at once; the
// first start of a process waits (inside its handle) for the owner's
// recovery.
func (p *Provider) Start(_ context.Context, in suggest.Input) (suggest.Handle, error) {
	if err := ids.CheckUUID("planning request ID", in.RequestID); err != nil {
		return nil, err
	}
	h := newHandle(p, in)
	if p.recovered {
		h.prepare()
		return h, nil
	}
	p.waiting = append(p.waiting, h)
	if !p.recover {
		p.recover = true
		p.trace("recovering the planning owner's leftovers before the first request")
		p.cfg.D.RecoverLeftovers(context.Background(), p.cfg.Owner, func(rep dadapter.RecoveryReport, err error) {
			p.post(func() { p.recovered1(rep, err) })
		})
	}
	return h, nil
}

// recovered1 removes every leftover storage of the owner (a crashed
// process's planning never reports back, so none of it is owed anything),
// then lets the held starts go; a failure fails them, and the next start
// tries again.
func (p *Provider) recovered1(rep dadapter.RecoveryReport, err error) {
	if err != nil {
		p.recoveryEnded(fmt.Errorf("planning's leftovers could not be recovered: %w", err))
		return
	}
	p.removeLeftovers(rep.Storage)
}

func (p *Provider) removeLeftovers(left []dadapter.RecoveredStorage) {
	if len(left) == 0 {
		p.recoveryEnded(nil)
		return
	}
	st, rest := left[0], left[1:]
	p.cfg.D.RemoveTaskFilesystems(st, func(err error) {
		p.post(func() {
			if err != nil {
				p.recoveryEnded(fmt.Errorf("planning's leftover storage %s could not be removed: %w", st.Owner().AllocationID, err))
				return
			}
			p.trace("leftover storage of request %s removed", st.Owner().AttemptID)
			p.removeLeftovers(rest)
		})
	})
}

func (p *Provider) recoveryEnded(err error) {
	p.recover = false
	waiting := p.waiting
	p.waiting = nil
	if err != nil {
		p.trace("%v", err)
		for _, h := range waiting {
			h.prepareFailed(err)
		}
		return
	}
	p.recovered = true
	for _, h := range waiting {
		h.prepare()
	}
}

// handle is one planning attempt, held by the one attempt holder
// (package holder) with planning's policy: its storage, then D's handle.
// It settles once, after everything it started has stopped and its
// storage is removed ("promise settles after final termination").
type handle struct {
	p      *Provider
	in     suggest.Input
	alloc  string
	h      holder.Holder
	cancel context.CancelFunc // the storage allocation in flight; nil once it returned
	fs     dadapter.TaskFilesystems
	dh     dadapter.Handle
	fn     func(suggest.Outcome)
	out    *suggest.Outcome // the settled outcome, once settled
	result suggest.Outcome  // the outcome as last decided
}

// policy is planning's: a read-only attempt with no host files. It writes
// no row of its own (the suggestion coordinator writes the request's, once
// this promise settles), so its terminal write is the outcome decided; the
// slot it frees is its promise: the suggestion coordinator's plan slot is
// freed after that. A storage removal that fails leaves the handle held
// (no later event can end it), and its promise settles all the same: the
// storage is the next process's first request's to recover ("removed by
// D's recoverLeftovers for that owner before the first planning request of
// the next process"), and the plan's slot is the suggestion coordinator's
// to free by its own terminal write.
var policy = holder.Policy{}

func newHandle(p *Provider, in suggest.Input) *handle {
	h := &handle{p: p, in: in, alloc: p.cfg.IDs.UUID()}
	h.h, _ = holder.New(policy) // its Prepare is the provider's: now, or once recovery ended
	return h
}

// step feeds the holder one event and carries out what it asks for.
func (h *handle) step(ev holder.Event) {
	next, effs, err := holder.Step(h.h, ev)
	if err != nil {
		h.p.trace("request %s: %v", h.in.RequestID, err)
		return
	}
	h.h = next
	for _, e := range effs {
		switch e := e.(type) {
		case holder.AbortPreparation:
			if h.cancel != nil {
				h.cancel()
			}
		case holder.Start:
			h.start()
		case holder.SaveStart:
			h.step(holder.StartSaved{}) // no row of planning's own to mark running
		case holder.Cancel:
			h.dh.Cancel(e.Reason)
		case holder.WriteTerminal:
			h.step(holder.Wrote{}) // the suggestion coordinator writes the row
		case holder.RemoveStorage:
			h.removeStorage()
		case holder.FreeSlot:
			h.settle(h.result)
		case holder.Mark:
			h.settle(h.result)
		default:
			panic(fmt.Sprintf("planning: the holder asked for %s, which planning's policy never needs", holder.EffectName(e)))
		}
	}
}

func (h *handle) OnSettled(fn func(suggest.Outcome)) {
	if h.out != nil {
		fn(*h.out)
		return
	}
	h.fn = fn
}

// Cancel asks the attempt to stop; the first reason stays (the holder
// keeps it), and one asked after the end changes nothing.
func (h *handle) Cancel(reason string) {
	if h.h.Phase.Final() {
		return
	}
	h.step(holder.Stop{Reason: firstReason(reason)})
}

// firstReason is the first reason of the suggestion coordinator's stop
// word (timeout, shutdown, else cancelled), which the holder turns back
// into D's stop reason of the same word.
func firstReason(reason string) words.Reason {
	switch reason {
	case "timeout":
		return words.ReasonTimeLimit
	case "shutdown":
		return words.ReasonShutdown
	}
	return words.ReasonCancelled
}

// stopped is the outcome of a request stopped before its agent started.
func (h *handle) stopped() suggest.Outcome {
	return suggest.Outcome{Err: fmt.Errorf("stopped (%s) before it started", holder.StopReasonFor(h.h.First))}
}

// prepare is the holder's preparation, run by the provider once the
// owner's leftovers are gone.
func (h *handle) prepare() {
	if h.h.First != "" {
		h.result = h.stopped()
		h.step(holder.Prepared{Err: h.result.Err})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	owner := dadapter.StorageOwner{RunnerOwner: h.p.cfg.Owner, AttemptID: h.in.RequestID, AllocationID: h.alloc}
	h.p.trace("request %s: storage", h.in.RequestID)
	h.p.cfg.D.PrepareTaskFilesystems(ctx, owner, h.p.cfg.Source(h.in.PlanKey), func(dadapter.ProcessGroup) {},
		func(fs dadapter.TaskFilesystems, err error) { h.p.post(func() { h.prepared(fs, err) }) })
}

// prepareFailed ends a request whose preparation could not run (the
// owner's recovery failed).
func (h *handle) prepareFailed(err error) {
	h.result = suggest.Outcome{Err: err}
	h.step(holder.Prepared{Err: err})
}

func (h *handle) prepared(fs dadapter.TaskFilesystems, err error) {
	h.cancel, h.fs = nil, fs
	switch {
	case err != nil:
		h.result = suggest.Outcome{Err: fmt.Errorf("task storage: %w", err)}
	case h.h.First != "":
		h.result = h.stopped()
	}
	h.step(holder.Prepared{Err: err})
}

func (h *handle) start() {
	dh, err := h.p.cfg.D.Start(dadapter.InvocationInput{RunnerOwner: h.p.cfg.Owner, AttemptID: h.in.RequestID,
		Phase: words.PhasePlanning, Deadline: h.in.Deadline, Storage: h.fs, Prompt: Prompt(h.in), Profile: h.p.cfg.Profile})
	if err != nil {
		h.result = suggest.Outcome{Err: fmt.Errorf("the planning agent could not start: %w", err)}
		h.step(holder.Started{Err: err})
		return
	}
	h.dh = dh
	h.p.trace("request %s: the planning agent started", h.in.RequestID)
	h.step(holder.Started{})
	dh.OnSettled(func(s dadapter.Settlement) { h.p.post(func() { h.settled(s) }) })
}

func (h *handle) settled(s dadapter.Settlement) {
	switch {
	case s.StopReason != words.StopNone:
		h.result = suggest.Outcome{Err: fmt.Errorf("the planning agent was stopped (%s): %s", s.StopReason, s.Diagnostic)}
	case s.ExitCode != 0:
		h.result = suggest.Outcome{Err: fmt.Errorf("the planning agent failed (exit %d): %s", s.ExitCode, s.Diagnostic)}
	default:
		reply, err := Reply(h.in.Mode, s.Output)
		h.result = suggest.Outcome{Reply: reply, Err: err}
	}
	h.step(holder.SettledEv{})
}

// removeStorage removes the storage, then the holder settles the promise:
// nothing of the attempt is left when the coordinator hears of it.
func (h *handle) removeStorage() {
	if h.fs == nil {
		h.step(holder.StorageRemoved{})
		return
	}
	fs := h.fs
	h.fs = nil
	h.p.cfg.D.RemoveTaskFilesystems(fs, func(err error) {
		h.p.post(func() {
			if err != nil {
				h.p.trace("request %s: its storage could not be removed (%v); the next process's first request recovers it", h.in.RequestID, err)
			}
			h.step(holder.StorageRemoved{Err: err})
		})
	})
}

func (h *handle) settle(out suggest.Outcome) {
	if h.out != nil {
		return
	}
	h.out = &out
	if h.fn != nil {
		h.fn(out)
	}
}

// Reply is the planning agent's answer as the coordinator validates it:
// the "cards" array of a suggestion, or a draft's whole {"items": […]}.
// The agent prints one JSON object on its standard output; anything else
// is a failed request.
func Reply(mode string, output []byte) ([]byte, error) {
	var r struct {
		Cards json.RawMessage `json:"cards"`
		Items json.RawMessage `json:"items"`
	}
	// Open reading: a key besides these two is the agent's own, but a
	// repeated "cards" or a "Cards" is not taken for the answer.
	if err := strictjson.UnmarshalOpen(output, &r); err != nil {
		return nil, errors.New("the planning agent's answer is not one JSON object: " + err.Error())
	}
	if mode == store.ModeDraft {
		if len(r.Items) == 0 {
			return nil, errors.New(`the planning agent's draft has no "items"`)
		}
		return json.Marshal(struct {
			Items json.RawMessage `json:"items"`
		}{r.Items})
	}
	if len(r.Cards) == 0 {
		return nil, errors.New(`the planning agent's answer has no "cards"`)
	}
	return r.Cards, nil
}

// Prompt is what the planning agent is asked: the issue, the plan as it
// stands, and the answer's form.
func Prompt(in suggest.Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "codeboost planning request %s (read-only: nothing you change is kept)\n", in.RequestID)
	if in.Issue != "" {
		b.WriteString("The issue:\n" + in.Issue + "\n")
	}
	fmt.Fprintf(&b, "The plan, revision %d:\n", in.Revision)
	for _, it := range in.Items {
		fmt.Fprintf(&b, "%d. %s\n", it.Item, it.Title)
	}
	if in.Mode == store.ModeDraft {
		fmt.Fprintf(&b, "Write revision %d whole. Answer with one JSON object on standard output: "+
			`{"items": [{"title": "…", "instructions": "…"}, …]}`+"\n", in.NextRevision)
	} else {
		b.WriteString(`Suggest changes. Answer with one JSON object on standard output: {"cards": [{"item": N (0 for a new item), "title": "…", "instructions": "…", "kind": "add"|"change"|"remove"}, …]}` + "\n")
	}
	return b.String()
}
