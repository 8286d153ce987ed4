package mutate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/codeboost/codeboost/internal/mutant"
)

// Verdict is what became of one mutant.
type Verdict string

const (
	Killed     Verdict = "killed"     // a test failed
	TimedOut   Verdict = "timeout"    // a test binary ran past its timeout: killed too
	Survived   Verdict = "survived"   // every test passed
	Invalid    Verdict = "invalid"    // it does not compile
	Equivalent Verdict = "equivalent" // listed in the equivalence file, not run
	Error      Verdict = "error"      // the sweep itself failed (interrupted, disk)
)

// Stage is one test binary a mutant runs against.
type Stage struct {
	Pkg string // "./store", relative to the module root
	Run string // its -test.run pattern
	// Docker says its tests need a Docker engine: they run with
	// RequireDockerEnv=1, and a failure saying DockerMissing is an error.
	Docker bool
	// Split says its units of coverage are Run's subtests (each scenario of
	// TestScenarios), not its top-level tests.
	Split bool
	// NoEngine runs a Docker suite's binary with no engine to reach: its
	// engineless tests run, its Docker tests skip at once. It comes before
	// the Docker stage of the same package, so that a mutant those tests
	// kill costs seconds instead of a turn of the machine's Docker lock.
	NoEngine bool
}

// noEngineHost is the DOCKER_HOST of a NoEngine stage: a socket that
// cannot exist, so the client's ping fails at once.
const noEngineHost = "unix:///nonexistent/codeboost-mutate-no-engine.sock"

// Key names the stage in the sweep's tables (baseline units, timeouts,
// coverage): its package, and "(no engine)" for a NoEngine stage, which
// shares the package with the Docker stage after it.
func (st Stage) Key() string {
	if st.NoEngine {
		return st.Pkg + " (no engine)"
	}
	return st.Pkg
}

// env is what the stage's test binary runs with besides the environment.
// The variable is set either way: a stage not marked Docker skips its
// Docker tests even when the sweep itself runs under
// RequireDockerEnv=1 (as CI's make test does), or its baseline would fail
// on a machine without an engine and a skip would count as a kill.
func (st Stage) env() []string {
	switch {
	case st.Docker:
		return []string{RequireDockerEnv + "=1"}
	case st.NoEngine:
		return []string{RequireDockerEnv + "=", "DOCKER_HOST=" + noEngineHost}
	}
	return []string{RequireDockerEnv + "="}
}

// Options configure a sweep.
type Options struct {
	Root string // the module root
	Jobs int    // mutants run at once
	// Timeout bounds each test binary's run; zero takes, per package, five
	// times its baseline run and at least MinTimeout.
	Timeout time.Duration
	Skip    string // -test.skip pattern for every test binary
	// Stages lists a mutant's test binaries; nil is Stages.
	Stages func(Mutant) []Stage
	// Progress, if set, is called as each mutant finishes.
	Progress func(done, total int, r Result)
}

// MinTimeout is the least timeout a test binary gets from its baseline.
const MinTimeout = time.Minute

// DockerMinTimeout is the least a Docker stage's binary gets, whatever its
// baseline or -timeout: its tests take a machine-wide lock (dockertest's
// Serial), so it may wait out another process's whole Docker suite (about
// five minutes) before its own tests start, and a timeout counts as a kill.
const DockerMinTimeout = 15 * time.Minute

// Result is the verdict on one mutant.
type Result struct {
	Mutant  Mutant  `json:"-"`
	ID      string  `json:"id"`
	Op      string  `json:"op"`
	Pos     string  `json:"pos"`
	Verdict Verdict `json:"verdict"`
	// By is what killed it: "<pkg> <test>", or "<pkg> (timeout 1m0s)";
	// for an invalid mutant, the package that did not build.
	By      string  `json:"by,omitempty"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"` // the build error, the killing output's tail, the equivalence reason
	Diff    string  `json:"diff"`
	// Listed says the equivalence file lists it: killed, it is a wrong
	// entry.
	Listed bool `json:"listed,omitempty"`
	// Steps times each build and run, as "build ./store 2.1s".
	Steps []string `json:"steps,omitempty"`
}

// Sweep runs mutants.
type Sweep struct {
	opts     Options
	timeouts map[string]time.Duration
	stages   []Stage             // the baseline's stages
	units    map[string][]string // stage package → the tests its baseline passed (unitsOf)
	cov      *Coverage           // nil: every stage runs whole
}

