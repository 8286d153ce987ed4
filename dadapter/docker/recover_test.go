package docker

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
	"github.com/codeboost/codeboost/words"
)

// recoverWith runs d's recovery for owner and waits for its done.
func recoverWith(t *testing.T, d *D, owner string) (dadapter.RecoveryReport, error) {
	t.Helper()
	type result struct {
		r   dadapter.RecoveryReport
		err error
	}
	done := make(chan result, 2)
	d.RecoverLeftovers(context.Background(), owner, func(r dadapter.RecoveryReport, err error) { done <- result{r, err} })
	r := waitFor(t, "RecoverLeftovers", done, 2*time.Minute)
	return r.r, r.err
}

// crash is the runner process dying, as far as its D can show it: what it
// held and ran is no longer its own. The handles' goroutines live on in
// the test process, where a real crash would end them; they settle once
// recovery has removed their containers.
func crash(d *D) {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.held)
	clear(d.handles)
}

// TestRecoverScopedToOwner: "Scoped recovery" and "Recovered storage
// handles": after runner A crashed with an agent running on its task
// storage, a new adapter's recovery for A removes A's agent container,
// keeps A's storage whole and returns it as a handle that names every part
// and the keeper's base and baseline (and that RemoveTaskFilesystems
// accepts); runner B's agent and storage, on the same engine, are not
// touched. A second recovery is refused while the handle is held.
func TestRecoverScopedToOwner(t *testing.T) {
	w := newWorld(t)
	ownerA, ownerB := dtest.NewToken(), dtest.NewToken()
	dA, dB := w.adapter(nil), w.adapter(nil)
	stA, stB := w.prepare(dA, ownerA), w.prepare(dB, ownerB)
	invA := start(t, dA, w.input(stA, "sleep"))
	invB := start(t, dB, w.input(stB, "sleep"))
	invA.awaitOutput("fakeagent: sleep")
	invB.awaitOutput("fakeagent: sleep")
	crash(dA)

	d := w.adapter(nil)
	r, err := recoverWith(t, d, ownerA)
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	if left := w.agents(stA.owner.AttemptID); len(left) > 0 {
		t.Errorf("recovery reported with A's agent containers %v still there", left)
	}
	if len(r.Storage) != 1 || len(r.Unowned) > 0 {
		t.Fatalf("report: %d storage handles, unowned %+v; want A's storage alone", len(r.Storage), r.Unowned)
	}
	got := r.Storage[0].(*storage)
	want := *stA
	if *got != want {
		t.Errorf("recovered handle %+v, want what the allocation returned, %+v", *got, want)
	}
	if _, err := recoverWith(t, d, ownerA); err == nil {
		t.Errorf("a second recovery ran while the recovered handle is held")
	}
	// The crashed process's handle ends once its container is gone.
	if s := invA.await(time.Minute); len(s.Unreleased) > 0 {
		t.Errorf("the crashed handle settled with unreleased %v", s.Unreleased)
	}
	if len(w.agents(stB.owner.AttemptID)) != 1 {
		t.Errorf("recovery for runner A removed runner B's agent")
	}
	w.remove(d, got)

	invB.h.Cancel(words.StopCancelled)
	invB.await(time.Minute)
}

// TestRecoverListsUnowned: "Unowned resources": objects with codeboost
// labels but no runner label (an older build's), this runner's objects of
// a kind D does not make or with incomplete owner labels, and storage
// whose parts disagree are listed with the exact command that removes
// each, and never removed; another runner's objects are neither listed
// nor touched. The printed commands, run by a person, remove them.
func TestRecoverListsUnowned(t *testing.T) {
	w := newWorld(t)
	owner, other := dtest.NewToken(), dtest.NewToken()
	suffix := dtest.NewID()[:8]
	alloc := dtest.NewID()
	full := func(runner string, k Kind) map[string]string {
		return ownerLabels(dadapter.StorageOwner{RunnerOwner: runner, AttemptID: dtest.NewID(), AllocationID: alloc}, k)
	}
	noAllocation := full(owner, KindAgent)
	delete(noAllocation, LabelAllocation)
	legacy := map[string]string{LabelKind: string(KindAgent)}
	plant := []struct {
		kind   dadapter.ResourceKind
		name   string
		labels map[string]string
		reason dadapter.UnownedReason // "": not listed
	}{
		{dadapter.KindVolume, "codeboost-legacy-" + suffix, legacy, dadapter.NoRunnerLabel},
		{dadapter.KindContainer, "codeboost-legacy-" + suffix, legacy, dadapter.NoRunnerLabel},
		{dadapter.KindVolume, "codeboost-mystery-" + suffix, full(owner, "mystery"), dadapter.UnknownKind},
		{dadapter.KindContainer, "codeboost-agent-incomplete-" + suffix, noAllocation, dadapter.UnknownKind},
		// Two parts of one allocation whose attempt labels disagree.
		{dadapter.KindVolume, "codeboost-task-work-" + suffix, full(owner, KindWork), dadapter.InconsistentStorage},
		{dadapter.KindVolume, "codeboost-task-meta-" + suffix, full(owner, KindMeta), dadapter.InconsistentStorage},
		{dadapter.KindVolume, "codeboost-other-" + suffix, full(other, KindAgent), ""},
	}
	var want []dadapter.Unowned
	for _, p := range plant {
		w.plant(p.kind, p.name, p.labels)
		if p.reason != "" {
			want = append(want, dadapter.Unowned{Kind: p.kind, Name: p.name, Reason: p.reason, Remove: dadapter.RemoveCommand(p.kind, p.name)})
		}
	}
	slices.SortFunc(want, func(a, b dadapter.Unowned) int {
		return strings.Compare(string(a.Kind)+" "+a.Name, string(b.Kind)+" "+b.Name)
	})

	d := w.adapter(nil)
	for round := 1; round <= 2; round++ { // the second finds them all again
		r, err := recoverWith(t, d, owner)
		if err != nil {
			t.Fatalf("recovery %d: %v", round, err)
		}
		if len(r.Storage) > 0 || !slices.Equal(r.Unowned, want) {
			t.Errorf("recovery %d: storage %d, unowned\n\t%+v\nwant no storage, unowned\n\t%+v", round, len(r.Storage), r.Unowned, want)
		}
	}
	for _, u := range want {
		runCommand(t, u.Remove)
	}
	// The other runner's object is its own recovery's to list.
	r, err := recoverWith(t, d, other)
	if err != nil || len(r.Unowned) != 1 || r.Unowned[0].Reason != dadapter.UnknownKind {
		t.Fatalf("the other runner's recovery: %+v, %v; want its one object, of unknown kind", r, err)
	}
	runCommand(t, r.Unowned[0].Remove)
}

