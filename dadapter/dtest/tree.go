package dtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// The contract sentence every tree case checks a part of (publication
// step 2, #81): "Last before launch, F calls D's checkTaskTree with the
// clone's head and the item's file operations (#81) and passes the result
// to the start call, which mounts every gitlink empty and read-only. A
// TaskTreeRefused (the tree is not a clean copy of the head, or an
// operation does not fit it) is a safety finding that sends the task to
// needs human; any other check failure fails the attempt." The Source's
// head holds README.md and .gitignore (Impl.Source), and no gitlink.

// treeFitsAFreshStorage: "F calls D's checkTaskTree with the clone's head
// and the item's file operations … and passes the result to the start
// call": freshly prepared storage is a clean copy of its base, which is
// the clone's head; a modify of README.md and a create of a new path fit
// it, so the answer is that head, with no gitlinks, and Start takes it.
func treeFitsAFreshStorage(s *suite) {
	a := s.prepared(s.impl.Owner())
	if a.clone.Head != a.fs.Base() {
		s.t.Fatalf("the clone's head %q is not the storage's base %q", a.clone.Head, a.fs.Base())
	}
	t, err := s.checkTree(a, a.clone.Head, []dadapter.FileOperation{
		{Op: "modify", Path: "README.md"},
		{Op: "create", Path: "notes/new.md"},
	})
	if err != nil {
		s.t.Fatalf("CheckTaskTree of fresh storage: %v", err)
	}
	if t.Head != a.clone.Head || len(t.Gitlinks) > 0 {
		s.t.Errorf("CheckTaskTree answered %s, want head %q and no gitlinks", treeString(t), a.clone.Head)
	}
	in := s.input(a, "succeed")
	in.Tree = t
	if r := s.await(s.start(a, in)); r.StopReason != words.StopNone || r.ExitCode != 0 {
		s.t.Errorf("the agent started with the checked tree: stop reason %q, exit %d (%s); want none, 0", r.StopReason, r.ExitCode, r.Diagnostic)
	}
	s.remove(a.fs)
}

// treeRefusesACreateOfAnExistingPath: "A TaskTreeRefused (… an operation
// does not fit it)": a create of README.md, which the head holds, does
// not fit, and the refusal is ErrTaskTreeRefused, not a check that failed.
func treeRefusesACreateOfAnExistingPath(s *suite) {
	a := s.prepared(s.impl.Owner())
	s.wantRefused(a, a.clone.Head, []dadapter.FileOperation{{Op: "create", Path: "README.md"}})
	s.remove(a.fs)
}

// treeRefusesAnotherHead: "A TaskTreeRefused (the tree is not a clean copy
// of the head …)": storage seeded from its base cannot be a copy of
// another head, so a check with one is refused.
func treeRefusesAnotherHead(s *suite) {
	a := s.prepared(s.impl.Owner())
	other := "1111111111111111111111111111111111111111"
	if other == a.fs.Base() {
		s.t.Fatalf("the storage's base is the suite's other head %s", other)
	}
	s.wantRefused(a, other, nil)
	s.remove(a.fs)
}

// treeOfRemovedStorageFails: "any other check failure fails the attempt":
// removed storage cannot be checked, and that is an error that is not a
// refusal (a safety finding would blame the tree for D's own state).
func treeOfRemovedStorageFails(s *suite) {
	a := s.prepared(s.impl.Owner())
	s.remove(a.fs)
	t, err := s.checkTree(a, a.clone.Head, []dadapter.FileOperation{{Op: "modify", Path: "README.md"}})
	switch {
	case err == nil:
		s.t.Errorf("CheckTaskTree of removed storage answered %s, want an error", treeString(t))
	case errors.Is(err, dadapter.ErrTaskTreeRefused):
		s.t.Errorf("CheckTaskTree of removed storage: %v; want a check that failed, not ErrTaskTreeRefused", err)
	}
}

// startRefusesATreeOfAnotherHead: "passes the result to the start call":
// Start "refuses a Tree whose Head is not Clone.Head" (dadapter's
// InvocationInput), as it refuses any input it cannot run, with an error
// and nothing allocated.
func startRefusesATreeOfAnotherHead(s *suite) {
	a := s.prepared(s.impl.Owner())
	in := s.input(a, "succeed")
	in.Tree = dadapter.TaskTree{Head: "1111111111111111111111111111111111111111"}
	sink := &Sink{}
	in.Output = sink
	if h, err := s.d().Start(in); err == nil || h != nil {
		s.t.Errorf("Start accepted a tree checked for head %q with the clone at %q (handle %v, error %v)", in.Tree.Head, a.clone.Head, h, err)
		if h != nil {
			settled := track[dadapter.Settlement](s, "OnSettled of the wrongly started %s", a.id)
			h.OnSettled(settled.add)
			h.Cancel(words.StopCancelled)
			wait(s, settled)
		}
	}
	if n := sink.Closes(); n != 1 {
		s.t.Errorf("Start refused the tree with the sink closed %d times, want once", n)
	}
	s.remove(a.fs)
}

// wantRefused checks a's tree against head and ops and requires
// ErrTaskTreeRefused.
func (s *suite) wantRefused(a *attempt, head string, ops []dadapter.FileOperation) {
	s.t.Helper()
	t, err := s.checkTree(a, head, ops)
	if !errors.Is(err, dadapter.ErrTaskTreeRefused) {
		s.t.Errorf("CheckTaskTree(%q, %v): %s, %v; want ErrTaskTreeRefused", head, ops, treeString(t), err)
		return
	}
	s.t.Logf("refused: %v", err)
}

// checkTree runs CheckTaskTree over a's storage and waits for its done,
// requiring that no helper of the attempt is left by then ("It reads and
// never changes the storage", dadapter.D).
func (s *suite) checkTree(a *attempt, head string, ops []dadapter.FileOperation) (dadapter.TaskTree, error) {
	s.t.Helper()
	done := track[result[dadapter.TaskTree]](s, "CheckTaskTree(%s) done", a.id)
	s.d().CheckTaskTree(context.Background(), a.fs, head, ops, func(t dadapter.TaskTree, err error) {
		done.add(result[dadapter.TaskTree]{t, err})
	})
	r := wait(s, done)
	if left := of(s.objects(a.owner), RoleHelper, a.id); len(left) > 0 {
		s.t.Errorf("the tree check left:\n\t%s", join(left))
	}
	return r.v, r.err
}

func treeString(t dadapter.TaskTree) string {
	return fmt.Sprintf("head %q, gitlinks %q", t.Head, t.Gitlinks)
}
