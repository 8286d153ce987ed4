package app

import (
	"context"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/store"
)

// askOpenLimit bounds how long startup waits for Ask's recovery before it
// serves without questions: D's recovery is bounded by D, and questions
// are not worth holding the review server back.
const askOpenLimit = 2 * time.Minute

// openAsk starts Ask, the question coordinator, after the runner's
// recovery: its owner token (its own, never the runner's: "Ask's owner"),
// then its startup (the questions an earlier process left are failed, and
// D's recovery for Ask's owner removes their objects). It runs on the
// runner's loop, so the Store keeps one writer. The next step waits for
// Ask's startup to end, or askOpenLimit on the process's clock. A failure
// is logged and leaves questions closed; the server runs on.
func (a *App) openAsk() (*wait, error) {
	var token string
	if err := a.capability.Update(func(tx *store.Tx) (err error) {
		token, err = tx.AskOwnerToken(a.lock.Device(), a.lock.Inode(), a.tokens(true))
		return err
	}); err != nil {
		a.log.Error("questions are closed: Ask's owner token", "err", err)
		return nil, nil
	}
	a.askOwner = token
	rc := a.opt.Runner
	c, err := ask.New(ask.Config{Store: a.store, Capability: a.capability, D: a.d, Loop: a.loop, Clock: a.clock, IDs: a.ids(),
		Owner: token, Timeout: time.Duration(rc.AttemptTimeout), Profile: rc.Agent.Profile(), Repository: a.repository(),
		Prompt: a.questionPrompt, Trace: a.traceLine})
	if err != nil {
		a.log.Error("questions are closed", "err", err)
		return nil, nil
	}
	a.ask = c
	if err := c.Open(context.Background()); err != nil {
		a.log.Error("questions are closed: Ask's startup", "err", err)
		a.askFailed = true
		return nil, nil
	}
	return a.within(c.Opened(), askOpenLimit), nil
}

// askOpened is the end of Ask's startup: questions open, or closed until
// a restart, saying why.
func (a *App) askOpened() {
	if a.ask == nil || a.askFailed {
		return
	}
	select {
	case <-a.ask.Opened():
		if err := a.ask.OpenErr(context.Background()); err != nil {
			a.log.Error("questions are closed until restart", "err", err)
		}
	default:
		a.log.Error("questions are closed: Ask's recovery did not end in " + askOpenLimit.String())
	}
}

// questionPrompt is what a question's agent is asked: the question, the
// plan item it is about (when it names one), and the answer's form.
func (a *App) questionPrompt(q store.Question) string {
	head := "codeboost question " + q.ID + " (read-only: answer from the task's code; nothing you change is kept)\n"
	if q.Item != nil {
		var it store.PlanItem
		if err := a.store.View(func(tx *store.Tx) error {
			p, err := tx.Plan(q.PlanKey)
			if err != nil {
				return err
			}
			items, err := tx.PlanItems(q.PlanKey, p.Revision)
			for _, x := range items {
				if x.Item == *q.Item {
					it = x
				}
			}
			return err
		}); err == nil && it.Item != 0 {
			head += "About plan item:\n" + itemPrompt(it)
		}
	}
	return head + "Question:\n" + q.Text + "\nAnswer with one JSON object on standard output: {\"summary\": \"…\", \"answer\": \"…\"}\n"
}

// stopAsk is step 1's half for questions, in the same turn as the
// server's stopping flag: see ask.Coordinator.StopAdmission.
func (a *App) stopAsk() {
	if a.ask != nil {
		a.ask.StopAdmission()
	}
}

// closeAsk is step 6's questions.close(): every question in flight is
// aborted, answered "Server stopped" through the capability, and its
// storage removed; the next step waits for all of them (D bounds each:
// decision 4).
func (a *App) closeAsk() (*wait, error) {
	if a.ask == nil {
		return nil, nil
	}
	closed, err := a.ask.Close(context.Background())
	if err != nil {
		a.log.Error("shutdown: questions could not be closed", "err", err)
		return nil, nil
	}
	return on(closed), nil
}
