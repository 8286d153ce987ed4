package simd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
	"github.com/codeboost/codeboost/words"
)

// TestConformance runs D's conformance suite against the simulator: the
// scenarios trust it to be the contract, so it must pass what the Docker D
// passes.
func TestConformance(t *testing.T) { dtest.Run(t, simHarness{}) }

// TestConformanceBites shows the suite fails against broken wrappers of
// the simulator, so its passing means something.
func TestConformanceBites(t *testing.T) { dtest.Bites(t, simHarness{}) }

// simHarness plays the fake agent's modes as a script over the simulated
// D. Everything D itself decides (refusals, the first stop reason, what
// recovery lists and removes, export bounds) is the simulator's; the
// harness decides only what the container would: when the agent writes,
// exits, or dies after a stop.
type simHarness struct {
	// stopPumps is how many steps an agent that exits on SIGTERM takes to
	// go after a stop (0: 2).
	stopPumps int
}

// The script's steps. An agent that ignores SIGTERM is killed after the
// grace period, as the Docker D's supervisor does.
const (
	simStep  = 100 * time.Millisecond
	simGrace = time.Second
	// simPumps bounds a Wait: a minute of the script's time.
	simPumps = int(time.Minute / simStep)
)

func (h simHarness) New(t *testing.T) dtest.Impl {
	w := &simWorld{h: h, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), runs: map[*Handle]*simRun{}}
	if w.h.stopPumps == 0 {
		w.h.stopPumps = 2
	}
	w.d = NewD(func(id string) string { return id }, func(line string) { w.trace = append(w.trace, line) })
	w.d.Now = func() time.Time { return w.now }
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("simulated D's trace:\n%s", bytes.Join(lines(w.trace), []byte("\n")))
		}
	})
	return w
}

// simWorld is one case's simulated machine and runner process: the same
// *D before and after a crash, as in package sim's World, because the
// simulator's D is both Docker (what outlives a process) and the process's
// view of it (which ProcessDied drops).
type simWorld struct {
	h     simHarness
	d     *D
	now   time.Time
	trace []string
	runs  map[*Handle]*simRun // the agents the script has started
}

// simRun is the script's state of one agent.
type simRun struct {
	mode     string
	stopping int // steps since D stopped it; -1 while it runs
}

const (
	simOwner      = "0123456789abcdef0123456789abcdef"
	simOtherOwner = "fedcba9876543210fedcba9876543210"
)

func (w *simWorld) D() dadapter.D      { return w.d }
func (w *simWorld) Owner() string      { return simOwner }
func (w *simWorld) OtherOwner() string { return simOtherOwner }
func (w *simWorld) Now() time.Time     { return w.now }

// Source is the simulated repository, whose HEAD is the simulator's base.
func (w *simWorld) Source(*testing.T) dadapter.Source {
	return dadapter.Source{Repository: "/sim/user-repository", Commit: simBase}
}

