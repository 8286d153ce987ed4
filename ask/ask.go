package ask

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Request is one question: the user's text, on a plan item or on the
// whole plan (Item nil), under the user action's idempotency key.
type Request struct {
	PlanKey  string
	ActionID string
	Item     *int
	Text     string
}

// ActionKind is a question's user_actions kind: "Every other writing
// action is idempotency-only: it has a user_actions row and produces no
// event. That covers … questions".
const ActionKind = "question"

// Ask admits a question as one user action, in one event: the in-memory
// checks (a free slot, Ask open), then the note and the pending row in
// the action's transaction, and, after it commits, the slot and the
// question's preparation. A replay returns the saved response (the same
// question) and applies nothing. Once admission has stopped (shutdown
// step 1) a question that was admitted by the server before it still
// saves its note, starts no agent and is answered "Server stopped",
// retryable, in the same transaction.
func (c *Coordinator) Ask(ctx context.Context, r Request) (resp store.Response, err error) {
	a := store.Action{PlanKey: r.PlanKey, ActionID: r.ActionID, Kind: ActionKind,
		Request: struct {
			Item *int   `json:"item"`
			Text string `json:"text"`
		}{r.Item, r.Text}}
	if callErr := c.cfg.Loop.Call(ctx, func() { resp, err = c.ask(a, r) }); callErr != nil {
		return store.Response{}, callErr
	}
	return
}

func (c *Coordinator) ask(a store.Action, r Request) (store.Response, error) {
	if c.closing {
		return store.Response{}, ErrShuttingDown
	}
	stopped := c.stopped.Load()
	return c.cfg.Store.UserAction(a, func(tx *store.Tx) (store.Response, error) {
		if !stopped {
			if err := c.admissible(); err != nil {
				return store.Response{}, err
			}
		}
		q, err := tx.AskQuestion(r.PlanKey, c.cfg.IDs.UUID(), c.cfg.IDs.UUID(), r.Item, r.Text)
		if err != nil {
			return store.Response{}, err
		}
		if stopped {
			// markStopped: the note is saved, no agent starts.
			if err := tx.FailQuestion(q.ID, words.ServerStopped, true); err != nil {
				return store.Response{}, err
			}
			tx.AfterCommit(func() {
				c.trace("admitted question %s after admission stopped: %s, no agent", q.ID, words.ServerStopped)
			})
			return store.Response{Outcome: "applied", AttemptID: q.ID}, nil
		}
		tx.AfterCommit(func() { c.start(q) })
		return store.Response{Outcome: "applied", AttemptID: q.ID}, nil
	})
}

// admissible is admission's in-memory half. The loop runs nothing else
// between it and the commit's AfterCommit, which takes the slot, so two
// questions never both see the last free one.
func (c *Coordinator) admissible() error {
	switch {
	case !c.open && c.recovery != nil:
		return &store.Refusal{Code: store.CodeActiveAttempt, Message: "questions are closed until restart: " + c.recovery.Error()}
	case !c.open:
		return &store.Refusal{Code: store.CodeActiveAttempt, Message: "questions are not open yet: Ask's recovery is still running"}
	case c.unreleased:
		return &store.Refusal{Code: store.CodeActiveAttempt, Message: "D could not remove some resources of a question; questions stay closed until restart"}
	case c.slots >= Slots && len(c.markers) > 0:
		id := slices.Min(slices.Collect(maps.Keys(c.markers)))
		return &store.Refusal{Code: store.CodeActiveAttempt, Message: fmt.Sprintf("%s (question %s); its slot stays held until the server restarts",
			words.NeedsRestart(c.markers[id]), id)}
	case c.slots >= Slots:
		return &store.Refusal{Code: store.CodeActiveAttempt, Message: "two questions are being answered already; ask again when one has its answer"}
	}
	return nil
}

// StopAdmission is shutdown step 1's half for questions, called in the
// same turn as the server's stopping flag: from now on a question that
// reaches Ask (one the server admitted before) saves its note, starts no
// agent and is answered "Server stopped". It never blocks.
func (c *Coordinator) StopAdmission() {
	if c.stopped.CompareAndSwap(false, true) {
		c.trace("admission stopped")
	}
}

// Questions reads a task's questions.
func (c *Coordinator) Questions(planKey string) (qs []store.Question, err error) {
	err = c.cfg.Store.View(func(tx *store.Tx) (err error) {
		qs, err = tx.Questions(planKey)
		return err
	})
	return
}
