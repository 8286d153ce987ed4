package dtest

import (
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// startBound is how long Start may take on the caller's goroutine: it does
// no blocking I/O there, so anything near a Docker round trip is too long.
const startBound = time.Second

// startRefuses: "Start returns an error only when it allocated nothing:
// invalid input, a deadline already passed, or an attempt ID another handle
// still owns" (dadapter.D.Start; the seed's "Rule for D": "it either throws
// with nothing left running, or it returns a handle"), and the output sink
// D owns from Start on is closed "if Start fails, before Start returns its
// error" (dadapter.OutputSink). Each refusal leaves no agent object.
func startRefuses(s *suite) {
	owner, other := s.impl.Owner(), s.impl.OtherOwner()
	// Each subtest is one kind of input Start must refuse, on an attempt
	// of its own, so that no refusal is owed to an earlier subtest.
	s.run("owner-token-not-32-lowercase-hex", func(s *suite) {
		a := s.prepared(owner)
		in := s.input(a, "sleep")
		in.RunnerOwner = strings.ToUpper(owner)
		s.refused(in, "a runner owner token in upper case")
		s.remove(a.fs)
	})
	s.run("no-task-storage", func(s *suite) {
		a := s.prepared(owner)
		in := s.input(a, "sleep")
		in.Storage = nil
		s.refused(in, "an invocation without task storage")
		s.remove(a.fs)
	})
	s.run("storage-of-another-runner", func(s *suite) {
		// "D checks these labels whenever it validates a resource, and
		// refuses task storage that belongs to another runner."
		b := s.prepared(other)
		in := s.input(b, "sleep")
		in.RunnerOwner = owner
		s.refused(in, "task storage labelled with another runner")
		s.remove(b.fs)
	})
	s.run("deadline-already-passed", func(s *suite) {
		a := s.prepared(owner)
		in := s.input(a, "sleep")
		in.Deadline = s.impl.Now().Add(-time.Second)
		s.refused(in, "a deadline already passed")
		s.remove(a.fs)
	})
	s.run("attempt-id-another-handle-still-owns", func(s *suite) {
		a := s.prepared(owner)
		first := s.start(a, s.input(a, "sleep"))
		s.awaitOutput(first, "fakeagent: sleep") // its objects are all there
		s.refused(s.input(a, "sleep"), "an attempt ID an unsettled handle owns")
		// The first handle's settlement snapshot (await) sees every agent
		// object of the attempt, the refused call's included.
		first.h.Cancel(words.StopCancelled)
		s.await(first)
		// Once that handle has settled, it owns the ID no more.
		again := s.start(a, s.input(a, "succeed"))
		if r := s.await(again); r.StopReason != words.StopNone || r.ExitCode != 0 {
			s.t.Errorf("the same attempt started again after the first settled: stop reason %q, exit %d; want none, 0", r.StopReason, r.ExitCode)
		}
		s.remove(a.fs)
	})
}

// refused calls Start with in and requires a refusal that closed the sink
// and left no agent object of the attempt, for either runner (an agent
// object an earlier Start of the attempt left running is the caller's to
// check).
func (s *suite) refused(in dadapter.InvocationInput, why string) {
	s.t.Helper()
	sink := &Sink{}
	in.Output = sink
	before := len(s.agents(in.AttemptID))
	h, err := s.d().Start(in)
	if err == nil {
		s.t.Errorf("Start accepted %s", why)
		if h != nil { // settle it, so the case ends with nothing running
			h.Cancel(words.StopCancelled)
			settled := &calls[dadapter.Settlement]{name: "the wrongly accepted invocation's settlement"}
			h.OnSettled(settled.add)
			wait(s, settled)
		}
		return
	}
	if h != nil {
		s.t.Errorf("Start refused %s (%v) but returned a handle too", why, err)
	}
	if n := sink.Closes(); n != 1 {
		s.t.Errorf("Start refused %s, and had closed the output sink %d times when it returned, want once", why, n)
	}
	if left := s.agents(in.AttemptID); len(left) > before {
		s.t.Errorf("Start refused %s but left:\n\t%s", why, join(left))
	}
}

// agents lists the agent objects of attempt, for either runner.
func (s *suite) agents(attemptID string) []Object {
	s.t.Helper()
	var out []Object
	for _, owner := range []string{s.impl.Owner(), s.impl.OtherOwner()} {
		out = append(out, of(s.objects(owner), RoleAgent, attemptID)...)
	}
	return out
}

// startReturnsAtOnce: "Start returns its handle at once and does no
// blocking I/O on the caller's goroutine: the setup (container create,
// validation, start) runs inside the handle's life, Cancel during setup
// stops the call in flight, … and the handle settles only after everything
// it started has stopped, setup's cleanup included" (dadapter.D.Start;
// "Launch setup does not block the server").
func startReturnsAtOnce(s *suite) {
	a := s.prepared(s.impl.Owner())
	t0 := time.Now()
	st := s.start(a, s.input(a, "sleep"))
	if took := time.Since(t0); took > startBound {
		s.t.Errorf("Start took %v on the caller's goroutine, want at most %v", took, startBound)
	}
	if st.settled.called() {
		s.t.Errorf("the handle had settled before Start's caller could cancel it: setup ran on the caller's goroutine")
	}
	st.h.Cancel(words.StopCancelled) // during setup: nothing has been pumped or awaited yet
	if r := s.await(st); r.StopReason != words.StopCancelled {
		s.t.Errorf("cancelled during setup: stop reason %q, want %q", r.StopReason, words.StopCancelled)
	}
	s.remove(a.fs)
}