// AttemptDir is a fresh directory named after the attempt, as the
// simulator reads the attempt from the clone's parent.
func (w *simWorld) AttemptDir(t *testing.T, owner, attemptID string) string {
	dir := filepath.Join(t.TempDir(), owner, "attempts", attemptID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (w *simWorld) Profile(mode string) dadapter.AgentProfile {
	return dadapter.AgentProfile{Image: "codeboost-fakeagent:sim", Argv: []string{mode}}
}

func (w *simWorld) Wait(t *testing.T, what string, ready func() bool) {
	t.Helper()
	for range simPumps {
		if ready() {
			return
		}
		w.pump()
	}
	if !ready() {
		t.Fatalf("%s: not after %v of the script", what, time.Duration(simPumps)*simStep)
	}
}

func (w *simWorld) Idle(*testing.T) {
	for range int(2 * simGrace / simStep) {
		w.pump()
	}
}

func (w *simWorld) Crash()              { w.d.ProcessDied() }
func (w *simWorld) Restart() dadapter.D { return w.d }

func (w *simWorld) PlantLegacy(_ *testing.T, kind dadapter.ResourceKind, name string) {
	w.d.AddLegacy(kind, name)
}

func (w *simWorld) RemoveByCommand(t *testing.T, command string) {
	t.Helper()
	if _, name, ok := dtest.ParseRemoveCommand(command); !ok || !w.d.RemoveLegacy(name) {
		t.Fatalf("%q removes nothing in the simulated Docker", command)
	}
}

// Objects reads the simulator's state: task storage of owner, and the
// agent containers of owner's handles that neither settled nor were
// removed by recovery.
func (w *simWorld) Objects(owner string) ([]dtest.Object, error) {
	var out []dtest.Object
	for id, f := range w.d.storage {
		if f.owner.RunnerOwner == owner {
			out = append(out, dtest.Object{Role: dtest.RoleStorage, Attempt: id, Name: "task storage " + f.owner.AllocationID})
		}
	}
	for id, h := range w.d.handles {
		if h.input.RunnerOwner == owner && h.settled == nil && !h.removed {
			out = append(out, dtest.Object{Role: dtest.RoleAgent, Attempt: id, Name: "agent container of " + id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// pump is one step of the script: the clock moves on, and every agent
// whose runner process is alive does what its mode does.
func (w *simWorld) pump() {
	w.now = w.now.Add(simStep)
	var ids []string
	for id := range w.d.handles {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		h := w.d.handles[id]
		if h.settled != nil || h.orphaned || h.removed {
			continue
		}
		w.step(h)
	}
}

// step plays one agent: its first step is the container's start (it
// writes its mode, as the fake agent does); a stop from D (a Cancel, the
// deadline, the output limit) ends it after stopPumps steps, or after the
// grace period for an agent that ignores SIGTERM.
func (w *simWorld) step(h *Handle) {
	r := w.runs[h]
	if r == nil {
		r = &simRun{mode: h.input.Profile.Argv[len(h.input.Profile.Argv)-1], stopping: -1}
		w.runs[h] = r
		h.EmitStderr([]byte("fakeagent: " + r.mode + "\n"))
	}
	if r.stopping < 0 && !h.input.Deadline.IsZero() && !w.now.Before(h.input.Deadline) {
		h.StopOnItsOwn(words.StopTimeout)
	}
	if r.stopping < 0 && h.stopReason != "" {
		r.stopping = 0
	}
	if r.stopping >= 0 {
		r.stopping++
		exit, after := 143, w.h.stopPumps
		switch r.mode {
		case "sleep":
			exit = 0 // it exits on SIGTERM
		case "flood":
			exit = 1 // its write fails
		case "ignore-term", "child-ignore-term":
			exit, after = 137, int(simGrace/simStep)
		}
		if r.stopping >= after {
			s := dadapter.Settlement{ExitCode: exit, Diagnostic: fmt.Sprintf("stopped: %s", h.stopReason)}
			if r.mode == "flood" {
				s.Output = flood(h.input.Profile.OutputLimit)
			}
			h.Settle(s)
		}
		return
	}
	result := []byte(fmt.Sprintf(`{"summary":"fakeagent: %s","usage":{"inputTokens":1,"outputTokens":2,"costUsd":0.01}}`+"\n", r.mode))
	switch r.mode {
	case "succeed":
		h.Settle(dadapter.Settlement{Output: result})
	case "edit":
		w.d.SetDiff(h.attemptID, "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # sim\n+Edited by fakeagent.\n")
		w.d.SetChanges(h.attemptID, dadapter.ChangeManifest{Changes: []dadapter.Change{
			{Path: "README.md", Kind: dadapter.ChangeModified},
			{Path: "new.txt", Kind: dadapter.ChangeAdded},
		}})
		h.Settle(dadapter.Settlement{Output: result})
	case "write-ignored": // fakeagent.log, which the repository's .gitignore ignores
		w.d.SetChanges(h.attemptID, dadapter.ChangeManifest{Ignored: []string{"fakeagent.log"}})
		h.Settle(dadapter.Settlement{Output: result})
	case "nest-repo": // vendor/x, a repository of its own, and a file in it
		w.d.SetChanges(h.attemptID, dadapter.ChangeManifest{Nested: []string{"vendor/x"}, DotGit: []string{"vendor/x/.git"}})
		h.Settle(dadapter.Settlement{Output: result})
	case "fail":
		h.EmitStderr([]byte("fakeagent: failing as asked\n"))
		h.Settle(dadapter.Settlement{ExitCode: 3})
	case "fail-loud":
		for i := 0; i < 3*dadapter.StderrTail/64; i++ {
			h.EmitStderr([]byte(fmt.Sprintf("fakeagent: line %05d of a long complaint, padded to 64 bytes..\n", i)))
		}
		h.EmitStderr([]byte("fakeagent: the end\n"))
		h.Settle(dadapter.Settlement{ExitCode: 1})
	case "flood":
		h.StopOnItsOwn(words.StopOutputLimit) // it writes past the limit at once
		r.stopping = 0
	}
}

// flood is what the flood agent's result holds when D stops it: its
// output up to the limit.
func flood(limit int) []byte {
	if limit <= 0 {
		limit = 1 << 20
	}
	return bytes.Repeat([]byte("flood.."), limit/7+1)[:limit]
}

func lines(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
