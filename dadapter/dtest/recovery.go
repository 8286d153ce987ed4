package dtest

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/codeboost/codeboost/dadapter"
)

// recoveryKeepsStorage: "Recovered storage handles": "the report's storage
// lists one … handle per allocation, with its runner, attempt and
// allocation IDs …, and both removeTaskFilesystems and exportTaskDiff
// accept it"; "Scoped recovery": "recoverLeftovers(runnerOwner) … acts only
// on resources whose io.codeboost.runner label equals the token. … It
// keeps task storage whole". Storage allocated before a crash is found
// after the restart under its own runner only, is still there after
// recovery, and goes only when the handle is removed.
func recoveryKeepsStorage(s *suite) {
	owner, other := s.impl.Owner(), s.impl.OtherOwner()
	a := s.prepared(owner)
	b := s.prepared(other)
	s.impl.Crash()
	s.impl.Restart()

	r := s.mustRecover(owner)
	h := s.storageOf(r, a.id)
	if got := h.Owner(); got != a.storageOwner() {
		s.t.Errorf("recovered handle's owner %+v, want the allocation's %+v", got, a.storageOwner())
	}
	if got := h.Base(); got != a.fs.Base() {
		s.t.Errorf("recovered handle's base %q, want %q", got, a.fs.Base())
	}
	for _, x := range r.Storage {
		if x.Owner().RunnerOwner != owner {
			s.t.Errorf("recovery for runner %s returned another runner's storage: %+v", owner, x.Owner())
		}
	}
	if len(of(s.objects(owner), RoleStorage, a.id)) == 0 {
		s.t.Errorf("recovery removed the storage it should keep whole")
	}
	if _, err := s.export(context.Background(), h, 1<<20); err != nil {
		s.t.Errorf("ExportTaskDiff of a recovered handle: %v", err)
	}
	s.remove(h)
	if left := of(s.objects(owner), RoleStorage, a.id); len(left) > 0 {
		s.t.Errorf("removing the recovered handle left:\n\t%s", join(left))
	}

	// The other runner's storage was untouched, and its own recovery
	// finds it.
	if len(of(s.objects(other), RoleStorage, b.id)) == 0 {
		s.t.Errorf("the other runner's storage is gone")
	}
	s.remove(s.storageOf(s.mustRecover(other), b.id))
}

// recoveryScopedAgents: "Scoped recovery": it "acts only on resources whose
// io.codeboost.runner label equals the token. It stops and removes agent
// containers … and resolves only when they are gone." An agent of this
// runner left running by a crash is gone when recovery reports; another
// runner's, on the same machine, still runs.
func recoveryScopedAgents(s *suite) {
	owner, other := s.impl.Owner(), s.impl.OtherOwner()
	a := s.prepared(owner)
	b := s.prepared(other)
	// The settlement callbacks only record: the process that would act on
	// them dies. One that comes before the agent ran is a setup that failed
	// (on a loaded machine, a call past its timeout), said at once in D's
	// words rather than after the wait's whole bound.
	names := []string{"this runner's", "the other runner's"}
	var sinks []*Sink
	var early [2]atomic.Pointer[dadapter.Settlement]
	for i, x := range []*attempt{a, b} {
		in := s.input(x, "sleep")
		k := &Sink{}
		in.Output = k
		h, err := s.d().Start(in)
		if err != nil {
			s.t.Fatalf("Start(%s): %v", x.id, err)
		}
		h.OnSettled(func(r dadapter.Settlement) { early[i].Store(&r) })
		sinks = append(sinks, k)
	}
	for i, k := range sinks {
		s.impl.Wait(s.t, names[i]+" agent running", func() bool {
			return strings.Contains(k.String(), "fakeagent: sleep") || early[i].Load() != nil
		})
		if r := early[i].Load(); r != nil {
			s.t.Fatalf("%s agent settled before it ran: stop reason %q, exit %d: %s", names[i], r.StopReason, r.ExitCode, r.Diagnostic)
		}
	}
	s.impl.Crash()
	s.impl.Restart()

	r := s.mustRecover(owner)
	if left := of(s.objects(owner), RoleAgent, a.id); len(left) > 0 {
		s.t.Errorf("recovery reported while this runner's agent was still there:\n\t%s", join(left))
	}
	if len(of(s.objects(other), RoleAgent, b.id)) == 0 {
		s.t.Errorf("recovery for runner %s removed the agent of runner %s", owner, other)
	}
	s.remove(s.storageOf(r, a.id))

	r = s.mustRecover(other)
	if left := of(s.objects(other), RoleAgent, b.id); len(left) > 0 {
		s.t.Errorf("the other runner's recovery left its agent:\n\t%s", join(left))
	}
	s.remove(s.storageOf(r, b.id))
}

