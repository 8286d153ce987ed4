package dockertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
)

// agent is the fake agent's container configuration in mode, as the
// adapter runs agents: user 1000, in the sandbox, a fresh volume on /task.
func agent(t *testing.T, cli *client.Client, ref, mode string) (*container.Config, *container.HostConfig) {
	host := dockertest.Sandbox()
	host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: dockertest.Volume(t, cli), Target: "/task"}}
	return &container.Config{Image: ref, User: "1000:1000", Cmd: []string{mode}}, host
}

// TestFakeAgentWhoami: the fake agent runs as the user it is given, with a
// read-only root, a writable /task and no network.
func TestFakeAgentWhoami(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	ref := dockertest.FakeAgentImage(t, cli)
	if again := dockertest.FakeAgentImage(t, cli); again != ref {
		t.Errorf("second FakeAgentImage: %s, want %s", again, ref)
	}

	cfg, host := agent(t, cli, ref, "whoami")
	out := dockertest.Run(t, cli, cfg, host, time.Minute)
	want := "uid=1000\ngid=1000\nroot_writable=false\ntask_writable=true\nnetwork=false\ninterfaces=lo\n"
	if out.ExitCode != 0 || out.Stdout != want || out.Stderr != "fakeagent: whoami\n" {
		t.Errorf("exit %d\nstdout %q\nwant   %q\nstderr %q", out.ExitCode, out.Stdout, want, out.Stderr)
	}

	cfg, host = agent(t, cli, ref, "succeed")
	out = dockertest.Run(t, cli, cfg, host, time.Minute)
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, `"usage":{"inputTokens":1,"outputTokens":2,"costUsd":0.01}`) {
		t.Errorf("succeed: exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
	}

	cfg, host = agent(t, cli, ref, "")
	cfg.Cmd, cfg.Env = nil, []string{"FAKE_AGENT_MODE=fail"}
	if out = dockertest.Run(t, cli, cfg, host, time.Minute); out.ExitCode != 3 {
		t.Errorf("fail from FAKE_AGENT_MODE: exit %d, stderr %q", out.ExitCode, out.Stderr)
	}
}

// TestFakeAgentStopKillsChildren: with an init process, a stop's SIGTERM
// reaches the agent; the agent and its child both ignore it, and the kill
// after the grace period (1 s) ends the stop, children included.
func TestFakeAgentStopKillsChildren(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	ref := dockertest.FakeAgentImage(t, cli)
	ctx := context.Background()

	cfg, host := agent(t, cli, ref, "child-ignore-term")
	id := dockertest.Create(t, cli, cfg, host)
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wait until the child runs: both agents have said their mode.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stderr := dockertest.Logs(t, cli, id)
		if strings.Count(stderr, "fakeagent: ") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not start; stderr %q", stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	top, err := cli.ContainerTop(ctx, id, client.ContainerTopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for _, p := range top.Processes {
		procs = append(procs, strings.Join(p, " "))
	}
	t.Logf("processes:\n\t%s", strings.Join(procs, "\n\t"))
	var agents []string
	for _, p := range procs {
		if !strings.Contains(p, "docker-init") && strings.Contains(p, "/agent ") {
			agents = append(agents, p[strings.Index(p, "/agent "):])
		}
	}
	if want := []string{"/agent child-ignore-term", "/agent ignore-term"}; !slices.Equal(agents, want) {
		t.Errorf("agent processes %q, want %q (the agent and its child, under init)", agents, want)
	}

	grace := 1
	start := time.Now()
	if _, err := cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("stop with a 1 s grace period took %v", took.Round(time.Millisecond))
	if took < 900*time.Millisecond || took > 10*time.Second {
		t.Errorf("stop took %v: want the grace period, then the kill", took)
	}
	inspect, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := inspect.Container.State; s.Running || s.ExitCode != 137 {
		t.Errorf("after stop: running %t, exit %d; want killed (137)", s.Running, s.ExitCode)
	}
}