// plant makes an object the adapter did not make, labelled as given: a
// container from the fake agent's image, never started.
func (w *world) plant(kind dadapter.ResourceKind, name string, labels map[string]string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch kind {
	case dadapter.KindVolume:
		_, err = w.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels})
	case dadapter.KindContainer:
		_, err = w.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
			Config: &container.Config{Image: w.agent, Cmd: []string{"succeed"}, Labels: labels}})
	case dadapter.KindNetwork:
		_, err = w.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Labels: labels})
	}
	if err != nil {
		w.t.Fatalf("plant %s %s: %v", kind, name, err)
	}
}

// runCommand is a person running a command recovery printed.
func runCommand(t *testing.T, command string) {
	t.Helper()
	t.Logf("running %q", command)
	if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", command, err, out)
	}
}

// TestRecoverRefusedWhileHeld: recovery refuses while this process holds
// task storage of the runner, or runs one of its invocations, and touches
// nothing; another runner's recovery is not refused; once the storage is
// removed, recovery runs.
func TestRecoverRefusedWhileHeld(t *testing.T) {
	w := newWorld(t)
	owner := dtest.NewToken()
	d := w.adapter(nil)
	st := w.prepare(d, owner)
	if _, err := recoverWith(t, d, owner); err == nil || !strings.Contains(err.Error(), "holds task storage") {
		t.Errorf("recovery while this process holds the runner's storage: %v, want a refusal", err)
	}
	if _, err := recoverWith(t, d, dtest.NewToken()); err != nil {
		t.Errorf("another runner's recovery: %v", err)
	}
	inv := start(t, d, w.input(st, "sleep"))
	inv.awaitOutput("fakeagent: sleep")
	// An invocation alone (its storage no longer held) refuses it too.
	d.mu.Lock()
	delete(d.held, st.owner.AllocationID)
	d.mu.Unlock()
	_, err := recoverWith(t, d, owner)
	if err == nil || !strings.Contains(err.Error(), "runs attempt") {
		t.Errorf("recovery while this process runs the runner's invocation: %v, want a refusal", err)
	}
	lend(t, d, st)
	if len(w.agents(st.owner.AttemptID)) != 1 {
		t.Errorf("a refused recovery touched the running agent")
	}
	inv.h.Cancel(words.StopCancelled)
	inv.await(time.Minute)
	w.remove(d, st)
	if r, err := recoverWith(t, d, owner); err != nil || len(r.Storage) > 0 {
		t.Errorf("recovery after the removal: %+v, %v; want an empty report", r, err)
	}
}

// TestRecoverFailsWholly: a leftover recovery cannot remove fails the
// call, naming what it did remove, and issues no handle even for storage
// it found; an engine it cannot reach fails it before anything is
// removed. A later recovery, with the engine answering, finishes the job.
func TestRecoverFailsWholly(t *testing.T) {
	w := newWorld(t)
	p := newProxy(t, w.cli) // before anything is made: it may end the test
	d := w.adapter(p.newClient(t), hungOptions)
	owner := dtest.NewToken()
	dA := w.adapter(nil)
	st := w.prepare(dA, owner)
	inv := start(t, dA, w.input(st, "sleep"))
	inv.awaitOutput("fakeagent: sleep")
	agent := w.onlyAgent(st.owner.AttemptID)
	network := "codeboost-network-" + st.owner.AllocationID
	w.plant(dadapter.KindNetwork, network, ownerLabels(st.owner, KindNetwork))
	crash(dA)

	p.Stall(func(r string) bool { return strings.HasPrefix(r, "DELETE ") && strings.Contains(r, "/networks/") })
	_, err := recoverWith(t, d, owner)
	t.Logf("recovery with network removals hanging: %v", err)
	if err == nil || !strings.Contains(err.Error(), "could not remove network "+network) || !strings.Contains(err.Error(), "removed container") || !strings.Contains(err.Error(), short(agent)) {
		t.Errorf("recovery error %v, want one naming the network it could not remove and the container it removed", err)
	}
	if len(d.held) > 0 {
		t.Errorf("a failed recovery issued handles: %v", d.held)
	}
	inv.await(time.Minute)

	p.Drop()
	_, err = recoverWith(t, d, owner)
	t.Logf("recovery with the engine unreachable: %v", err)
	if err == nil || !strings.Contains(err.Error(), "nothing removed") {
		t.Errorf("recovery error %v, want one saying nothing was removed", err)
	}

	real := w.adapter(nil)
	r, err := recoverWith(t, real, owner)
	if err != nil || len(r.Storage) != 1 {
		t.Fatalf("recovery with the engine answering: %+v, %v; want the storage handle", r, err)
	}
	w.remove(real, r.Storage[0])
}
