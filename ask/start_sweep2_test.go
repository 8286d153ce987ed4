package ask_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// refusingStartD is the simulated D whose agent never starts.
type refusingStartD struct{ *simd.D }

func (refusingStartD) Start(dadapter.InvocationInput) (dadapter.Handle, error) {
	return nil, errors.New("no engine")
}

// TestQuestionWhoseAgentCannotStart: a question whose storage is ready but
// whose agent D refuses to start ends failed, saying why ("The agent
// could not start: …"), instead of being left pending with no agent.
//
// Sweep survivor (seed 20261203): ask/answer.go:Coordinator.storagePrepared:ignore-error:31d5f59c~2.
func TestQuestionWhoseAgentCannotStart(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loop := runner.NewGoroutineLoop()
	defer loop.Stop()
	d := refusingStartD{simd.NewD(func(id string) string { return id }, func(string) {})}
	c, err := ask.New(ask.Config{Store: st, Capability: st.ShutdownCapability(), D: d, Loop: loop, Clock: runner.NewRealClock(),
		IDs: ids.Random{}, Owner: ids.Random{}.Token()})
	if err != nil {
		t.Fatal(err)
	}
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}, Status: words.StatusInReview})
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.Opened()
	if err := c.OpenErr(ctx); err != nil {
		t.Fatalf("Ask stayed closed: %v", err)
	}
	resp, err := c.Ask(ctx, ask.Request{PlanKey: id.Key(), ActionID: ids.Random{}.UUID(), Text: "why?"})
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		qs, err := c.Questions(id.Key())
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) == 1 && qs[0].ID == resp.AttemptID && qs[0].Terminal() {
			if qs[0].State != store.QuestionFailed || !strings.Contains(qs[0].Reason, "The agent could not start: no engine") {
				t.Fatalf("question = %+v; want it failed saying the agent could not start", qs[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("questions = %+v; want question %s failed", qs, resp.AttemptID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
