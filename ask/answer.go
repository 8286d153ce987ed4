package ask

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/words"
)

// question is one question in flight: its holder (the one attempt
// holder every lane's attempt goes through, package holder, with Ask's
// read-only policy), its storage, then its handle. It leaves inFlight once
// its holder ends: freed after its terminal write and its storage's
// removal, or held under a marker.
type question struct {
	row        store.Question
	h          holder.Holder
	prepCancel context.CancelFunc // aborts the storage allocation in flight; nil once it returned
	storage    dadapter.TaskFilesystems
	handle     dadapter.Handle
	// answer is the terminal write as last decided (a failure's reason, or
	// the answer); a first reason overrides it with "Server stopped".
	answer func(*store.Tx) error
}

// policy is Ask's: "one read-only question attempt of D". Nothing the
// agent writes is audited, exported or committed, since the storage is
// removed after the answer, and Ask keeps no host-side files.
var policy = holder.Policy{}

// start takes a slot and hands the question to its holder, whose first
// effect is the preparation.
func (c *Coordinator) start(row store.Question) {
	c.slots++
	q := &question{row: row}
	c.inFlight[row.ID] = q
	c.trace("admitted question %s; %d of %d slots held", row.ID, c.slots, Slots)
	h, effs := holder.New(policy)
	q.h = h
	c.do(q, effs)
}

// step feeds the question's holder one event and carries out what it
// asks for.
func (c *Coordinator) step(q *question, ev holder.Event) {
	next, effs, err := holder.Step(q.h, ev)
	if err != nil {
		c.trace("question %s: %v", q.row.ID, err)
		return
	}
	q.h = next
	c.do(q, effs)
}

func (c *Coordinator) do(q *question, effs []holder.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case holder.Prepare:
			c.prepare(q)
		case holder.AbortPreparation:
			if q.prepCancel != nil {
				c.trace("question %s: storage allocation aborted", q.row.ID)
				q.prepCancel()
			}
		case holder.Start:
			c.launch(q)
		case holder.SaveStart:
			c.saveStart(q)
		case holder.Cancel:
			c.trace("question %s: cancel(%s)", q.row.ID, e.Reason)
			q.handle.Cancel(e.Reason)
		case holder.WriteTerminal:
			c.writeTerminal(q)
		case holder.RemoveStorage:
			c.removeStorage(q)
		case holder.FreeSlot:
			delete(c.inFlight, q.row.ID)
			c.slots--
			c.maybeClosed()
		case holder.Mark:
			c.toMarker(q, e.Reason)
		default:
			// Ask's policy is read-only with no host files: the holder
			// never asks it to audit, export or release a commit.
			panic(fmt.Sprintf("ask: the holder asked for %s, which Ask's policy never needs", holder.EffectName(e)))
		}
	}
}