// NewSweep makes a sweep without a baseline: every test binary gets
// opts.Timeout, at least MinTimeout.
func NewSweep(opts Options) *Sweep {
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.Stages == nil {
		opts.Stages = Stages
	}
	return &Sweep{opts: opts, timeouts: map[string]time.Duration{}, units: map[string][]string{}}
}

// UseCoverage makes each stage run only the tests that entered a mutant's
// function (coverage.go); without it every stage runs whole.
func (s *Sweep) UseCoverage(c *Coverage) { s.cov = c }

// timeout is st's binary's timeout: its baseline's, or else opts.Timeout,
// at least MinTimeout, and a Docker stage's at least DockerMinTimeout.
func (s *Sweep) timeout(st Stage) time.Duration {
	if to := s.timeouts[st.Key()]; to != 0 {
		return to
	}
	to := max(MinTimeout, s.opts.Timeout)
	if st.Docker {
		to = max(to, DockerMinTimeout)
	}
	return to
}

// Baseline builds and runs, unmutated, the test binaries of every stage of
// ms, checks that they pass (a sweep over a failing tree would count every
// mutant killed) and sets each package's timeout. It returns the sweep
// and each package's baseline time.
func Baseline(ctx context.Context, opts Options, ms []Mutant) (*Sweep, map[string]time.Duration, error) {
	s := NewSweep(opts)
	opts = s.opts
	took := map[string]time.Duration{}
	var stages []Stage
	seen := map[string]bool{}
	for _, m := range ms {
		for _, st := range opts.Stages(m) {
			if !seen[st.Key()] {
				seen[st.Key()] = true
				stages = append(stages, st)
			}
		}
	}
	dir, err := os.MkdirTemp("", "mutate-baseline-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	built := map[string]bool{} // a NoEngine stage and the Docker stage after it share one binary
	for _, st := range stages {
		bin := filepath.Join(dir, binName(st.Pkg))
		if !built[bin] {
			if err := mutant.BuildTestFlags(ctx, opts.Root, st.Pkg, "", bin, "-vet=off", "-ldflags=-s -w"); err != nil {
				return nil, nil, err
			}
			built[bin] = true
		}
		if _, err := os.Stat(bin); err != nil {
			continue // no test files: nothing to run, and nothing to time
		}
		start := time.Now()
		res, err := s.runStage(ctx, st, bin, "", 30*time.Minute, nil)
		if err != nil {
			return nil, nil, err
		}
		s.stages = append(s.stages, st)
		s.units[st.Key()] = unitsOf(st, res.Passed)
		took[st.Key()] = time.Since(start)
		if failedRun(res) {
			return nil, nil, fmt.Errorf("%s fails on the unmutated tree (%s): fix it before sweeping\n%s", st.Pkg, firstFailed(res), tail(res.Output, 30))
		}
		if err := ranTests(st, res); err != nil {
			return nil, nil, err
		}
		to := opts.Timeout
		if to == 0 {
			to = max(MinTimeout, 5*took[st.Key()]).Round(time.Second)
		}
		if st.Docker {
			to = max(to, DockerMinTimeout)
		}
		s.timeouts[st.Key()] = to
	}
	return s, took, nil
}

// Timeouts are the per-package timeouts the baseline set.
func (s *Sweep) Timeouts() map[string]time.Duration { return s.timeouts }

// runStage runs a stage's test binary, built at bin, in a scratch
// directory of its package.
// env and args are added to the stage's own.
func (s *Sweep) runStage(ctx context.Context, st Stage, bin, overlay string, timeout time.Duration, env []string, args ...string) (mutant.Result, error) {
	top, wd, err := scratch(s.opts.Root, st.Pkg)
	if err != nil {
		return mutant.Result{}, err
	}
	defer os.RemoveAll(top)
	if env = append(st.env(), env...); len(env) > 0 {
		// RunTests passes the sweep's own environment on: the stage's
		// settings go through a wrapper that execs the binary under them
		// (the same process, so a timeout still stops the binary).
		// Each run has its own wrapper: coverage runs one binary's units
		// at once.
		f, err := os.CreateTemp(filepath.Dir(bin), filepath.Base(bin)+".env-")
		if err != nil {
			return mutant.Result{}, err
		}
		script := "#!/bin/sh\nexec env " + strings.Join(env, " ") + " '" + bin + "' \"$@\"\n"
		_, err = f.WriteString(script)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		defer os.Remove(f.Name())
		if err == nil {
			err = os.Chmod(f.Name(), 0o755)
		}
		if err != nil {
			return mutant.Result{}, err
		}
		bin = f.Name()
	}
	return mutant.RunTests(ctx, bin, wd, st.Run, true, overlay, append(s.runArgs(timeout), args...)...), nil
}

func (s *Sweep) runArgs(timeout time.Duration) []string {
	args := []string{"-test.timeout=" + timeout.String()}
	if s.opts.Skip != "" {
		args = append(args, "-test.skip="+s.opts.Skip)
	}
	return args
}

// Run runs ms on opts.Jobs workers and returns their results in the order
// of ms. A mutant whose ID is in equivalent (ID → reason) is not run,
// unless recheck: then one that survives is equivalent, and one that is
// killed is a wrong entry (Listed and killed).
func (s *Sweep) Run(ctx context.Context, ms []Mutant, equivalent map[string]string, recheck bool) []Result {
	out := make([]Result, len(ms))
	var mu sync.Mutex
	done := 0
	Each(len(ms), s.opts.Jobs, func(i int) {
		var r Result
		reason, listed := equivalent[ms[i].ID]
		switch {
		case listed && !recheck:
			r = newResult(ms[i])
			r.Verdict, r.Detail = Equivalent, reason
		default:
			r = s.One(ctx, ms[i])
		}
		r.Listed = listed
		if listed && r.Verdict == Survived {
			r.Verdict, r.Detail = Equivalent, reason
		}
		mu.Lock()
		out[i] = r
		done++
		if s.opts.Progress != nil {
			s.opts.Progress(done, len(ms), r)
		}
		mu.Unlock()
	})
	return out
}

// Each calls f(0) … f(n-1) on jobs goroutines and returns when all have
// returned.
func Each(n, jobs int, f func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, jobs); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

func newResult(m Mutant) Result {
	return Result{Mutant: m, ID: m.ID, Op: m.Op, Pos: m.Pos(), Diff: m.Diff("")}
}

// One applies m through an overlay and runs its stages until one fails;
// with coverage, each stage runs only the tests that entered m's function,
// and a stage none of whose tests did is not built.
func (s *Sweep) One(ctx context.Context, m Mutant) Result { return s.one(ctx, m, s.cov) }

// Confirm runs again, with every test of every stage, each survivor of a
// run that selected its tests by coverage, so that a test coverage missed
// still kills (coverage.go). It reports how many it ran and how many of
// those were killed.
func (s *Sweep) Confirm(ctx context.Context, rs []Result) (ran, killed int) {
	if s.cov == nil {
		return 0, 0
	}
	survivors := 0
	for _, r := range rs {
		if r.Verdict == Survived {
			survivors++
		}
	}
	for i, r := range rs {
		if r.Verdict != Survived || ctx.Err() != nil {
			continue
		}
		ran++
		again := s.one(ctx, r.Mutant, nil)
		again.Listed = r.Listed
		again.Steps = append(append(r.Steps, "confirm: every test"), again.Steps...)
		again.Seconds += r.Seconds
		if again.Verdict != Survived {
			killed++
			again.Detail = "missed by coverage, caught running every test: " + again.Detail
		}
		rs[i] = again
		if s.opts.Progress != nil {
			s.opts.Progress(ran, survivors, again)
		}
	}
	return ran, killed
}

func (s *Sweep) one(ctx context.Context, m Mutant, cov *Coverage) (r Result) {
	r = newResult(m)
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	dir, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		r.Verdict, r.Detail = Error, err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	overlay, err := m.Mutant().Overlay(s.opts.Root, dir)
	if err != nil {
		r.Verdict, r.Detail = Error, err.Error()
		return r
	}
	if s.pass(ctx, m, cov, overlay, dir, &r, false) && m.Race {
		s.pass(ctx, m, cov, overlay, dir, &r, true)
	}
	return r
}

// RaceSlowdown is how much longer than its plain timeout a stage's binary
// built with -race may run.
const RaceSlowdown = 4

// DataRace is what the race detector prints for each race it sees.
const DataRace = "WARNING: DATA RACE"

// pass builds and runs m's stages, stopping at the first that kills it,
// and reports whether m survived every stage. With race the binaries are
// built with -race, and only a stage whose run printed a data race kills:
// a race pass judges what the plain one cannot see (Mutant.Race), so any
// other failure of its slower binaries (a timeout, a test that times
// itself) is noted in the steps and not counted.
func (s *Sweep) pass(ctx context.Context, m Mutant, cov *Coverage, overlay, dir string, r *Result, race bool) (survived bool) {
	flags := []string{"-vet=off", "-ldflags=-s -w"}
	name := ""
	if race {
		flags, name = append(flags, "-race"), "race: "
	}
	stages := s.opts.Stages(m)
	// A NoEngine stage and the Docker stage after it share one binary: it
	// is built for the first and removed after the last.
	built, last := map[string]bool{}, map[string]int{}
	for i, st := range stages {
		last[binName(st.Pkg)] = i
	}
	for i, st := range stages {
		if tests, ok := cov.Select(st.Key(), m); ok {
			if len(tests) == 0 {
				r.Steps = append(r.Steps, fmt.Sprintf("%sskip %s: no test enters %s", name, st.Key(), m.Func))
				continue
			}
			st.Run = mutant.Pattern(tests)
			r.Steps = append(r.Steps, fmt.Sprintf("%sselect %s: %d tests", name, st.Key(), len(tests)))
		}
		bin := filepath.Join(dir, binName(st.Pkg))
		if !built[bin] {
			t0 := time.Now()
			err := mutant.BuildTestFlags(ctx, s.opts.Root, st.Pkg, overlay, bin, flags...)
			r.Steps = append(r.Steps, fmt.Sprintf("%sbuild %s %.1fs", name, st.Pkg, time.Since(t0).Seconds()))
			if err != nil {
				if ctx.Err() != nil {
					r.Verdict, r.Detail = Error, "interrupted"
					return false
				}
				r.Verdict, r.By, r.Detail = Invalid, st.Pkg, tail(err.Error(), 12)
				return false
			}
			built[bin] = true
		}
		if _, err := os.Stat(bin); err != nil {
			continue // no test files
		}
		to := s.timeout(st)
		if race {
			to *= RaceSlowdown
		}
		// The binary stops itself at its -test.timeout; the context is the
		// backstop for one that cannot (a hung process it started).
		rctx, cancel := context.WithTimeout(ctx, to+30*time.Second)
		t0 := time.Now()
		res, err := s.runStage(rctx, st, bin, overlay, to, nil)
		r.Steps = append(r.Steps, fmt.Sprintf("%srun %s %.1fs", name, st.Key(), time.Since(t0).Seconds()))
		expired := rctx.Err() != nil
		cancel()
		if last[binName(st.Pkg)] == i {
			os.Remove(bin)
		}
		switch {
		case err != nil:
			r.Verdict, r.Detail = Error, err.Error()
			return false
		case ctx.Err() != nil:
			r.Verdict, r.Detail = Error, "interrupted"
			return false
		case race && strings.Contains(res.Output, DataRace):
			r.Verdict, r.By, r.Detail = Killed, st.Pkg+" "+firstFailed(res)+" (the race detector)", raceReport(res.Output)
			return false
		case race:
			if expired || failedRun(res) {
				r.Steps = append(r.Steps, fmt.Sprintf("race: %s failed without a data race, not counted: %s", st.Pkg, firstFailed(res)))
			}
		case st.Docker && strings.Contains(res.Output, DockerMissing):
			// Not a kill: the engine went away, and the tests that need
			// it failed (RequireDockerEnv) instead of skipping.
			r.Verdict, r.By, r.Detail = Error, st.Pkg, "the Docker engine did not answer: "+failLines(res.Output)
			return false
		case expired || strings.Contains(res.Output, "panic: test timed out after"):
			r.Verdict, r.By, r.Detail = TimedOut, fmt.Sprintf("%s (timeout %s)", st.Pkg, to), tail(res.Output, 20)
			return false
		case failedRun(res):
			r.Verdict, r.By, r.Detail = Killed, st.Pkg+" "+firstFailed(res), failLines(res.Output)
			return false
		}
	}
	r.Verdict = Survived
	return true
}

// raceReport is the first data race a run printed, cut to its first lines.
func raceReport(out string) string {
	i := strings.Index(out, DataRace)
	lines := strings.SplitN(out[i:], "\n", 25)
	return strings.Join(lines[:min(len(lines), 24)], "\n")
}

// ranTests checks a stage's baseline run: its tests ran, so that they can
// kill. A binary every test of which skipped can kill nothing, and a
// Docker stage may skip no test for want of an engine (with
// RequireDockerEnv=1 such a test fails instead; this is the backstop for a
// test that checks the engine itself).
func ranTests(st Stage, res mutant.Result) error {
	sk := skipped(res.Output)
	if len(res.Passed) == 0 {
		return fmt.Errorf("%s ran no test on the unmutated tree (%d skipped): it could kill nothing\n%s", st.Pkg, len(sk), tail(res.Output, 10))
	}
	if st.Docker && strings.Contains(res.Output, DockerMissing) {
		return fmt.Errorf("%s skipped tests for want of a Docker engine (%s): a Docker stage must run them\n%s", st.Pkg, strings.Join(sk, ", "), tail(res.Output, 10))
	}
	return nil
}

// ScratchDir is where test binaries run, relative to the module root.
const ScratchDir = ".mutate"

// scratch makes the directory a test binary of pkg runs in: a fresh tree
// under <root>/.mutate that mirrors the module down to pkg's directory, so
// that a test finds its testdata and what it reads by a relative path
// (cmd/codeboost/cli reads ../../../README.md), while a mutant that writes
// files where it should not (such as a relative diagnostics directory)
// leaves them there and not in the source tree. Each directory on the way
// is a real directory linking every entry of its original but the next one
// on the way; pkg's own directory links everything but its Go files. The
// module's go.mod, go.sum and .git are not linked, so a test that runs the
// go command or git from there still finds the real module root above
// .mutate (the overlay names the real files); the go command ignores
// directories starting with a dot.
// It returns the tree's top, which the caller removes (os.RemoveAll
// removes the links, never what they name), and pkg's directory in it.
func scratch(root, pkg string) (top, dir string, err error) {
	base := filepath.Join(root, ScratchDir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", err
	}
	rel := strings.Trim(pkg, "./")
	top, err = os.MkdirTemp(base, strings.ReplaceAll(rel, "/", "_")+"-")
	if err != nil {
		return "", "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(top)
		}
	}()
	src, err := filepath.Abs(root)
	if err != nil {
		return "", "", err
	}
	parts := strings.Split(rel, "/")
	dst := top
	for k := 0; k <= len(parts); k++ {
		next := ""
		if k < len(parts) {
			next = parts[k]
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return "", "", err
		}
		for _, e := range entries {
			n := e.Name()
			switch {
			case n == next,
				k == 0 && (n == ScratchDir || n == "go.mod" || n == "go.sum" || n == "go.work" || n == "go.work.sum" || n == ".git"),
				next == "" && strings.HasSuffix(n, ".go"):
				continue
			}
			if err := os.Symlink(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
				return "", "", err
			}
		}
		if next == "" {
			break
		}
		src, dst = filepath.Join(src, next), filepath.Join(dst, next)
		if err := os.Mkdir(dst, 0o755); err != nil {
			return "", "", err
		}
	}
	return top, dst, nil
}

