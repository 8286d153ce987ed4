package testscript

import (
	"context"
	"fmt"
	"github.com/codeboost/codeboost/plan"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func init() {
	register(
		Command{Name: "cancel", Kind: Action, Keys: actionKeys, Usage: "[!] cancel ATTEMPT [action=NAME] [sv=N]",
			Summary: "the user's cancel attempt, as a user action; prints the response's outcome and message",
			Example: "cancel A action=c1", Run: cmdCancel},
		Command{Name: "cancel-task", Kind: Action, Keys: actionKeys, Usage: "[!] cancel-task TASK [action=NAME] [sv=N]",
			Summary: "the user's cancel task, as a user action (\"Stopping, then cancelling\" while an attempt is active)",
			Example: "cancel-task T1", Run: cmdCancelTask},
		Command{Name: "retry", Kind: Action, Keys: admittingKeys, Usage: "[!] retry ATTEMPT [as=NAME] [action=NAME] [sv=N]",
			Summary: "the user's retry of a failed or cancelled attempt, as a user action",
			Example: "retry A as=B", Run: cmdRetry},
		Command{Name: "run-again", Kind: Action, Keys: admittingKeys, Usage: "[!] run-again ATTEMPT [as=NAME] [action=NAME] [sv=N]",
			Summary: "\"Run again on the current code\" for a stale attempt, as a user action",
			Example: "run-again A as=B", Run: cmdRunAgain},
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

// actionKeys are a user action's: its action ID and expected state version.
var actionKeys = []Key{K("action", ActionName), K("sv", Int)}

// admittingKeys are a user action's that may admit an attempt, which gets
// the as= name.
var admittingKeys = []Key{K("as", Name), K("action", ActionName), K("sv", Int)}

func printResponse(ts *gts.TestScript, s *scenario, r store.Response) {
	fmt.Fprintf(ts.Stdout(), "outcome: %s\n", r.Outcome)
	if r.Message != "" {
		fmt.Fprintf(ts.Stdout(), "message: %s\n", r.Message)
	}
	if r.Replayed {
		fmt.Fprintf(ts.Stdout(), "replayed\n")
	}
	if r.AttemptID != "" {
		fmt.Fprintf(ts.Stdout(), "attempt: %s\n", s.w.Name(r.AttemptID))
	}
}

func (s *scenario) actionRequest(ts *gts.TestScript, a argSet, attemptName string) runner.ActionRequest {
	id := s.attempt(ts, attemptName)
	at, err := s.world(ts).Store.Attempt(id)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return runner.ActionRequest{PlanKey: at.PlanKey, AttemptID: id, ExpectedStateVersion: s.stateVersion(ts, at.PlanKey, a),
		ActionID: s.action(a)}
}

func cmdCancel(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: cancel ATTEMPT [k=v...]")
	}
	resp, err := s.world(ts).Runner.CancelAttempt(context.Background(), s.actionRequest(ts, a, a.pos[0]))
	printResponse(ts, s, resp)
	s.expect(ts, neg, "cancel", err)
}

func cmdCancelTask(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: cancel-task TASK [k=v...]")
	}
	key := s.planKey(ts, a.pos[0])
	r := runner.ActionRequest{PlanKey: key, ExpectedStateVersion: s.stateVersion(ts, key, a), ActionID: s.action(a)}
	resp, err := s.world(ts).Runner.CancelTask(context.Background(), r)
	printResponse(ts, s, resp)
	s.expect(ts, neg, "cancel-task", err)
}

func cmdRetry(ts *gts.TestScript, neg bool, a argSet)    { again(ts, neg, a, "retry") }
func cmdRunAgain(ts *gts.TestScript, neg bool, a argSet) { again(ts, neg, a, "run-again") }

func again(ts *gts.TestScript, neg bool, a argSet, what string) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: %s ATTEMPT [as=NAME] [k=v...]", what)
	}
	f := w.Runner.Retry
	if what == "run-again" {
		f = w.Runner.RunAgain
	}
	s.admitting(ts, neg, a, what, f, s.actionRequest(ts, a, a.pos[0]))
}

// admitting runs a user action that may admit an attempt: the attempt gets
// the as= name, and the response is printed and checked.
func (s *scenario) admitting(ts *gts.TestScript, neg bool, a argSet, what string, act func(context.Context, runner.ActionRequest) (store.Response, error), r runner.ActionRequest) {
	if name := a.str("as"); name != "" {
		if err := s.world(ts).NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := act(context.Background(), r)
	printResponse(ts, s, resp)
	s.expect(ts, neg, what, err)
}

// contextCmd builds a context-changing command: through the runner (which
// then notices staleness) or, with "unseen", straight to the Store.
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
