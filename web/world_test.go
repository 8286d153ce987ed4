package web

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/sim/simenv"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
)

// simWorld is what the handler tests serve: the real Store on a SQLite
// file, the real runner, Ask, merge and suggestion coordinators, on the
// simulated parts (package sim/simenv), with every event delivered on the
// test's goroutine. It is this package's test fixture, built the way a
// runner's own tests build their coordinator: package sim's worlds boot
// the whole process through package app, which imports this package, so
// its tests cannot use them. Ask is built but not opened (a test that
// needs questions opens it).
type simWorld struct {
	DBPath  string
	Clock   *simenv.Clock
	Loop    *simenv.Loop
	FP      *failpoints.Set
	Store   *store.Store
	Runner  *runner.Coordinator
	Ask     *ask.Coordinator
	Merge   *merge.Coordinator
	Suggest *suggest.Coordinator
	Planner *simenv.Planner
	GitHub  *simenv.GitHub
	// TaskPRs names each task's pull request, by plan key.
	TaskPRs map[string]prRef
}

// prRef is a task's pull request on the simulated GitHub.
type prRef struct {
	Repo   string
	Number int
}

func newSimWorld(t testing.TB) *simWorld {
	t.Helper()
	dir := t.TempDir()
	loop := &simenv.Loop{}
	w := &simWorld{DBPath: filepath.Join(dir, "codeboost.db"), Loop: loop, Clock: simenv.NewClock(loop), FP: failpoints.New(),
		TaskPRs: map[string]prRef{}, GitHub: simenv.NewGitHub(nil), Planner: simenv.NewPlanner(func(string) {})}
	idSource := ids.NewSeeded(1)
	st, capability, root, owner, askOwner := openTestStore(t, dir, w.Clock.Now, idSource, w.FP)
	w.Store = st
	d := simd.NewD(func(id string) string { return id }, func(string) {})
	d.Now = w.Clock.Now
	var err error
	if w.Runner, err = runner.New(runner.Config{Root: root, Owner: owner}, runner.Deps{
		Store: st, Capability: capability, D: d, Clock: w.Clock, Loop: loop, IDs: idSource, Failpoints: w.FP,
		StopGroup: func(_ context.Context, g dadapter.ProcessGroup) error { return d.StopGroup(g) },
	}); err != nil {
		t.Fatal(err)
	}
	if w.Merge, err = merge.New(merge.Config{Store: st, Capability: capability, Host: w.GitHub, Loop: loop, IDs: idSource,
		Failpoints: w.FP, PullRequest: func(planKey string) (string, int, bool) {
			r, ok := w.TaskPRs[planKey]
			return r.Repo, r.Number, ok
		}}); err != nil {
		t.Fatal(err)
	}
	if w.Ask, err = ask.New(ask.Config{Store: st, Capability: capability, D: d, Loop: loop, Clock: w.Clock, IDs: idSource, Owner: askOwner}); err != nil {
		t.Fatal(err)
	}
	if w.Suggest, err = suggest.New(suggest.Config{Store: st, Capability: capability, Loop: loop, Clock: w.Clock, IDs: idSource, Provider: w.Planner}); err != nil {
		t.Fatal(err)
	}
	if err := w.Runner.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

// openTestStore opens the Store of a test world in dir, on its clock, ID
// source and failpoints, with the runner's and Ask's owner tokens for its
// file and the runner root made: what both of this package's test worlds
// (simWorld, uiWorld) start from. The Store closes when the test ends.
func openTestStore(t testing.TB, dir string, now func() time.Time, idSource *ids.Seeded, fp *failpoints.Set) (
	st *store.Store, capability store.Capability, root, owner, askOwner string) {
	t.Helper()
	db := filepath.Join(dir, "codeboost.db")
	st, err := store.Open(db, store.Options{Now: now, IDs: idSource, Failpoints: fp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var fi syscall.Stat_t
	if err := syscall.Stat(db, &fi); err != nil {
		t.Fatal(err)
	}
	capability = st.ShutdownCapability()
	if err := capability.Update(func(tx *store.Tx) (err error) {
		if owner, err = tx.RunnerOwnerToken(uint64(fi.Dev), fi.Ino, idSource.Token); err != nil {
			return err
		}
		askOwner, err = tx.AskOwnerToken(uint64(fi.Dev), fi.Ino, idSource.Token)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(dir, "codeboost-runner")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return st, capability, root, owner, askOwner
}
