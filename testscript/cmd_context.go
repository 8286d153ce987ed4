package testscript

import (
	"context"

	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Context changes: a new plan revision, snapshot, assignment or code,
// through the runner or unseen by it.

func init() {
	register(
		Command{Name: "revise", Kind: Action, Usage: "[!] revise TASK [unseen]",
			Summary: "imports the plan's next revision; with unseen the runner is not told (another transaction it had not yet seen)",
			Example: "revise T1", Run: contextCmd(func(tx *store.Tx, key string, _ []string) error {
				p, err := tx.PresentContext(key)
				if err != nil {
					return err
				}
				_, err = tx.ImportRevision(key, p.PlanRevision, []string{"item 1"})
				return err
			}, 0)},
		Command{Name: "import-plan", Kind: Action, Usage: "[!] import-plan TASK FILE [unseen]",
			Summary: "imports the plan document FILE (docs/plan-format.md, from the scenario's archive) as the plan's next revision, each item with its spec: a person's plan, or its amendment",
			Example: "import-plan T1 amended.json", Run: cmdImportPlan},
		Command{Name: "new-snapshot", Kind: Action, Usage: "[!] new-snapshot TASK SNAPSHOT [unseen]",
			Summary: "records a new review snapshot for the task's plan",
			Example: "new-snapshot T1 s2", Run: contextCmd(func(tx *store.Tx, key string, a []string) error {
				return tx.ChangeSnapshot(key, a[0])
			}, 1)},
		Command{Name: "reassign", Kind: Action, Usage: "[!] reassign TASK ASSIGNMENT [unseen]",
			Summary: "gives the task's work to another assignment (plan revision and snapshot unchanged)",
			Example: "reassign T1 a2", Run: contextCmd(func(tx *store.Tx, key string, a []string) error {
				return tx.Reassign(key, a[0])
			}, 1)},
		Command{Name: "move-code", Kind: Action, Usage: "[!] move-code TASK COMMIT [unseen]",
			Summary: "records a ledger entry that moves the task's referenced code",
			Example: "move-code T1 c2", Run: contextCmd(func(tx *store.Tx, key string, a []string) error {
				return tx.RecordHistory(key, "", a[0])
			}, 1)},
	)
}

func cmdImportPlan(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: import-plan TASK FILE [unseen]")
	}
	doc, err := plan.Parse([]byte(ts.ReadFile(a.pos[1])))
	if err != nil {
		ts.Fatalf("%s: %v", a.pos[1], err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		ts.Fatalf("%s: %v", a.pos[1], err)
	}
	rest := a
	rest.pos = append([]string{a.pos[0]}, a.pos[2:]...)
	contextCmd(func(tx *store.Tx, key string, _ []string) error {
		p, err := tx.PresentContext(key)
		if err != nil {
			return err
		}
		_, err = tx.ImportPlan(key, p.PlanRevision, items)
		return err
	}, 0)(ts, neg, rest)
}

// contextCmd builds a context-changing command: through the runner (which
// then notices staleness) or, with "unseen", straight to the Store.
func contextCmd(change func(tx *store.Tx, key string, args []string) error, nargs int) func(*gts.TestScript, bool, argSet) {
	return func(ts *gts.TestScript, neg bool, a argSet) {
		args := a.pos
		s := get(ts)
		w := s.world(ts)
		unseen := len(args) > 0 && args[len(args)-1] == "unseen"
		if unseen {
			args = args[:len(args)-1]
		}
		if len(args) != 1+nargs {
			ts.Fatalf("wrong number of arguments")
		}
		key := s.planKey(ts, args[0])
		rest := args[1:]
		var err error
		if unseen {
			err = w.Store.Update(func(tx *store.Tx) error { return change(tx, key, rest) })
		} else {
			err = w.Runner.ChangeContext(context.Background(), key, func(tx *store.Tx) error { return change(tx, key, rest) })
		}
		s.expect(ts, neg, "context change", err)
	}
}
