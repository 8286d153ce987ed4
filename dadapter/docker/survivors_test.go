package docker

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestAbortedCommitReportsTheAbort guards CommitTaskChanges' answer when
// it is aborted while its container runs: the abort is the error (F tells
// an abort from a failed commit by it, and records no refusal for it), not
// a complaint about output the container never got to write. The abort is
// pinned to the attach, held by the proxy until the context ends, so the
// helper container exists but has said nothing; it is removed before done.
// Sweep survivor (seed 31337): dadapter/docker/commit.go:D.commit:ignore-error:31d5f59c~2.
func TestAbortedCommitReportsTheAbort(t *testing.T) {
	w := newWorld(t)
	p := newProxy(t, w.cli)
	d := w.adapter(p.newClient(t), hungOptions)
	st := w.prepare(w.adapter(nil), dtest.NewToken())
	lend(t, d, st)
	p.Stall(func(r string) bool { return strings.Contains(r, "/attach") })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // abort once the commit's attach is held
		deadline := time.Now().Add(time.Minute)
		for len(p.Held()) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	b, err := commit(t, ctx, d, st)
	t.Logf("the aborted commit: %v", err)
	if !errors.Is(err, context.Canceled) || b.Commit != "" || b.Data != nil {
		t.Errorf("commit aborted at its attach: %+v, %v; want no bundle and Canceled", b, err)
	}
	if len(p.Held()) == 0 {
		t.Errorf("no attach was held: the commit was not aborted while its container was there")
	}
	p.Resume()
	if h := w.helpers(st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}

// TestExportAbortedWithACauseGetsContextsError guards the rule that an
// engine call cut short by an abort failed because of the abort (stopped):
// F's abort may carry a cause (context.WithCancelCause), which the HTTP
// transport returns in place of context.Canceled, so the engine call's own
// error no longer says it was an abort. The export and the commit must
// still fail with the context's error, so that F reads an abort as one
// and not as an engine that failed, and must leave no helper container.
// Sweep survivor (seed 31337): dadapter/docker/containers.go:stopped:ignore-error:92d7907f.
func TestExportAbortedWithACauseGetsContextsError(t *testing.T) {
	s := newSeeded(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the attempt was cancelled by its user")
	cancel(cause)
	if _, err := export(t, ctx, s.d, s.st, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("export aborted with a cause: %v, want Canceled", err)
	} else {
		t.Logf("the aborted export: %v", err)
	}
	if _, err := commit(t, ctx, s.d, s.st); !errors.Is(err, context.Canceled) {
		t.Errorf("commit aborted with a cause: %v, want Canceled", err)
	}
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}

// plantForeign plants, under name, a volume or a container that carries no
// label of codeboost's (another program's object), and removes it when the
// test ends: the leak check would not see it.
func (w *world) plantForeign(kind dadapter.ResourceKind, name string) {
	w.t.Helper()
	w.plant(kind, name, nil)
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		if kind == dadapter.KindVolume {
			_, err = w.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
		} else {
			_, err = w.cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true})
		}
		if err != nil {
			w.t.Errorf("remove the planted %s %s: %v", kind, name, err)
		}
	})
}

// TestStorageRefusesForeignObjectsUnderItsNames: an allocation makes its
// work volume, its meta volume and its keeper under names made from its
// ID. Another program's object already under one of the later names (the
// meta volume: the engine hands back the existing volume, whose labels are
// not the allocation's; the keeper: the engine refuses the name) refuses
// the allocation with that object named, removes what the allocation made,
// and leaves the other program's object alone. Going on would seed task
// storage into a volume the runner does not own, or with no keeper to
// hold its volumes.
// Sweep survivors (seed 8675309): dadapter/docker/storage_ops.go:allocation.run:ignore-error:31d5f59c~2
// and dadapter/docker/storage_ops.go:allocation.createKeeper:ignore-error:31d5f59c.
func TestStorageRefusesForeignObjectsUnderItsNames(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	repo, head := userRepo(t)
	src := dadapter.Source{Repository: repo, Commit: head}
	for _, c := range []struct {
		kind  dadapter.ResourceKind
		part  Kind
		wants string
	}{
		{dadapter.KindVolume, KindMeta, "is not this allocation's"},
		{dadapter.KindContainer, KindKeeper, "create the keeper"},
	} {
		owner := newOwner(dtest.NewToken())
		name := objectName(c.part, owner.AllocationID)
		w.plantForeign(c.kind, name)
		got, err := allocate(t, context.Background(), d, owner, src, nil)
		if err == nil || !strings.Contains(err.Error(), c.wants) || !strings.Contains(err.Error(), name) {
			t.Errorf("a foreign %s under the %s's name: %v, %v; want a refusal naming %s (%s)", c.kind, c.part, got, err, name, c.wants)
			if err == nil {
				w.remove(d, got)
			}
		}
		if left := w.labelled(owner.AllocationID); len(left) > 0 {
			t.Errorf("the refused allocation left %v", left)
		}
	}
}

// TestStorageRefusesABaseThatIsNotACommit: the base an allocation is
// seeded from must be a commit of the user's repository. A fetch by ID
// brings any object, a tree too, so the materialization checks what it
// fetched and refuses a tree ("is not a commit"); the allocation fails with
// that refusal and leaves nothing, rather than going on to a clone that
// fails for a reason the person cannot act on.
// Sweep survivor (seed 8675309): dadapter/docker/storage_ops.go:allocation.stage:ignore-error:51a0de03.
func TestStorageRefusesABaseThatIsNotACommit(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	repo, head := userRepo(t)
	out, err := exec.Command("git", "-C", repo, "rev-parse", head+"^{tree}").Output()
	if err != nil {
		t.Fatal(err)
	}
	tree := strings.TrimSpace(string(out))
	owner := newOwner(dtest.NewToken())
	got, err := allocate(t, context.Background(), d, owner, dadapter.Source{Repository: repo, Commit: tree}, nil)
	if err == nil || !strings.Contains(err.Error(), tree+" in "+repo+" is not a commit") {
		t.Errorf("an allocation on the tree %s: %v, %v; want the materialization's refusal", tree, got, err)
		if err == nil {
			w.remove(d, got)
		}
	}
	if left := w.labelled(owner.AllocationID); len(left) > 0 {
		t.Errorf("the refused allocation left %v", left)
	}
}