// recoveryRefusedWhileHeld: "Scoped recovery": "It refuses to run while
// this process holds task storage of the runner"; "Recovered storage
// handles": "It refuses storage this process allocated and has not
// removed." Holding one runner's storage does not stop another runner's
// recovery, and the refusal ends with the removal.
func recoveryRefusedWhileHeld(s *suite) {
	owner, other := s.impl.Owner(), s.impl.OtherOwner()
	a := s.prepared(owner)
	if r, err := s.recover(owner); err == nil {
		s.t.Errorf("recovery ran while this process holds storage of the runner (report: %s)", describe(r))
	}
	if len(of(s.objects(owner), RoleStorage, a.id)) == 0 {
		s.t.Errorf("the refused recovery touched the held storage")
	}
	if _, err := s.recover(other); err != nil {
		s.t.Errorf("recovery of runner %s refused because this process holds storage of runner %s: %v", other, owner, err)
	}
	s.remove(a.fs)
	s.mustRecover(owner)
}

// recoveredHandlesHeld: "Recovered storage handles": recoverLeftovers
// "returns, for each kept volume set, an authenticated recovery handle
// that D registers in its ownership map"; "Scoped recovery": "It refuses
// to run while this process holds task storage of the runner." A handle
// recovery issued is held as an allocation is, so a second recovery, which
// would issue a second handle for the same storage, is refused until the
// first handle is removed.
func recoveredHandlesHeld(s *suite) {
	owner := s.impl.Owner()
	a := s.prepared(owner)
	s.impl.Crash()
	s.impl.Restart()
	h := s.storageOf(s.mustRecover(owner), a.id)
	if r, err := s.recover(owner); err == nil {
		s.t.Errorf("a second recovery ran while this process holds the handle the first issued (report: %s)", describe(r))
	}
	s.remove(h)
	s.mustRecover(owner)
}

// unownedListed: "Unowned resources": "the report's unowned lists them with
// the reason no-runner-label …; none is removed. … codeboost never removes
// them itself"; "startup stops with a message that names each resource as
// the exact docker container rm -f / docker network rm / docker volume rm
// command that removes it" (dadapter.Unowned.Remove, which D words). The
// objects are still there after recovery, and the printed commands remove
// them.
func unownedListed(s *suite) {
	owner := s.impl.Owner()
	suffix := NewID()[:8]
	planted := map[string]dadapter.ResourceKind{}
	for _, k := range []dadapter.ResourceKind{dadapter.KindContainer, dadapter.KindNetwork, dadapter.KindVolume} {
		name := "codeboost-conformance-legacy-" + string(k) + "-" + suffix
		s.impl.PlantLegacy(s.t, k, name)
		planted[name] = k
	}
	listed := func(r dadapter.RecoveryReport) map[string]dadapter.Unowned {
		got := map[string]dadapter.Unowned{}
		for _, u := range r.Unowned {
			if _, ok := planted[u.Name]; ok {
				got[u.Name] = u
			}
		}
		return got
	}
	for round := range 2 { // the second recovery finds them again: the first removed none
		got := listed(s.mustRecover(owner))
		for name, kind := range planted {
			u, ok := got[name]
			switch {
			case !ok:
				s.t.Errorf("recovery %d did not list the %s %s, which has codeboost labels and no runner label", round+1, kind, name)
			case u.Kind != kind || u.Reason != dadapter.NoRunnerLabel || u.Remove != dadapter.RemoveCommand(kind, name):
				s.t.Errorf("recovery %d listed %+v, want kind %s, reason %s, command %q", round+1, u, kind, dadapter.NoRunnerLabel, dadapter.RemoveCommand(kind, name))
			}
		}
	}
	for name, kind := range planted {
		s.impl.RemoveByCommand(s.t, dadapter.RemoveCommand(kind, name))
	}
	if got := listed(s.mustRecover(owner)); len(got) > 0 {
		s.t.Errorf("still listed after their commands ran: %v", got)
	}
}