// TestSleepStopsOnTerm: the control for the test above: an agent that
// exits on SIGTERM ends a stop long before its grace period.
func TestSleepStopsOnTerm(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	ref := dockertest.FakeAgentImage(t, cli)
	ctx := context.Background()

	cfg, host := agent(t, cli, ref, "sleep")
	id := dockertest.Create(t, cli, cfg, host)
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, stderr := dockertest.Logs(t, cli, id); strings.Contains(stderr, "fakeagent: sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
	}
	grace := 10
	start := time.Now()
	if _, err := cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("stop of an agent that exits on SIGTERM took %v", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("stop took %v: SIGTERM did not reach the agent", took)
	}
	inspect, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := inspect.Container.State; s.ExitCode != 0 {
		t.Errorf("exit %d, want 0", s.ExitCode)
	}
}

// TestFakeAgentEdit: edit changes /task as the adapter's tests expect and
// reports success.
func TestFakeAgentEdit(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	t.Cleanup(func() { dockertest.NoLeaks(t, cli) })
	ref := dockertest.FakeAgentImage(t, cli)

	cfg, host := agent(t, cli, ref, "edit")
	cfg.Env = []string{"CODEBOOST_PROMPT=add a note"}
	if out := dockertest.Run(t, cli, cfg, host, time.Minute); out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, `{"summary":"fakeagent: edit"`) {
		t.Fatalf("edit: exit %d, stdout %q, stderr %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	cfg.Entrypoint, cfg.Cmd = []string{"/bin/sh", "-c"}, []string{"cat /task/NOTES.md /task/new.txt; ls -n /task"}
	out := dockertest.Run(t, cli, cfg, host, time.Minute)
	if !strings.HasPrefix(out.Stdout, "Notes by fakeagent.\nadd a note") || !strings.Contains(out.Stdout, " 1000     1000 ") {
		t.Errorf("/task after edit:\n%s%s", out.Stdout, out.Stderr)
	}
}

// TestSerialExcludesOtherProcesses: while a test holds Serial, another
// open file description (another process's) cannot lock the file.
func TestSerialExcludesOtherProcesses(t *testing.T) {
	tryLock := func() error {
		f, err := os.OpenFile(dockertest.LockFile, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	t.Run("held", func(t *testing.T) {
		dockertest.Serial(t)
		if err := tryLock(); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("flock while Serial holds it: %v, want EWOULDBLOCK", err)
		}
	})
	// Another package's Docker tests may hold the lock now (go test runs
	// packages side by side), so the release is shown by a blocking lock
	// that returns: without the release it would wait until the timeout.
	f, err := os.OpenFile(dockertest.LockFile, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Errorf("flock after Serial's test ended: %v", err)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestNoLeaksSeesALabelledVolume: NoLeaks reports what carries a codeboost
// label.
func TestNoLeaksSeesALabelledVolume(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	rec := &recorder{TB: t}
	name := dockertest.Volume(t, cli)
	dockertest.NoLeaks(rec, cli)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "volume "+name+" (label "+dockertest.TestLabel+")") {
		t.Errorf("NoLeaks reported %q, want volume %s", rec.errs, name)
	}
}

// TestNoLeaksLeavesOutWhatWasThere: what an earlier run left on the engine
// before this test took the lock is not this test's leak (that run's own
// check failed), and is left out; what this test makes is still reported.
// Without it, one leaking run failed every later Docker test on the
// engine: the mutation sweep counted those failures as kills.
func TestNoLeaksLeavesOutWhatWasThere(t *testing.T) {
	cli := dockertest.Client(t)
	var left string
	t.Run("an earlier run leaks", func(t *testing.T) {
		dockertest.Serial(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		v, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Labels: map[string]string{dockertest.TestLabel: t.Name()}})
		if err != nil {
			t.Fatal(err)
		}
		left = v.Volume.Name
	})
	t.Cleanup(func() {
		if left != "" {
			cli.VolumeRemove(context.Background(), left, client.VolumeRemoveOptions{})
		}
	})
	dockertest.Serial(t)
	if !dockertest.Preexisting("volume " + left) {
		t.Fatalf("volume %s, there when the lock was taken, is not preexisting", left)
	}
	rec := &recorder{TB: t}
	name := dockertest.Volume(t, cli)
	dockertest.NoLeaks(rec, cli)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "volume "+name) || strings.Contains(rec.errs[0], left) {
		t.Errorf("NoLeaks reported %q, want volume %s and not %s", rec.errs, name, left)
	}
}
