package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/holder"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
)

// This file is checkTaskTree (#81), publication step 2's last step before
// launch: "Last before launch, F calls D's checkTaskTree with the clone's
// head and the item's file operations (#81) and passes the result to the
// start call, which mounts every gitlink empty and read-only. A
// TaskTreeRefused (the tree is not a clean copy of the head, or an
// operation does not fit it) is a safety finding that sends the task to
// needs human; any other check failure fails the attempt."

// checkTree asks D to prove the task tree, then launches. It is a step
// of preparation: a stop aborts it and waits for its answer, as for the
// clone.
func (c *Coordinator) checkTree(j *job) {
	ops, err := c.itemOperations(j)
	if err != nil {
		c.preparationFailed(j, "task tree check: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.prepCancel, j.prepBusy = cancel, true
	c.traceAttempt(j.attemptID, "tree check %s", j.attemptID)
	c.deps.D.CheckTaskTree(ctx, j.storage, j.clone.Head, ops, func(t dadapter.TaskTree, err error) {
		c.post(func() {
			cancel()
			c.treeChecked(j, t, err)
		})
	})
}

func (c *Coordinator) treeChecked(j *job, t dadapter.TaskTree, err error) {
	j.prepBusy = false
	if c.preparationStopped(j) {
		return
	}
	switch {
	case errors.Is(err, dadapter.ErrTaskTreeRefused):
		j.finding = "the task tree was refused before launch: " + err.Error()
		c.traceAttempt(j.attemptID, "safety finding %s: %s", j.attemptID, j.finding)
		c.preparationFailed(j, "task tree refused: "+err.Error())
	case err != nil:
		c.preparationFailed(j, "task tree check: "+err.Error())
	default:
		c.traceAttempt(j.attemptID, "tree ready %s", j.attemptID)
		j.tree = t
		c.step(j, holder.Prepared{}) // → the holder's Start: launch
	}
}

// itemOperations are the file operations the attempt's plan item
// declares: none for an attempt without an item, or an item known by its
// title alone.
func (c *Coordinator) itemOperations(j *job) ([]dadapter.FileOperation, error) {
	spec, ok, err := c.itemSpec(j)
	if err != nil || !ok {
		return nil, err
	}
	ops := make([]dadapter.FileOperation, len(spec.Files))
	for i, f := range spec.Files {
		ops[i] = dadapter.FileOperation{Op: f.Op, Path: f.Path, To: f.To}
	}
	return ops, nil
}

// itemSpec is the attempt's plan item as the plan document declared it,
// at the attempt's plan revision; ok is false for an attempt without an
// item, or an item known by its title alone. The item and the revision
// are fixed at admission and a revision's items are never rewritten (an
// import makes a new revision), so the spec is read once per job and an
// attempt without an item reads nothing: the tree check and publication
// both ask, and each read was a transaction of the attempt's own.
func (c *Coordinator) itemSpec(j *job) (spec plan.Item, ok bool, err error) {
	if j.admitted.Item == nil {
		return spec, false, nil
	}
	if j.spec != nil {
		return j.spec.item, j.spec.ok, nil
	}
	var it store.PlanItem
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) {
		it, ok, err = tx.ItemOf(j.admitted)
		return err
	}); err != nil {
		return spec, false, err
	}
	if ok && len(it.Spec) > 0 {
		if spec, err = plan.ParseSpec(it.Spec); err != nil {
			return spec, false, fmt.Errorf("plan item %d's spec: %w", it.Item, err)
		}
	}
	j.spec = &itemSpec{item: spec, ok: ok && len(it.Spec) > 0}
	return spec, j.spec.ok, nil
}

// itemSpec is a job's plan item spec as read once (Coordinator.itemSpec).
type itemSpec struct {
	item plan.Item
	ok   bool
}
