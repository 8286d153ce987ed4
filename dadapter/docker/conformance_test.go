package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/docker"
	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestConformance runs D's conformance suite against the Docker D, on the
// daemon the environment names, with the fake agent as the agent. The
// simulator passes the same suite (dadapter/simd), which is what lets the
// scenarios trust it.
//
// The windows are short (grace 1 s, cleanup window 3 s, calls 2 s) so that
// the stop cases take seconds, not minutes.
func TestConformance(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Serial(t)
	h := &dockerHarness{cli: cli, agent: dockertest.FakeAgentImage(t, cli), helper: dockertest.HelperImage(t, cli)}
	// Every case ends with a daemon-wide leak check (dockertest.NoLeaks),
	// which leaves out what was on the daemon when this run took the lock:
	// on a shared daemon other runs' leftovers would fail every case and
	// hide this one's.
	dtest.Run(t, h)
}

// callTimeout bounds each engine call of the cases. Setup's calls are
// quick on an idle engine, but a CI run loads both cores with the other
// packages' tests, and at 2 s a create once ran past its bound there.
const callTimeout = 10 * time.Second

// dockerHarness makes one Docker D per case, over the images built once.
type dockerHarness struct {
	cli    *client.Client
	agent  string // the fake agent's image
	helper string // the helper image
}

func (h *dockerHarness) New(t *testing.T) dtest.Impl {
	w := &dockerWorld{cli: h.cli, agent: h.agent, owner: dtest.NewToken(), other: dtest.NewToken(),
		opt: docker.Options{Client: h.cli, RunnerRoot: t.TempDir(), HelperImage: h.helper,
			Grace: time.Second, CleanupWindow: 3 * time.Second, CallTimeout: callTimeout}}
	// Cleanups run last first: the purge, then the leak check, so a case
	// that failed half-way leaves nothing to the next one, and anything D
	// made without its runner label is still caught.
	t.Cleanup(func() { dockertest.NoLeaks(t, h.cli) })
	t.Cleanup(func() { w.purge(t) })
	w.d = w.newD(t)
	return w
}

// dockerWorld is one case's runner process (its D) on the shared daemon.
type dockerWorld struct {
	cli   *client.Client
	agent string
	opt   docker.Options
	owner string
	other string

	d       *docker.D
	crashed []*docker.D // dropped processes; their goroutines run on, as a killed process's containers do

	mu      sync.Mutex
	planted []plantedObject // legacy objects, removed by the purge if a case did not
}

type plantedObject struct {
	kind dadapter.ResourceKind
	name string
}

func (w *dockerWorld) newD(t *testing.T) *docker.D {
	d, err := docker.New(w.opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (w *dockerWorld) D() dadapter.D      { return w.d }
func (w *dockerWorld) Owner() string      { return w.owner }
func (w *dockerWorld) OtherOwner() string { return w.other }
func (w *dockerWorld) Now() time.Time     { return time.Now() }

// Source is a fresh git repository with one commit holding a README.md
// and a .gitignore that ignores *.log (dtest.Impl's Source).
func (w *dockerWorld) Source(t *testing.T) dadapter.Source {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=conformance", "GIT_AUTHOR_EMAIL=conformance@example.invalid",
			"GIT_COMMITTER_NAME=conformance", "GIT_COMMITTER_EMAIL=conformance@example.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet", "--initial-branch=main")
	for name, data := range map[string]string{"README.md": "# conformance\n", ".gitignore": "*.log\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "README.md", ".gitignore")
	git("commit", "--quiet", "-m", "conformance: base")
	return dadapter.Source{Repository: dir, Commit: git("rev-parse", "HEAD")}
}

// AttemptDir is <RunnerRoot>/<owner>/attempts/<attempt>, owner-only, as
// the runner makes it.
func (w *dockerWorld) AttemptDir(t *testing.T, owner, attemptID string) string {
	t.Helper()
	dir := filepath.Join(w.opt.RunnerRoot, owner, "attempts", attemptID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Profile runs the fake agent image, whose entrypoint is the agent: Argv
// is its command, so the mode is the agent's argv[1].
func (w *dockerWorld) Profile(mode string) dadapter.AgentProfile {
	return dadapter.AgentProfile{Image: w.agent, Argv: []string{mode}}
}

// Wait polls: the Docker D calls back from its own goroutines. The bound
// covers the slowest path of the short windows: a stop's grace, cleanup
// retries over the window, and each call's timeout.
func (w *dockerWorld) Wait(t *testing.T, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 90 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *dockerWorld) Idle(*testing.T) { time.Sleep(500 * time.Millisecond) }

// Crash forgets the D: nothing of it is called again. Its goroutines run
// on (a test cannot kill them), which is what a killed process's
// containers do; no case registers a callback it expects from them.
func (w *dockerWorld) Crash() {
	w.crashed = append(w.crashed, w.d)
	w.d = nil
}

func (w *dockerWorld) Restart() dadapter.D {
	d, err := docker.New(w.opt)
	if err != nil {
		panic(err) // New makes no engine call: only bad options fail, and these worked before
	}
	w.d = d
	return d
}

// PlantLegacy makes the object as a build before runner labels did: a
// codeboost label, no runner label. The container is created, never
// started.
func (w *dockerWorld) PlantLegacy(t *testing.T, kind dadapter.ResourceKind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := map[string]string{"io.codeboost.invocation": name}
	var err error
	switch kind {
	case dadapter.KindContainer:
		_, err = w.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
			Config: &container.Config{Image: w.agent, Cmd: []string{"sleep"}, Labels: labels}})
	case dadapter.KindNetwork:
		_, err = w.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Labels: labels})
	case dadapter.KindVolume:
		_, err = w.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels})
	default:
		t.Fatalf("no legacy %s", kind)
	}
	if err != nil {
		t.Fatalf("plant the legacy %s %s: %v", kind, name, err)
	}
	w.mu.Lock()
	w.planted = append(w.planted, plantedObject{kind, name})
	w.mu.Unlock()
}