// prepare allocates the question's task storage, labelled with Ask's
// owner. A read-only question needs no clone: the storage holds the task's
// recorded head, and nothing the agent writes there is ever exported or
// committed, since the storage is removed after the answer.
func (c *Coordinator) prepare(q *question) {
	row := q.row
	if c.cfg.D == nil {
		c.prepareFailed(q, errNoAgent, "No agent is configured (runner.agent.image), so no question can be answered.", false)
		return
	}
	var src dadapter.Source
	err := c.cfg.Store.View(func(tx *store.Tx) error {
		t, err := tx.Task(row.PlanKey)
		src.Commit = t.Head()
		return err
	})
	if err != nil {
		c.prepareFailed(q, err, "The task's head could not be read: "+err.Error(), true)
		return
	}
	if c.cfg.Repository != nil {
		src.Repository = c.cfg.Repository(row.PlanKey)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.prepCancel = cancel
	owner := dadapter.StorageOwner{RunnerOwner: c.cfg.Owner, AttemptID: row.ID, AllocationID: row.AllocationID}
	// Ask saves no process group: the allocation is D's own, and a
	// crashed process's leftovers are found by their labels (Open).
	c.cfg.D.PrepareTaskFilesystems(ctx, owner, src, func(dadapter.ProcessGroup) {}, func(fs dadapter.TaskFilesystems, err error) {
		c.post(func() { c.storagePrepared(q, fs, err) })
	})
}

var errNoAgent = errors.New("no agent is configured")

func (c *Coordinator) prepareFailed(q *question, err error, reason string, retryable bool) {
	q.answer = func(tx *store.Tx) error { return tx.FailQuestion(q.row.ID, reason, retryable) }
	c.step(q, holder.Prepared{Err: err})
}

func (c *Coordinator) storagePrepared(q *question, fs dadapter.TaskFilesystems, err error) {
	q.prepCancel = nil
	q.storage = fs
	if err != nil {
		c.prepareFailed(q, err, "Task storage: "+err.Error(), true)
		return
	}
	c.step(q, holder.Prepared{})
}

func (c *Coordinator) launch(q *question) {
	prompt := q.row.Text
	if c.cfg.Prompt != nil {
		prompt = c.cfg.Prompt(q.row)
	}
	h, err := c.cfg.D.Start(dadapter.InvocationInput{RunnerOwner: c.cfg.Owner, AttemptID: q.row.ID, Phase: words.PhaseQuestions,
		Deadline: c.cfg.Clock.Now().Add(c.cfg.Timeout), Storage: q.storage, Prompt: prompt, Profile: c.cfg.Profile})
	if err != nil {
		q.answer = failWith(q.row.ID, "The agent could not start: "+err.Error())
		c.step(q, holder.Started{Err: err})
		return
	}
	q.handle = h
	c.step(q, holder.Started{})
	h.OnSettled(func(s dadapter.Settlement) { c.post(func() { c.settled(q, s) }) })
}

// saveStart is the pending → running write. When it fails the holder asks
// D to stop (capture-failure) and, once D settled, holds the slot under a
// marker: the row is still pending, and only a restart's Open fails it.
func (c *Coordinator) saveStart(q *question) {
	err := c.cfg.Capability.Update(func(tx *store.Tx) error { return tx.StartQuestion(q.row.ID) })
	if err != nil {
		c.trace("question %s: running not saved: %v", q.row.ID, err)
	} else {
		c.trace("question %s running", q.row.ID)
	}
	c.step(q, holder.StartSaved{Err: err})
}

// settled decides the question's terminal row from D's settlement.
func (c *Coordinator) settled(q *question, s dadapter.Settlement) {
	if len(s.Unreleased) > 0 {
		c.unreleased = true
		c.trace("question %s: D could not remove %d resources; questions closed until restart", q.row.ID, len(s.Unreleased))
	}
	switch {
	case s.StopReason == words.StopTimeout:
		q.answer = func(tx *store.Tx) error {
			return tx.FailQuestion(q.row.ID, "Timed out: the agent did not answer within "+c.cfg.Timeout.String(), true)
		}
	case s.StopReason != words.StopNone || s.ExitCode != 0:
		q.answer = failWith(q.row.ID, fmt.Sprintf("The agent failed (exit %d, stop %q): %s", s.ExitCode, s.StopReason, s.Diagnostic))
	default:
		answer, ok := parseAnswer(s.Output)
		if !ok {
			q.answer = failWith(q.row.ID, "The agent's answer is not a valid question result.")
		} else {
			q.answer = func(tx *store.Tx) error { return tx.FinishAnswer(q.row.ID, answer) }
		}
	}
	c.step(q, holder.SettledEv{})
}

// parseAnswer reads a question's result: the runner's output check for
// the question kind, then its "answer" (else its "summary").
func parseAnswer(out []byte) (string, bool) {
	if !runner.ValidOutput(words.KindQuestion, out) {
		return "", false
	}
	var r struct {
		Summary string `json:"summary"`
		Answer  string `json:"answer"`
	}
	if err := strictjson.UnmarshalOpen(out, &r); err != nil { // "answer" exactly, as the output check read it
		return "", false
	}
	if r.Answer == "" {
		r.Answer = r.Summary
	}
	return r.Answer, r.Answer != ""
}

func failWith(id, reason string) func(*store.Tx) error {
	return func(tx *store.Tx) error { return tx.FailQuestion(id, reason, true) }
}

// writeTerminal is the holder's terminal write, through the shutdown
// capability: it is the coordinator's settlement, which lands after the
// write gate closed. A first reason (shutdown: Close) decides it: "row
// failed with the shutdown reason", retryable, whatever D said.
func (c *Coordinator) writeTerminal(q *question) {
	write := q.answer
	if q.h.First != "" {
		write = func(tx *store.Tx) error { return tx.FailQuestion(q.row.ID, words.ServerStopped, true) }
	}
	err := c.cfg.Capability.Update(write)
	if err != nil {
		c.trace("question %s: terminal write failed: %v", q.row.ID, err)
	} else {
		c.trace("question %s answered", q.row.ID)
	}
	c.step(q, holder.Wrote{Err: err})
}

// removeStorage removes the question's storage (there is none when its
// allocation failed or never began). A failed removal holds the slot
// until restart, whose recovery removes the storage.
func (c *Coordinator) removeStorage(q *question) {
	if q.storage == nil {
		c.step(q, holder.StorageRemoved{})
		return
	}
	c.cfg.D.RemoveTaskFilesystems(q.storage, func(err error) {
		c.post(func() {
			if err != nil {
				c.trace("question %s: storage not removed, its slot stays held until restart: %v", q.row.ID, err)
			}
			c.step(q, holder.StorageRemoved{Err: err})
		})
	})
}

// toMarker ends the question's life in memory and keeps its slot under an
// unresolved marker, which only a restart clears (the coordinator never
// removes a marker on its own): "A slot is freed only after the terminal
// durable write succeeds. If settled has resolved but the write fails …
// the coordinator keeps an unresolved marker … The marker holds the slot".
// Its storage stays too; the restart's Open fails the row as a leftover
// and removes the storage by its labels. The question leaves inFlight, so
// that Close does not wait for what only a restart resolves.
func (c *Coordinator) toMarker(q *question, reason string) {
	delete(c.inFlight, q.row.ID)
	c.markers[q.row.ID] = reason
	c.trace("question %s: unresolved %s; its slot and storage stay held until restart", q.row.ID, reason)
	c.maybeClosed()
}
