package testscript

import (
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Plan runs: the user's start and resume, the approvals they require, and
// naming the items a run admits on its own.

func init() {
	register(
		Command{Name: "start", Kind: Action, Keys: planActionKeys, Usage: "[!] start TASK [as=NAME] [action=NAME] [sv=N] [rv=N]",
			Summary: "the user's \"start\", as a user action: runs the task's approved plan from its first item, one execute attempt per item; sv and rv default to the task's present state and review versions",
			Example: "start T1 as=A", Run: cmdPlanAction("start")},
		Command{Name: "resume", Kind: Action, Keys: planActionKeys, Usage: "[!] resume TASK [as=NAME] [action=NAME] [sv=N] [rv=N]",
			Summary: "the user's \"resume\", as a user action: continues the plan run at the first item with no completed execute attempt at the current revision, claiming a recovery requeue by compare-and-swap",
			Example: "resume T1 as=B", Run: cmdPlanAction("resume")},
		Command{Name: "approve", Kind: Action, Keys: []Key{K("item", Int)}, Usage: "[!] approve TASK [item=N]",
			Summary: "a person approves one item (default: every item) of the current revision at the current snapshot; each approval takes the next review version",
			Example: "approve T1", Run: cmdApprove},
	)
}

// planActionKeys are start's and resume's.
var planActionKeys = []Key{K("as", Name), K("action", ActionName), K("sv", Int), K("rv", Int)}

func (s *scenario) reviewVersion(ts *gts.TestScript, planKey string, a argSet) int {
	if n, ok := a.num("rv"); ok {
		return n
	}
	return s.presentReviewVersion(ts, planKey)
}

// presentReviewVersion is the plan's review version as stored now.
func (s *scenario) presentReviewVersion(ts *gts.TestScript, planKey string) int {
	var plan store.Plan
	err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { plan, err = tx.Plan(planKey); return })
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return plan.ReviewVersion
}

func cmdApprove(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: approve TASK [item=N]")
	}
	key := s.planKey(ts, a.pos[0])
	err := w.Store.Update(func(tx *store.Tx) error {
		if n, ok := a.num("item"); ok {
			_, err := tx.Approve(key, n)
			return err
		}
		plan, err := tx.Plan(key)
		if err != nil {
			return err
		}
		items, err := tx.PlanItems(key, plan.Revision)
		if err != nil {
			return err
		}
		for _, it := range items {
			if _, err := tx.Approve(key, it.Item); err != nil {
				return err
			}
		}
		return nil
	})
	s.expect(ts, neg, "approve", err)
}

func cmdPlanAction(kind string) func(ts *gts.TestScript, neg bool, a argSet) {
	return func(ts *gts.TestScript, neg bool, a argSet) {
		s := get(ts)
		w := s.world(ts)
		if len(a.pos) != 1 {
			ts.Fatalf("usage: %s TASK [as=NAME] [action=NAME] [sv=N] [rv=N]", kind)
		}
		key := s.planKey(ts, a.pos[0])
		r := runner.ActionRequest{PlanKey: key, ExpectedStateVersion: s.stateVersion(ts, key, a),
			ExpectedReviewVersion: s.reviewVersion(ts, key, a), ActionID: s.action(a)}
		run := w.Runner.Start
		if kind == "resume" {
			run = w.Runner.Resume
		}
		s.admitting(ts, neg, a, kind, run, r)
	}
}
