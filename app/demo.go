package app

import (
	"fmt"

	"github.com/codeboost/codeboost/demo"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
)

// The demo's tasks: the demo repository's plan under two names, one ready
// to start (every item approved) and one waiting for a person to approve
// it, so that a new user sees both the runner and the review gate.
const (
	DemoReadyTask    = "wordcount"
	DemoApprovalTask = "wordcount-review"
)

// DemoTasks are `serve --demo`'s configured tasks.
func DemoTasks() []TaskConfig {
	repo := demo.Repository()
	return []TaskConfig{
		{Name: DemoReadyTask, Repository: repo, Identity: IdentityConfig{RepositoryID: repo, TaskID: "unicode-words", PlanID: "demo"}},
		{Name: DemoApprovalTask, Repository: repo, Identity: IdentityConfig{RepositoryID: repo, TaskID: "unicode-words-review", PlanID: "demo"}},
	}
}

// seedDemo imports the demo plan into each demo task that has none yet and
// approves every item of the first, as a person would through the screen.
// It writes straight to the Store before the server listens: it is setup,
// not a user action, so it records no user action and no feedback event.
func (a *App) seedDemo() error {
	doc, err := plan.Parse(demo.Plan())
	if err != nil {
		return fmt.Errorf("demo plan: %w", err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		return fmt.Errorf("demo plan: %w", err)
	}
	for _, t := range DemoTasks() {
		key := t.identity().Key()
		if err := a.store.Update(func(tx *store.Tx) error {
			p, err := tx.Plan(key)
			if err != nil {
				return err
			}
			have, err := tx.PlanItems(key, p.Revision)
			if err != nil || len(have) > 0 {
				return err
			}
			rev, err := tx.ImportPlan(key, p.Revision, items)
			if err != nil || t.Name != DemoReadyTask {
				return err
			}
			for i := range items {
				if _, err := tx.Approve(key, i+1); err != nil {
					return err
				}
			}
			a.log.Info(fmt.Sprintf("demo: task %s has plan revision %d, every item approved: press Start", t.Name, rev))
			return nil
		}); err != nil {
			return fmt.Errorf("demo task %s: %w", t.Name, err)
		}
	}
	return nil
}