// RemoveScratch removes <root>/.mutate if nothing is left in it.
func RemoveScratch(root string) { os.Remove(filepath.Join(root, ScratchDir)) }

// failedRun reports whether a test binary's run failed: a test failed, or
// the binary exited in error (a panic, a fatal error) for a reason other
// than a left-behind process holding its output open.
func failedRun(res mutant.Result) bool {
	return len(res.Failed) > 0 || (res.Err != nil && !errors.Is(res.Err, exec.ErrWaitDelay))
}

// firstFailed names the failed test, the most precise one: a parent's
// "--- FAIL" line comes before its subtests'.
func firstFailed(res mutant.Result) string {
	for _, f := range res.Failed {
		if strings.Contains(f, "/") {
			return f
		}
	}
	if len(res.Failed) > 0 {
		return res.Failed[0]
	}
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return "(" + strings.TrimSpace(l) + ")"
		}
	}
	if res.Err != nil {
		return "(" + res.Err.Error() + ")"
	}
	return "(failed)"
}

// failLines keeps the lines of a failing run that say why: testscript's
// FAIL: line, test errors, panics; or else its tail.
func failLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "FAIL: ") || strings.HasPrefix(t, "panic: ") || strings.HasPrefix(t, "--- FAIL") ||
			(strings.Contains(t, "_test.go:") && !strings.HasPrefix(t, "---")) {
			keep = append(keep, t)
		}
		if len(keep) == 8 {
			break
		}
	}
	if len(keep) == 0 {
		return tail(out, 12)
	}
	return strings.Join(keep, "\n")
}

func binName(pkg string) string {
	return strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_") + ".test"
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Compiles builds m's package under its overlay without linking or
// testing it, for checking operators cheaply (-compile); the error is the
// compiler's.
func Compiles(ctx context.Context, root string, m Mutant) error {
	dir, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	overlay, err := m.Mutant().Overlay(root, dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, mutant.GoCommand(), "build", "-overlay", overlay, "-o", os.DevNull, m.Pkg())
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, b)
	}
	return nil
}
