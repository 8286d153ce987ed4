package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
	"github.com/codeboost/codeboost/dadapter/dtest"
	"github.com/codeboost/codeboost/words"
)

// world is one test's engine: the test's own client (on the real socket),
// the images, and a runner root. newWorld takes the machine's Docker lock
// first and checks for leaks last, after every other cleanup of the test.
type world struct {
	t      *testing.T
	cli    *client.Client
	agent  string // the fake agent's image
	helper string
	root   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dockertest.Serial(t)
	cli := dockertest.Client(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	return &world{t: t, cli: cli, agent: dockertest.FakeAgentImage(t, cli), helper: dockertest.HelperImage(t, cli), root: t.TempDir()}
}

// sub is a world for a parallel subtest of w's test: it shares w's
// engine lock, leak check and images (they run when w's test ends, after
// every subtest), with a runner root of its own. Only tests whose objects
// cannot confuse each other run side by side this way.
func (w *world) sub(t *testing.T) *world {
	t.Helper()
	return &world{t: t, cli: w.cli, agent: w.agent, helper: w.helper, root: t.TempDir()}
}

// The shortened windows every test but one runs with.
const (
	testGrace         = time.Second
	testCleanupWindow = 3 * time.Second
	testCleanupRetry  = 200 * time.Millisecond
	testCallTimeout   = 5 * time.Second
)

// adapter is a D on cli (the real engine when nil) with the shortened
// windows; tweak changes its options.
func (w *world) adapter(cli *client.Client, tweak ...func(*Options)) *D {
	w.t.Helper()
	if cli == nil {
		cli = w.cli
	}
	opt := Options{Client: cli, RunnerRoot: w.root, HelperImage: w.helper,
		Grace: testGrace, CleanupWindow: testCleanupWindow, CleanupRetry: testCleanupRetry, CallTimeout: testCallTimeout}
	for _, f := range tweak {
		f(&opt)
	}
	d, err := New(opt)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// source is a user repository with one commit holding README.md.
func (w *world) source() dadapter.Source {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("A repository.\n"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "README.md"},
		{"-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			w.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dadapter.Source{Repository: dir}
}

// prepare allocates task storage for a fresh attempt of owner through d,
// and removes it through d when the test ends unless the test did.
func (w *world) prepare(d *D, owner string) *storage {
	w.t.Helper()
	o := dadapter.StorageOwner{RunnerOwner: owner, AttemptID: dtest.NewID(), AllocationID: dtest.NewID()}
	type result struct {
		fs  dadapter.TaskFilesystems
		err error
	}
	done := make(chan result, 1)
	d.PrepareTaskFilesystems(context.Background(), o, w.source(), nil, func(fs dadapter.TaskFilesystems, err error) { done <- result{fs, err} })
	r := waitFor(w.t, "PrepareTaskFilesystems", done, time.Minute)
	if r.err != nil {
		w.t.Fatalf("PrepareTaskFilesystems: %v", r.err)
	}
	st := r.fs.(*storage)
	w.t.Cleanup(func() {
		d.mu.Lock()
		held := d.held[st.owner.AllocationID] == st
		d.mu.Unlock()
		if held {
			w.remove(d, st)
		}
	})
	return st
}

// remove removes task storage through d, failing the test if it fails.
func (w *world) remove(d *D, fs dadapter.TaskFilesystems) {
	w.t.Helper()
	done := make(chan error, 1)
	d.RemoveTaskFilesystems(fs, func(err error) { done <- err })
	if err := waitFor(w.t, "RemoveTaskFilesystems", done, time.Minute); err != nil {
		w.t.Errorf("RemoveTaskFilesystems(%s): %v", fs.Owner().AllocationID, err)
	}
}

// profile runs the fake agent in mode.
func (w *world) profile(mode string) dadapter.AgentProfile {
	return dadapter.AgentProfile{Image: w.agent, Argv: []string{mode}}
}

// input is Start's input for an attempt on st, its own attempt, running
// the fake agent in mode, with a deadline no test meets by accident.
func (w *world) input(st *storage, mode string) dadapter.InvocationInput {
	return dadapter.InvocationInput{
		RunnerOwner: st.owner.RunnerOwner, AttemptID: st.owner.AttemptID, Phase: "execute",
		Deadline: time.Now().Add(10 * time.Minute), Storage: st, Prompt: "do " + mode,
		Profile: w.profile(mode), Output: &dtest.Sink{},
	}
}

// invocation is a started handle and what its settlement callback saw.
type invocation struct {
	t       *testing.T
	h       dadapter.Handle
	sink    *dtest.Sink
	began   time.Time
	settled chan settledSnapshot
}

// settledSnapshot is the settlement and what held when it arrived.
type settledSnapshot struct {
	dadapter.Settlement
	at         time.Time
	sinkCloses int
}

// start starts in on d, failing the test if Start refuses, and registers
// the settlement callback.
func start(t *testing.T, d *D, in dadapter.InvocationInput) *invocation {
	t.Helper()
	inv := &invocation{t: t, sink: in.Output.(*dtest.Sink), began: time.Now(), settled: make(chan settledSnapshot, 2)}
	h, err := d.Start(in)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	inv.h = h
	h.OnSettled(func(s dadapter.Settlement) {
		inv.settled <- settledSnapshot{Settlement: s, at: time.Now(), sinkCloses: inv.sink.Closes()}
	})
	return inv
}

// await waits for the settlement, and checks the sink's contract: closed
// exactly once, before the settlement callback, and never written after.
func (inv *invocation) await(within time.Duration) settledSnapshot {
	inv.t.Helper()
	s := waitFor(inv.t, "the settlement", inv.settled, within)
	if s.sinkCloses != 1 {
		inv.t.Errorf("the sink had been closed %d times when the settlement callback ran, want once", s.sinkCloses)
	}
	if n := inv.sink.Closes(); n != 1 {
		inv.t.Errorf("the sink was closed %d times, want once", n)
	}
	if n := inv.sink.WritesAfterClose(); n > 0 {
		inv.t.Errorf("the sink was written %d times after its close", n)
	}
	select {
	case again := <-inv.settled:
		inv.t.Errorf("the settlement callback was called twice (again with %+v)", again.Settlement)
	default:
	}
	return s
}

// awaitOutput waits until the agent has written want: it is running.
func (inv *invocation) awaitOutput(want string) {
	inv.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(inv.sink.String(), want) {
		if time.Now().After(deadline) {
			inv.t.Fatalf("the agent did not write %q within a minute (it wrote %q)", want, inv.sink.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answered runs one of D's calls that answer through a done callback with a
// value and an error, and waits at most two minutes for that answer.
func answered[T any](t *testing.T, what string, call func(done func(T, error))) (T, error) {
	t.Helper()
	type answer struct {
		v   T
		err error
	}
	c := make(chan answer, 1)
	call(func(v T, err error) { c <- answer{v, err} })
	r := waitFor(t, what, c, 2*time.Minute)
	return r.v, r.err
}

func waitFor[T any](t *testing.T, what string, c <-chan T, within time.Duration) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(within):
		t.Fatalf("%s did not arrive within %v", what, within)
		panic("unreachable")
	}
}

// agents lists the engine's containers labelled with attempt.
func (w *world) agents(attemptID string) []string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := w.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelAttempt+"="+attemptID).Add("label", LabelKind+"="+string(KindAgent))})
	if err != nil {
		w.t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestStartReturnsAtOnce: "Launch setup does not block the server": Start
// makes no engine call on the caller's goroutine, so it returns within
// 50 ms even when every engine request hangs; after a Cancel during that
// setup the handle still settles, bounded by the create's call bound and
// the cleanup window. The create never reached the engine, but D cannot
// know that: its settlement names the container by its label alone.
func TestStartReturnsAtOnce(t *testing.T) {
	w := newWorld(t)
	p, d, st := w.proxied(hungOptions)
	p.Stall(nil)

	in := w.input(st, "sleep")
	began := time.Now()
	inv := start(t, d, in)
	took := time.Since(began)
	t.Logf("Start returned in %v with every engine request stalled", took)
	if took > 50*time.Millisecond {
		t.Errorf("Start took %v, want under 50 ms", took)
	}
	inv.h.Cancel(words.StopCancelled)
	s := inv.await(2*d.opt.CallTimeout + d.opt.CleanupWindow + 5*time.Second)
	t.Logf("settled %v after the cancel: %+v", time.Since(began), s.Settlement)
	if s.StopReason != words.StopCancelled || s.ExitCode != -1 {
		t.Errorf("stop reason %q, exit %d; want %q, -1", s.StopReason, s.ExitCode, words.StopCancelled)
	}
	want := []dadapter.Resource{{Kind: dadapter.KindContainer, Label: LabelAttempt + "=" + in.AttemptID}}
	if !slices.Equal(s.Unreleased, want) {
		t.Errorf("unreleased %+v, want %+v (no ID: the create never answered)", s.Unreleased, want)
	}
	if left := w.agents(in.AttemptID); len(left) > 0 {
		t.Errorf("the stalled create made containers %v", left)
	}
}

// TestStartRefuses: "Rule for D": Start returns an error only when it
// allocated nothing (an owner token that is no label, another runner's
// task storage, storage this adapter does not hold, a deadline already
// passed, an attempt ID an unsettled handle owns), and closes the sink
// first, since D owns it from Start on.
func TestStartRefuses(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	owner := dtest.NewToken()
	st := w.prepare(d, owner)
	other := w.prepare(d, dtest.NewToken())
	first := start(t, d, w.input(st, "sleep"))
	first.awaitOutput("fakeagent: sleep")

	refusals := map[string]func(*dadapter.InvocationInput){
		"an owner token in upper case":      func(in *dadapter.InvocationInput) { in.RunnerOwner = strings.ToUpper(owner) },
		"an attempt ID that is no UUID":     func(in *dadapter.InvocationInput) { in.AttemptID = "attempt/1" },
		"no task storage":                   func(in *dadapter.InvocationInput) { in.Storage = nil },
		"another runner's task storage":     func(in *dadapter.InvocationInput) { in.Storage = other },
		"task storage this D does not hold": func(in *dadapter.InvocationInput) { in.Storage = &storage{owner: st.owner} },
		"a deadline already passed":         func(in *dadapter.InvocationInput) { in.Deadline = time.Now().Add(-time.Second) },
		"an image that is not named":        func(in *dadapter.InvocationInput) { in.Profile.Image = "" },
		"an environment naming CODEBOOST_PROMPT": func(in *dadapter.InvocationInput) {
			in.Profile.Env = []string{EnvPrompt}
		},
		"an attempt ID an unsettled handle owns": func(*dadapter.InvocationInput) {},
	}
	for why, change := range refusals {
		in := w.input(st, "succeed")
		change(&in)
		sink := in.Output.(*dtest.Sink)
		h, err := d.Start(in)
		if err == nil || h != nil {
			t.Errorf("Start accepted %s (handle %v, error %v)", why, h, err)
			if h != nil {
				h.Cancel(words.StopCancelled)
			}
			continue
		}
		t.Logf("refused %s: %v", why, err)
		if n := sink.Closes(); n != 1 {
			t.Errorf("Start refused %s with the sink closed %d times, want once", why, n)
		}
	}
	if left := w.agents(st.owner.AttemptID); len(left) != 1 {
		t.Errorf("after the refusals the attempt has %d agent containers, want the first one only", len(left))
	}
	first.h.Cancel(words.StopCancelled)
	first.await(time.Minute)
	again := start(t, d, w.input(st, "succeed"))
	if s := again.await(time.Minute); s.StopReason != "" || s.ExitCode != 0 {
		t.Errorf("the attempt started again after its handle settled: stop reason %q, exit %d; want none, 0", s.StopReason, s.ExitCode)
	}
}

// TestAgentLockDown: the agent runs as the configured non-root user, can
// write only /task (the root filesystem is read-only), has no network but
// loopback, and sees only the allow-listed host variables that are set,
// beside what D tells every agent.
func TestAgentLockDown(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	st := w.prepare(d, dtest.NewToken())

	who := start(t, d, w.input(st, "whoami"))
	s := who.await(time.Minute)
	for _, line := range []string{"uid=1000", "gid=1000", "root_writable=false", "task_writable=true", "network=false"} {
		if !slices.Contains(strings.Split(string(s.Output), "\n"), line) {
			t.Errorf("whoami printed %q, want the line %q", s.Output, line)
		}
	}
	// The read-only phases get the work tree read-only.
	for _, phase := range []string{words.PhaseQuestions, words.PhasePlanning, words.PhaseReview} {
		in := w.input(st, "whoami")
		in.Phase = phase
		s := start(t, d, in).await(time.Minute)
		if !slices.Contains(strings.Split(string(s.Output), "\n"), "task_writable=false") {
			t.Errorf("whoami in phase %s printed %q, want task_writable=false", phase, s.Output)
		}
	}

	t.Setenv("CODEBOOST_TEST_CREDENTIAL", "secret-1")
	t.Setenv("CODEBOOST_TEST_NOT_LISTED", "secret-2")
	in := w.input(st, "print-env")
	in.Prompt = "the prompt"
	in.Profile.Env = []string{"CODEBOOST_TEST_CREDENTIAL", "CODEBOOST_TEST_UNSET"}
	env := start(t, d, in)
	s = env.await(time.Minute)
	var names []string
	for _, kv := range strings.Split(strings.TrimSpace(string(s.Output)), "\n") {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	// PATH (the image's), HOSTNAME and HOME are the engine's own; the
	// GIT_CONFIG_* three let the agent's git read the root-owned metadata.
	want := []string{"CODEBOOST_ATTEMPT", "CODEBOOST_PHASE", "CODEBOOST_PROMPT", "CODEBOOST_TEST_CREDENTIAL",
		"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "HOME", "HOSTNAME", "PATH"}
	if !slices.Equal(names, want) {
		t.Errorf("the agent's environment has %v, want %v", names, want)
	}
	for _, kv := range []string{"CODEBOOST_TEST_CREDENTIAL=secret-1", "CODEBOOST_PROMPT=the prompt", "CODEBOOST_PHASE=execute", "CODEBOOST_ATTEMPT=" + in.AttemptID} {
		if !strings.Contains(string(s.Output), kv+"\n") {
			t.Errorf("the agent's environment %q lacks %s", s.Output, kv)
		}
	}
}

// TestAgentContainerSpec reads back what the engine made of the agent's
// container while it runs: the owner labels (the allocation is the
// storage's), the lock-down no agent mode can observe (capabilities,
// privilege gain, init, log driver, limits), and the task storage mounts.
func TestAgentContainerSpec(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	st := w.prepare(d, dtest.NewToken())
	in := w.input(st, "sleep")
	in.Profile.MemoryBytes, in.Profile.PIDs = 256<<20, 64
	inv := start(t, d, in)
	inv.awaitOutput("fakeagent: sleep")
	ids := w.agents(in.AttemptID)
	if len(ids) != 1 {
		t.Fatalf("%d agent containers for the attempt, want 1", len(ids))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := w.cli.ContainerInspect(ctx, ids[0], client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	labels := map[string]string{LabelRunner: in.RunnerOwner, LabelAttempt: in.AttemptID, LabelAllocation: st.owner.AllocationID, LabelKind: string(KindAgent)}
	for k, v := range labels {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Config.Labels[k], v)
		}
	}
	hc := c.HostConfig
	switch {
	case c.Config.User != DefaultAgentUser:
		t.Errorf("user %q, want %q", c.Config.User, DefaultAgentUser)
	case hc.Init == nil || !*hc.Init:
		t.Errorf("no init: the agent, as PID 1, would ignore SIGTERM")
	case !slices.Equal(hc.CapDrop, []string{"ALL"}):
		t.Errorf("capabilities dropped: %v, want ALL", hc.CapDrop)
	case !slices.Contains(hc.SecurityOpt, "no-new-privileges"):
		t.Errorf("security options %v lack no-new-privileges", hc.SecurityOpt)
	case !hc.ReadonlyRootfs || string(hc.NetworkMode) != "none" || hc.LogConfig.Type != "none":
		t.Errorf("read-only root %v, network %q, log driver %q; want true, none, none", hc.ReadonlyRootfs, hc.NetworkMode, hc.LogConfig.Type)
	case hc.Memory != 256<<20 || hc.NanoCPUs != DefaultNanoCPUs || hc.PidsLimit == nil || *hc.PidsLimit != 64:
		t.Errorf("memory %d, CPUs %d, PIDs %v; want the profile's 256 MiB and 64, the default CPUs", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
	}
	mounts := map[string]string{}
	for _, m := range c.Mounts {
		mounts[m.Destination] = m.Name + map[bool]string{true: " rw", false: " ro"}[m.RW]
	}
	if mounts[taskDir] != st.work+" rw" || mounts[metaDir] != st.meta+" ro" {
		t.Errorf("mounts %v, want %s rw at %s and %s ro at %s", mounts, st.work, taskDir, st.meta, metaDir)
	}
	inv.h.Cancel(words.StopCancelled)
	inv.await(time.Minute)
}

// TestSetupFailureSettles: a setup the engine refuses (an image it does
// not have: codeboost never pulls; a network that does not exist) is no
// Start error, since the engine was asked: the handle settles with
// capture-failure, exit -1 and "launch setup failed", after removing
// whatever setup made.
func TestSetupFailureSettles(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	st := w.prepare(d, dtest.NewToken())
	for what, change := range map[string]func(*dadapter.AgentProfile){
		"a missing image":   func(p *dadapter.AgentProfile) { p.Image = "codeboost-no-such-image:1" },
		"a missing network": func(p *dadapter.AgentProfile) { p.Network = "codeboost-no-such-network" },
	} {
		in := w.input(st, "succeed")
		change(&in.Profile)
		s := start(t, d, in).await(time.Minute)
		t.Logf("%s: %+v", what, s.Settlement)
		if s.StopReason != words.StopCaptureFailure || s.ExitCode != -1 || !strings.HasPrefix(s.Diagnostic, "launch setup failed: ") || len(s.Unreleased) > 0 {
			t.Errorf("%s: stop reason %q, exit %d, diagnostic %q, unreleased %v; want %q, -1, \"launch setup failed: …\", none",
				what, s.StopReason, s.ExitCode, s.Diagnostic, s.Unreleased, words.StopCaptureFailure)
		}
		if left := w.agents(in.AttemptID); len(left) > 0 {
			t.Errorf("%s: the failed setup left containers %v", what, left)
		}
	}
}
