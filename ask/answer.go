package ask

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/words"
)

// question is one question in flight: its storage, then its handle. It
// leaves inFlight only after its terminal write and its storage's
// removal, and its slot is freed only then ("a slot is freed only after
// the terminal durable write succeeds"; "settled → … the terminal write
// … → removeTaskFilesystems → the slot is freed").
type question struct {
	row        store.Question
	prepCancel context.CancelFunc // aborts the storage allocation in flight; nil once it returned
	storage    dadapter.TaskFilesystems
	handle     dadapter.Handle
	stopReason words.StopReason // why Ask stopped it ("" for none): shutdown
}

// start takes a slot and allocates the question's task storage, labelled
// with Ask's owner. A read-only question needs no clone: the storage holds
// the task's recorded head, and nothing the agent writes there is ever
// exported or committed, since the storage is removed after the answer.
func (c *Coordinator) start(row store.Question) {
	c.slots++
	q := &question{row: row}
	c.inFlight[row.ID] = q
	c.trace("admitted question %s; %d of %d slots held", row.ID, c.slots, Slots)
	if c.cfg.D == nil {
		c.finish(q, func(tx *store.Tx) error {
			return tx.FailQuestion(row.ID, "No agent is configured (runner.agent.image), so no question can be answered.", false)
		})
		return
	}
	var src dadapter.Source
	err := c.cfg.Store.View(func(tx *store.Tx) error {
		t, err := tx.Task(row.PlanKey)
		src.Commit = t.Head()
		return err
	})
	if err != nil {
		c.finish(q, failWith(row.ID, "The task's head could not be read: "+err.Error()))
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

func (c *Coordinator) storagePrepared(q *question, fs dadapter.TaskFilesystems, err error) {
	q.prepCancel = nil
	q.storage = fs
	if err != nil {
		c.finish(q, failWith(q.row.ID, "Task storage: "+err.Error()))
		return
	}
	if q.stopReason != "" {
		c.finish(q, c.stoppedAnswer(q))
		return
	}
	prompt := q.row.Text
	if c.cfg.Prompt != nil {
		prompt = c.cfg.Prompt(q.row)
	}
	h, err := c.cfg.D.Start(dadapter.InvocationInput{RunnerOwner: c.cfg.Owner, AttemptID: q.row.ID, Phase: words.PhaseQuestions,
		Deadline: c.cfg.Clock.Now().Add(c.cfg.Timeout), Storage: fs, Prompt: prompt, Profile: c.cfg.Profile})
	if err != nil {
		c.finish(q, failWith(q.row.ID, "The agent could not start: "+err.Error()))
		return
	}
	q.handle = h
	if err := c.cfg.Capability.Update(func(tx *store.Tx) error { return tx.StartQuestion(q.row.ID) }); err != nil {
		// The row stays pending: the answer is written at settlement all
		// the same, and a crash before then leaves it to Open.
		c.trace("question %s: running not saved: %v", q.row.ID, err)
	} else {
		c.trace("question %s running", q.row.ID)
	}
	h.OnSettled(func(s dadapter.Settlement) { c.post(func() { c.settled(q, s) }) })
}

// settled writes the question's terminal row from D's settlement.
func (c *Coordinator) settled(q *question, s dadapter.Settlement) {
	if len(s.Unreleased) > 0 {
		c.unreleased = true
		c.trace("question %s: D could not remove %d resources; questions closed until restart", q.row.ID, len(s.Unreleased))
	}
	switch {
	case q.stopReason != "":
		c.finish(q, c.stoppedAnswer(q))
	case s.StopReason == words.StopTimeout:
		c.finish(q, func(tx *store.Tx) error {
			return tx.FailQuestion(q.row.ID, "Timed out: the agent did not answer within "+c.cfg.Timeout.String(), true)
		})
	case s.StopReason != words.StopNone || s.ExitCode != 0:
		c.finish(q, failWith(q.row.ID, fmt.Sprintf("The agent failed (exit %d, stop %q): %s", s.ExitCode, s.StopReason, s.Diagnostic)))
	default:
		answer, ok := parseAnswer(s.Output)
		if !ok {
			c.finish(q, failWith(q.row.ID, "The agent's answer is not a valid question result."))
			return
		}
		c.finish(q, func(tx *store.Tx) error { return tx.FinishAnswer(q.row.ID, answer) })
	}
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

// stoppedAnswer is the abort path's finishAnswer: "row failed with the
// shutdown reason", retryable.
func (c *Coordinator) stoppedAnswer(q *question) func(*store.Tx) error {
	return func(tx *store.Tx) error { return tx.FailQuestion(q.row.ID, words.ServerStopped, true) }
}

// finish is the holder order's tail: the terminal write (through the
// shutdown capability: it is the coordinator's settlement, which lands
// after the write gate closed), then the storage's removal, then the
// slot. A failed terminal write frees nothing: "A slot is freed only
// after the terminal durable write succeeds. If settled has resolved but
// the write fails … the coordinator keeps an unresolved marker … The
// marker holds the slot". The question's slot and its storage stay held
// until restart, whose Open fails the row as a leftover and removes the
// storage by its labels. A failed removal likewise keeps the slot held
// until restart.
func (c *Coordinator) finish(q *question, write func(*store.Tx) error) {
	if err := c.cfg.Capability.Update(write); err != nil {
		c.trace("question %s: terminal write failed: %v", q.row.ID, err)
		c.toMarker(q, words.ResultNotSaved)
		return
	}
	c.trace("question %s answered", q.row.ID)
	if q.storage == nil {
		c.release(q, true)
		return
	}
	c.cfg.D.RemoveTaskFilesystems(q.storage, func(err error) {
		c.post(func() {
			if err != nil {
				c.trace("question %s: storage not removed, its slot stays held until restart: %v", q.row.ID, err)
			}
			c.release(q, err == nil)
		})
	})
}

// release ends the question's life in memory, and frees its slot only
// when its storage is gone.
func (c *Coordinator) release(q *question, free bool) {
	delete(c.inFlight, q.row.ID)
	if free {
		c.slots--
	}
	c.maybeClosed()
}

// toMarker ends the question's life in memory and keeps its slot under an
// unresolved marker, which only a restart clears (the coordinator never
// removes a marker on its own). The question leaves inFlight, so that
// Close does not wait for what only a restart resolves.
func (c *Coordinator) toMarker(q *question, reason string) {
	delete(c.inFlight, q.row.ID)
	c.markers[q.row.ID] = reason
	c.trace("question %s: unresolved %s; its slot and storage stay held until restart", q.row.ID, reason)
	c.maybeClosed()
}
