package runner

import (
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
)

// This file is the scope half of publication (#88): a completed item
// whose clean change manifest holds paths its plan item does not declare
// is published with its runner commit and then paused for amendment, in
// that same transaction, with a checkpoint (store/continuation.go) that
// keeps the leaf entries of the commit's tree. The work is kept, not
// thrown away: the person amends the item to declare those paths and
// approves the continuation, and resume goes on after it.

// outOfScope lists the changed paths of m that the attempt's plan item
// does not declare (plan.Item.InScope: its scope paths and file
// operations). An item known by its title alone, or one that declares
// neither scope paths nor file operations, leaves its scope undeclared
// (docs/plan-format.md), so nothing is out of it.
func (c *Coordinator) outOfScope(j *job, m dadapter.ChangeManifest) ([]string, error) {
	spec, ok, err := c.itemSpec(j)
	if err != nil || !ok || !spec.DeclaresScope() {
		return nil, err
	}
	var out []string
	for _, ch := range m.Changes {
		if !spec.InScope(ch.Path) {
			out = append(out, ch.Path)
		}
	}
	return out, nil
}

// pauseForScope records j's scope finding in the publishing transaction,
// after Publish wrote completed with the commit.
func (c *Coordinator) pauseForScope(tx *store.Tx, j *job) error {
	c.traceAttempt(j.attemptID, "scope finding %s: %s", j.attemptID, names(j.scope.Paths))
	return tx.PauseForAmendment(j.attemptID, j.scope)
}
