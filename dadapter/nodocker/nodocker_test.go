package nodocker_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/nodocker"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestEveryOperationFailsWithoutSpawning: each operation answers once,
// with ErrNoDocker (recovery with an empty report), and none reports a
// process group.
func TestEveryOperationFailsWithoutSpawning(t *testing.T) {
	var d nodocker.D
	group := func(dadapter.ProcessGroup) { t.Error("a process group was reported") }
	errs := make(chan error, 6)
	d.PrepareTaskFilesystems(context.Background(), dadapter.StorageOwner{}, dadapter.Source{}, group, func(fs dadapter.TaskFilesystems, err error) { errs <- err })
	d.CreateTaskClone(context.Background(), t.TempDir(), dadapter.Source{}, group, func(_ dadapter.Clone, err error) { errs <- err })
	d.ExportTaskDiff(context.Background(), nil, 10, func(_ dadapter.ExportResult, err error) { errs <- err })
	d.CommitTaskChanges(context.Background(), nil, func(_ dadapter.Bundle, err error) { errs <- err })
	d.RemoveTaskFilesystems(nil, func(err error) { errs <- err })
	if _, err := d.Start(dadapter.InvocationInput{}); !errors.Is(err, nodocker.ErrNoDocker) {
		t.Errorf("Start: %v", err)
	}
	for i := 0; i < 5; i++ {
		if err := <-errs; !errors.Is(err, nodocker.ErrNoDocker) {
			t.Errorf("operation %d: %v", i, err)
		}
	}
	rep := make(chan dadapter.RecoveryReport, 1)
	d.RecoverLeftovers(context.Background(), "0123456789abcdef0123456789abcdef", func(r dadapter.RecoveryReport, err error) {
		if err != nil {
			t.Errorf("RecoverLeftovers: %v", err)
		}
		rep <- r
	})
	if r := <-rep; len(r.Storage) != 0 || len(r.Unowned) != 0 {
		t.Errorf("RecoverLeftovers reported %+v", r)
	}
}

// TestProductionRunnerWithoutDocker wires the runner as `codeboost serve`
// does (goroutine loop, real clock, real SQLite file, nodocker): an admitted
// attempt fails at its first preparation step with a clear message, frees
// its slot, and leaves no "preparation starting" mark that would keep the
// next start's admission closed.
func TestProductionRunnerWithoutDocker(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "codeboost.db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loop := runner.NewGoroutineLoop()
	defer loop.Stop()
	owner := ids.Random{}.Token()
	c, err := runner.New(runner.Config{Root: dir, Owner: owner}, runner.Deps{
		Store: st, Capability: st.ShutdownCapability(), D: nodocker.D{}, Clock: runner.NewRealClock(), Loop: loop, IDs: ids.Random{},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Recover(context.Background())
	<-c.RecoveryDone()
	if r := c.Recovery(); !r.Opened() {
		t.Fatalf("recovery: %+v", r)
	}
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}})
	}); err != nil {
		t.Fatal(err)
	}
	attemptID, err := c.Admit(context.Background(), runner.AdmitRequest{PlanKey: id.Key(), Kind: words.KindExecute})
	if err != nil {
		t.Fatal(err)
	}
	var a store.Attempt
	for i := 0; ; i++ {
		if a, _ = st.Attempt(attemptID); words.Terminal(a.State) && c.SlotsUsed() == 0 {
			break
		}
		if i > 500 {
			t.Fatalf("the attempt did not end: %+v (slots %d)", a, c.SlotsUsed())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a.State != words.Failed || !strings.Contains(a.Diagnostic, "no agent is configured") {
		t.Errorf("attempt ended %s %q", a.State, a.Diagnostic)
	}
	if a.PreparationStartedAt != nil {
		t.Errorf("the attempt keeps a preparation-starting mark with no process behind it")
	}
	if err := c.StopJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.Drained()
}

// closeCounter is an output sink that counts its Closes.
type closeCounter struct{ closes int }

func (c *closeCounter) Write(p []byte) (int, error) { return len(p), nil }
func (c *closeCounter) Close() error                { c.closes++; return nil }

// TestStartClosesTheOutputSink: D owns the live output sink from Start on,
// so a Start that fails closes it, once, before returning.
func TestStartClosesTheOutputSink(t *testing.T) {
	sink := &closeCounter{}
	if _, err := (nodocker.D{}).Start(dadapter.InvocationInput{Output: sink}); !errors.Is(err, nodocker.ErrNoDocker) {
		t.Fatalf("Start: %v", err)
	}
	if sink.closes != 1 {
		t.Errorf("sink closed %d times, want 1", sink.closes)
	}
}
