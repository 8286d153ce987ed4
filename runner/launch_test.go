package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// outputD is goD that hands each Start's input to the test.
type outputD struct {
	*goD
	started chan dadapter.InvocationInput
}

func (d outputD) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	d.started <- in
	return d.goD.Start(in)
}

// discardSink is a live output sink that keeps nothing.
type discardSink struct{ attemptID string }

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) Close() error                { return nil }

// TestLaunchHandsDTheOutputSink: D's start call carries the live output
// sink Deps.Output returns for that very attempt, so D can stream it.
func TestLaunchHandsDTheOutputSink(t *testing.T) {
	d := outputD{goD: &goD{handles: map[string]*goHandle{}}, started: make(chan dadapter.InvocationInput, 1)}
	c, st, _ := productionCoordinator(t, 1, d)
	c.deps.Output = func(attemptID string) dadapter.OutputSink { return discardSink{attemptID} }
	c.Open(context.Background())
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
		t.Fatal(err)
	}
	attemptID, err := c.Admit(context.Background(), AdmitRequest{PlanKey: id.Key(), Kind: words.KindReview})
	if err != nil {
		t.Fatal(err)
	}
	in := <-d.started
	if got, ok := in.Output.(discardSink); !ok || got.attemptID != attemptID {
		t.Errorf("Start's output sink = %#v, want the sink for %s", in.Output, attemptID)
	}
}

// TestCheckAttemptsAreCredentialFree: the production runner accepts
// "execute and credential-free check attempts": an execute attempt gets
// the profile's credentials (its Env allow-list), a check attempt none.
//
// kills: mutant/check-gets-credentials
func TestCheckAttemptsAreCredentialFree(t *testing.T) {
	for _, c := range []struct {
		kind string
		want []string
	}{{words.KindExecute, []string{"AGENT_TOKEN"}}, {words.KindCheck, nil}} {
		d := outputD{goD: &goD{handles: map[string]*goHandle{}}, started: make(chan dadapter.InvocationInput, 1)}
		co, st, _ := productionCoordinator(t, 1, d)
		co.cfg.Profile.Env = []string{"AGENT_TOKEN"}
		co.Open(context.Background())
		id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
		if err := st.Update(func(tx *store.Tx) error { return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s"}) }); err != nil {
			t.Fatal(err)
		}
		if _, err := co.Admit(context.Background(), AdmitRequest{PlanKey: id.Key(), Kind: c.kind}); err != nil {
			t.Fatal(err)
		}
		if in := <-d.started; !slices.Equal(in.Profile.Env, c.want) {
			t.Errorf("%s attempt started with Env %q, want %q", c.kind, in.Profile.Env, c.want)
		}
	}
}
