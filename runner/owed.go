package runner

import (
	"github.com/codeboost/codeboost/store"
)

// This file is "A finding whose save failed" ("Safety findings and
// partial output"): "Held in memory (SafetyFindings) and acted on by
// ItemExecutor, as before: owed at a human gate until the task leaves
// it", and "Start and resume": "Before the pending-cancel, active-merge
// and unreconciled-commit refusals, a safety finding owed from an earlier
// run is persisted and acted on, and nothing is admitted (outcome:
// "settled"); this prevents an in-memory finding from being lost at
// restart." Once persisted (store.Tx.OweFinding: schema v13's evidence and
// owed marker), the task is at its human gate and the Store keeps it.

// owedFinding is a safety finding whose save with its attempt's terminal
// write failed: the terminal state was then written without it.
type owedFinding struct {
	attemptID string
	finding   string
}

// owe holds j's finding in memory: its save failed.
func (c *Coordinator) owe(j *job) {
	c.owed[j.planKey] = owedFinding{attemptID: j.attemptID, finding: j.finding}
	c.traceAttempt(j.attemptID, "safety finding of %s owed: its save failed", j.attemptID)
}

// settleOwed persists and acts on the finding owed for planKey, in tx,
// and answers the action's response ("settled", nothing admitted); nil
// when nothing is owed. The memory is cleared only once tx commits.
func (c *Coordinator) settleOwed(tx *store.Tx, planKey string) (*store.Response, error) {
	o, ok := c.owed[planKey]
	if !ok {
		return nil, nil
	}
	if err := tx.OweFinding(planKey, o.attemptID, o.finding); err != nil {
		return nil, err
	}
	tx.AfterCommit(func() {
		delete(c.owed, planKey)
		c.traceAttempt(o.attemptID, "owed safety finding of %s saved: task needs human", o.attemptID)
	})
	return &store.Response{Outcome: "settled", AttemptID: o.attemptID,
		Message: "a safety finding owed from an earlier run was saved; the task needs a person: " + o.finding}, nil
}
