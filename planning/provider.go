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
	h := &handle{p: p, in: in, alloc: p.cfg.IDs.UUID()}
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
			h.settle(suggest.Outcome{Err: err})
		}
		return
	}
	p.recovered = true
	for _, h := range waiting {
		h.prepare()
	}
}

// handle is one planning attempt: its storage, then D's handle. It
// settles once, after everything it started has stopped and its storage
// is removed ("promise settles after final termination").
type handle struct {
	p      *Provider
	in     suggest.Input
	alloc  string
	cancel context.CancelFunc // the storage allocation in flight; nil once it returned
	fs     dadapter.TaskFilesystems
	dh     dadapter.Handle
	reason string // the first stop asked for; "" for none
	done   bool
	fn     func(suggest.Outcome)
	out    *suggest.Outcome
}

func (h *handle) OnSettled(fn func(suggest.Outcome)) {
	if h.out != nil {
		fn(*h.out)
		return
	}
	h.fn = fn
}

// Cancel asks the attempt to stop; the first reason stays.
func (h *handle) Cancel(reason string) {
	if h.reason != "" || h.done {
		return
	}
	h.reason = reason
	switch {
	case h.dh != nil:
		h.dh.Cancel(stopReason(reason))
	case h.cancel != nil:
		h.cancel()
	}
}

func stopReason(reason string) words.StopReason {
	switch reason {
	case "timeout":
		return words.StopTimeout
	case "shutdown":
		return words.StopShutdown
	}
	return words.StopCancelled
}

func (h *handle) prepare() {
	if h.reason != "" {
		h.settle(suggest.Outcome{Err: fmt.Errorf("stopped (%s) before it started", h.reason)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	owner := dadapter.StorageOwner{RunnerOwner: h.p.cfg.Owner, AttemptID: h.in.RequestID, AllocationID: h.alloc}
	h.p.trace("request %s: storage", h.in.RequestID)
	h.p.cfg.D.PrepareTaskFilesystems(ctx, owner, h.p.cfg.Source(h.in.PlanKey), func(dadapter.ProcessGroup) {},
		func(fs dadapter.TaskFilesystems, err error) { h.p.post(func() { h.prepared(fs, err) }) })
}

func (h *handle) prepared(fs dadapter.TaskFilesystems, err error) {
	h.cancel, h.fs = nil, fs
	switch {
	case err != nil:
		h.finish(suggest.Outcome{Err: fmt.Errorf("task storage: %w", err)})
	case h.reason != "":
		h.finish(suggest.Outcome{Err: fmt.Errorf("stopped (%s) before it started", h.reason)})
	default:
		dh, err := h.p.cfg.D.Start(dadapter.InvocationInput{RunnerOwner: h.p.cfg.Owner, AttemptID: h.in.RequestID,
			Phase: words.PhasePlanning, Deadline: h.in.Deadline, Storage: fs, Prompt: Prompt(h.in), Profile: h.p.cfg.Profile})
		if err != nil {
			h.finish(suggest.Outcome{Err: fmt.Errorf("the planning agent could not start: %w", err)})
			return
		}
		h.dh = dh
		h.p.trace("request %s: the planning agent started", h.in.RequestID)
		dh.OnSettled(func(s dadapter.Settlement) { h.p.post(func() { h.settled(s) }) })
	}
}

func (h *handle) settled(s dadapter.Settlement) {
	switch {
	case s.StopReason != words.StopNone:
		h.finish(suggest.Outcome{Err: fmt.Errorf("the planning agent was stopped (%s): %s", s.StopReason, s.Diagnostic)})
	case s.ExitCode != 0:
		h.finish(suggest.Outcome{Err: fmt.Errorf("the planning agent failed (exit %d): %s", s.ExitCode, s.Diagnostic)})
	default:
		reply, err := Reply(h.in.Mode, s.Output)
		h.finish(suggest.Outcome{Reply: reply, Err: err})
	}
}

// finish removes the storage, then settles: nothing of the attempt is
// left when the coordinator hears of it.
func (h *handle) finish(out suggest.Outcome) {
	if h.fs == nil {
		h.settle(out)
		return
	}
	fs := h.fs
	h.fs = nil
	h.p.cfg.D.RemoveTaskFilesystems(fs, func(err error) {
		h.p.post(func() {
			if err != nil {
				h.p.trace("request %s: its storage could not be removed (%v); the next process's first request recovers it", h.in.RequestID, err)
			}
			h.settle(out)
		})
	})
}

func (h *handle) settle(out suggest.Outcome) {
	if h.done {
		return
	}
	h.done = true
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