// RemoveByCommand runs the printed command through the engine's API (the
// docker CLI need not be installed where the tests run).
func (w *dockerWorld) RemoveByCommand(t *testing.T, command string) {
	t.Helper()
	kind, name, ok := dtest.ParseRemoveCommand(command)
	if !ok {
		t.Fatalf("%q is not a command D prints", command)
	}
	if err := w.removeObject(kind, name); err != nil {
		t.Fatalf("%s: %v", command, err)
	}
}

func (w *dockerWorld) removeObject(kind dadapter.ResourceKind, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	switch kind {
	case dadapter.KindContainer:
		_, err = w.cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true})
	case dadapter.KindNetwork:
		_, err = w.cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{})
	case dadapter.KindVolume:
		_, err = w.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{})
	}
	return err
}

// Objects lists the containers, volumes and networks labelled with owner
// as their runner, by the kind label D gives them.
func (w *dockerWorld) Objects(owner string) ([]dtest.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", docker.LabelRunner+"="+owner)
	var out []dtest.Object
	add := func(what, name string, labels map[string]string) {
		out = append(out, dtest.Object{Role: role(docker.Kind(labels[docker.LabelKind])), Attempt: labels[docker.LabelAttempt],
			Name: fmt.Sprintf("%s %s (kind %q)", what, name, labels[docker.LabelKind])})
	}
	containers, err := w.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, c := range containers.Items {
		name := c.ID
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		add("container", name+" "+string(c.State), c.Labels)
	}
	volumes, err := w.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, v := range volumes.Items {
		add("volume", v.Name, v.Labels)
	}
	networks, err := w.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, n := range networks.Items {
		add("network", n.Name, n.Labels)
	}
	return out, nil
}

// role tells an invocation's objects, which must be gone at settlement,
// from task storage, which stays until it is removed.
func role(k docker.Kind) dtest.Role {
	switch k {
	case docker.KindAgent, docker.KindNetwork:
		return dtest.RoleAgent
	case docker.KindKeeper, docker.KindWork, docker.KindMeta:
		return dtest.RoleStorage
	}
	return dtest.RoleHelper
}

// purge removes whatever a case left labelled for its runners, and the
// legacy objects it planted, so that one failed case does not fail the
// next; the case itself has already reported what it left.
func (w *dockerWorld) purge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, owner := range []string{w.owner, w.other} {
		f := client.Filters{}.Add("label", docker.LabelRunner+"="+owner)
		if cs, err := w.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
			for _, c := range cs.Items {
				w.purged(t, "container", c.ID, func() error {
					_, err := w.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
					return err
				})
			}
		}
		if ns, err := w.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
			for _, n := range ns.Items {
				w.purged(t, "network", n.Name, func() error { _, err := w.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); return err })
			}
		}
		if vs, err := w.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f}); err == nil {
			for _, v := range vs.Items {
				w.purged(t, "volume", v.Name, func() error {
					_, err := w.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
					return err
				})
			}
		}
	}
	w.mu.Lock()
	planted := w.planted
	w.mu.Unlock()
	for _, p := range planted {
		if err := w.removeObject(p.kind, p.name); err == nil {
			t.Logf("purge: removed the legacy %s %s", p.kind, p.name)
		} else if !cerrdefs.IsNotFound(err) {
			t.Errorf("purge: remove the legacy %s %s: %v", p.kind, p.name, err)
		}
	}
}

func (w *dockerWorld) purged(t *testing.T, what, name string, remove func() error) {
	if err := remove(); err != nil && !cerrdefs.IsNotFound(err) {
		t.Errorf("purge: remove %s %s: %v", what, name, err)
		return
	}
	t.Logf("purge: removed %s %s", what, name)
}
