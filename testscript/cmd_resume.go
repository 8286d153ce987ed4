package testscript

import (
	"github.com/codeboost/codeboost/runner"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func init() {
	register(Command{Name: "resume", Usage: "[!] resume TASK [as=NAME] [action=NAME] [sv=N]",
		Summary: "the user's \"Resume\", as a user action: admits the first item with no completed execute attempt at the current revision, claiming a recovery requeue by compare-and-swap",
		Example: "resume T1 as=B", Run: cmdResume})
}

func cmdResume(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	a := parse(args)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: resume TASK [as=NAME] [action=NAME] [sv=N]")
	}
	key := s.planKey(ts, a.pos[0])
	r := runner.ActionRequest{PlanKey: key, ExpectedStateVersion: s.stateVersion(ts, key, a), ActionID: s.action(a)}
	if name := a.kv["as"]; name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := w.Runner.Resume(r)
	printResponse(ts, s, resp)
	s.expect(ts, neg, "resume", err)
}
