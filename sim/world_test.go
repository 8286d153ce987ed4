package sim

import (
	"context"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

func TestHappyPath(t *testing.T) {
	w, err := NewWorld(t.TempDir(), Config{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	key := store.Identity{RepositoryID: "r", TaskID: "t1", PlanID: "p"}.Key()
	if err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: store.Identity{RepositoryID: "r", TaskID: "t1", PlanID: "p"}, SnapshotID: "s1", Items: []string{"one"}})
	}); err != nil {
		t.Fatal(err)
	}
	id, err := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: key, Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	w.Alias(id, "A")
	h := w.D.Handle(id)
	if h == nil {
		t.Fatalf("not started; trace:\n%s", w.Lines())
	}
	h.Settle(dadapter.Settlement{ExitCode: 0, Output: []byte(`{"ok":true}`)})
	w.Loop.Drain()
	a, _ := w.Store.Attempt(id)
	if a.State != words.Completed {
		t.Fatalf("state %s diag %q\n%v", a.State, a.Diagnostic, w.Lines())
	}
	if w.Runner.SlotsUsed() != 0 {
		t.Fatal("slot held")
	}
	for _, l := range w.Lines() {
		t.Log(l)
	}
}
