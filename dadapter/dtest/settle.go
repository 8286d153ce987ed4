package dtest

import (
	"context"
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// settlesAfterEverythingStopped: "Settlement ends only after everything D
// started has stopped; D never settles early on its own timer"
// (dadapter.Handle), and the output sink is closed "when the capture has
// stopped, before it calls the settlement callback" (dadapter.OutputSink).
// The settlement callback itself lists what is left of the invocation, so
// an implementation that settles first and cleans up after is caught in
// the act. One subtest per way an agent resists a stop: it exits on
// SIGTERM, ignores it, or leaves a child that ignores it.
func settlesAfterEverythingStopped(s *suite) {
	for _, mode := range []string{"sleep", "ignore-term", "child-ignore-term"} {
		s.run(mode, func(s *suite) {
			a := s.prepared(s.impl.Owner())
			st := s.start(a, s.input(a, mode))
			s.awaitOutput(st, "fakeagent: "+mode)
			st.h.Cancel(words.StopCancelled)
			if r := s.await(st); r.StopReason != words.StopCancelled {
				s.t.Errorf("stop reason %q, want %q", r.StopReason, words.StopCancelled)
			}
			s.remove(a.fs)
		})
	}
}

// exitsOnItsOwn: Settlement.StopReason is "empty when the agent exited on
// its own", with its exit code, and Output is "the agent's result"
// (dadapter.Settlement); what the agent writes reaches the live output
// sink (dadapter.OutputSink).
func exitsOnItsOwn(s *suite) {
	s.run("succeed", func(s *suite) {
		a := s.prepared(s.impl.Owner())
		st := s.start(a, s.input(a, "succeed"))
		r := s.await(st)
		if r.StopReason != words.StopNone || r.ExitCode != 0 {
			s.t.Errorf("stop reason %q, exit %d; want none, 0", r.StopReason, r.ExitCode)
		}
		if u, ok := dadapter.ParseUsage(r.Output); !ok || u.InputTokens != 1 || u.OutputTokens != 2 {
			s.t.Errorf("result %q: usage %+v, %v; want the fake agent's result (1 and 2 tokens)", r.Output, u, ok)
		}
		if out := st.sink.String(); !strings.Contains(out, "fakeagent: succeed") {
			s.t.Errorf("the output sink got %q, want the agent's output", out)
		}
		s.remove(a.fs)
	})
	s.run("fail", func(s *suite) {
		a := s.prepared(s.impl.Owner())
		st := s.start(a, s.input(a, "fail"))
		r := s.await(st)
		if r.StopReason != words.StopNone || r.ExitCode != 3 {
			s.t.Errorf("stop reason %q, exit %d; want none, 3", r.StopReason, r.ExitCode)
		}
		// Settlement.Stderr: the end of what the agent wrote to its
		// standard error, which a failed attempt's diagnostic quotes.
		if want := "fakeagent: fail\nfakeagent: failing as asked\n"; string(r.Stderr) != want {
			s.t.Errorf("settlement's stderr %q, want the fake agent's two lines %q", r.Stderr, want)
		}
		s.remove(a.fs)
	})
	// An agent that writes three times the bound to stderr: D keeps its
	// end, exactly dadapter.StderrTail bytes of it, the last line whole.
	s.run("fail-loud", func(s *suite) {
		a := s.prepared(s.impl.Owner())
		st := s.start(a, s.input(a, "fail-loud"))
		r := s.await(st)
		if r.StopReason != words.StopNone || r.ExitCode != 1 {
			s.t.Errorf("stop reason %q, exit %d; want none, 1", r.StopReason, r.ExitCode)
		}
		if len(r.Stderr) != dadapter.StderrTail || !strings.HasSuffix(string(r.Stderr), "\nfakeagent: the end\n") {
			s.t.Errorf("settlement's stderr is %d bytes ending %q; want its last %d bytes, ending with the agent's last line",
				len(r.Stderr), r.Stderr[max(0, len(r.Stderr)-40):], dadapter.StderrTail)
		}
		s.remove(a.fs)
	})
}

// firstStopReasonKept: Cancel "does not wait, and a second Cancel does not
// replace D's first stop reason" (dadapter.Handle); "D keeps the first
// reason it receives: a timeout already taken stays the stop reason after
// Cancel" (words.StopReason; step 4 of shutdown and the running-state
// table rely on it to tell D's own stop from F's).
func firstStopReasonKept(s *suite) {
	s.run("cancelled-then-shutdown", func(s *suite) {
		a := s.prepared(s.impl.Owner())
		st := s.start(a, s.input(a, "sleep"))
		s.awaitOutput(st, "fakeagent: sleep")
		st.h.Cancel(words.StopCancelled)
		st.h.Cancel(words.StopShutdown)
		if r := s.await(st); r.StopReason != words.StopCancelled {
			s.t.Errorf("Cancel(cancelled), then Cancel(shutdown): stop reason %q, want %q", r.StopReason, words.StopCancelled)
		}
		s.remove(a.fs)
	})
	s.run("timeout-then-cancelled", func(s *suite) {
		// An agent that ignores SIGTERM holds D's timeout stop open for
		// the grace period: the Cancel lands after D took its own reason
		// and before it settled.
		a := s.prepared(s.impl.Owner())
		in := s.input(a, "ignore-term")
		in.Deadline = s.impl.Now().Add(3 * time.Second)
		st := s.start(a, in)
		s.awaitOutput(st, "fakeagent: ignore-term")
		s.impl.Wait(s.t, "300 ms past the deadline", func() bool { return s.impl.Now().After(in.Deadline.Add(300 * time.Millisecond)) })
		if st.settled.called() {
			s.t.Fatalf("settled %v after the deadline, before the agent that ignores SIGTERM could have been killed: nothing to cancel", s.impl.Now().Sub(in.Deadline))
		}
		st.h.Cancel(words.StopCancelled)
		if r := s.await(st); r.StopReason != words.StopTimeout {
			s.t.Errorf("D's timeout, then Cancel(cancelled): stop reason %q, want %q", r.StopReason, words.StopTimeout)
		}
		s.remove(a.fs)
	})
}

// deadlineStopsTheAgent: "Deadline … D enforces it, setup included; F runs
// no second timer" (dadapter.InvocationInput): an agent still running at
// its deadline is stopped with the timeout reason, and not before.
func deadlineStopsTheAgent(s *suite) {
	a := s.prepared(s.impl.Owner())
	in := s.input(a, "sleep")
	in.Deadline = s.impl.Now().Add(2 * time.Second)
	st := s.start(a, in)
	if r := s.await(st); r.StopReason != words.StopTimeout {
		s.t.Errorf("stop reason %q, want %q", r.StopReason, words.StopTimeout)
	}
	if at := st.settled.first().at; at.Before(in.Deadline) {
		s.t.Errorf("settled %v before the deadline", in.Deadline.Sub(at))
	}
	s.remove(a.fs)
}

// outputLimitStopsTheAgent: "OutputLimit bounds the agent's result (its
// standard output); past it D stops the agent with StopOutputLimit"
// (dadapter.AgentProfile), and Settlement.Output is bounded.
func outputLimitStopsTheAgent(s *suite) {
	const limit = 64 << 10
	a := s.prepared(s.impl.Owner())
	in := s.input(a, "flood")
	in.Profile.OutputLimit = limit
	r := s.await(s.start(a, in))
	if r.StopReason != words.StopOutputLimit {
		s.t.Errorf("stop reason %q, want %q", r.StopReason, words.StopOutputLimit)
	}
	if len(r.Output) > limit {
		s.t.Errorf("result of %d bytes, over the %d-byte limit", len(r.Output), limit)
	}
	s.remove(a.fs)
}

// callbacksOnce: "Each callback is called exactly once" (package
// dadapter), and OnSettled "registers fn, called once with the
// settlement. If the handle has already settled, fn is called at once"
// (dadapter.Handle). Every case checks the first sentence for the
// callbacks it registered (suite.finish); this one also registers after
// settlement, cancels after settlement, and goes through every operation
// with a done callback.
func callbacksOnce(s *suite) {
	owner := s.impl.Owner()
	a := s.prepared(owner) // PrepareTaskFilesystems and CreateTaskClone
	st := s.start(a, s.input(a, "edit"))
	r := s.await(st)
	if !knownStopReason(r.StopReason) {
		s.t.Errorf("stop reason %q is none of the contract's", r.StopReason)
	}
	late := track[dadapter.Settlement](s, "OnSettled registered after settlement")
	st.h.OnSettled(late.add)
	if n := late.count(); n != 1 {
		s.t.Errorf("OnSettled after settlement: called %d times before it returned, want once (at once)", n)
	} else if got := late.first(); got.StopReason != r.StopReason || got.ExitCode != r.ExitCode || string(got.Output) != string(r.Output) {
		s.t.Errorf("OnSettled after settlement got %+v, the first callback %+v", got, r)
	}
	st.h.Cancel(words.StopShutdown) // after settlement: nothing to stop, nothing to call again
	if _, err := s.export(context.Background(), a.fs, 1<<20); err != nil {
		s.t.Errorf("ExportTaskDiff: %v", err)
	}
	if _, err := s.commit(a.fs); err != nil {
		s.t.Errorf("CommitTaskChanges: %v", err)
	}
	s.remove(a.fs)
	s.mustRecover(owner)
}
