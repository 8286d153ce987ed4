// Package dockertest is test support for code that runs on a real Docker
// daemon: a client that skips the test when no daemon answers (or fails it
// when CODEBOOST_REQUIRE_DOCKER=1), a lock so that Docker tests of
// different packages never run at once, the fake agent's image, the helper
// image, and a leak check over everything labelled io.codeboost.*.
//
// Only tests import it. It may import the standard library, the moby
// client and dadapter/docker/image; it runs `go build` for the fake agent.
package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker/image"
)

// RequireEnv is the environment variable that turns "no Docker daemon
// answers" from a skip into a failure ("1"), for machines where the Docker
// tests must run.
const RequireEnv = "CODEBOOST_REQUIRE_DOCKER"

// LabelPrefix is the prefix of every label codeboost puts on Docker
// objects; NoLeaks looks for it.
const LabelPrefix = "io.codeboost."

// LockFile is the file Serial locks, shared by every test process of the
// machine.
var LockFile = filepath.Join(os.TempDir(), "codeboost-docker-tests.lock")

// Client connects to the daemon the environment names (DOCKER_HOST and the
// rest, as the docker CLI reads them), negotiates the API version and
// pings. When no daemon answers it skips the test, or fails it when
// RequireEnv is "1". The client is closed when the test ends.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		Unavailable(t, "no Docker daemon answers at %s: %v", cli.DaemonHost(), err)
	}
	return cli
}

// Unavailable ends a test that cannot run for want of what the Docker
// tests need (an engine, a tool): it skips, saying why, or fails when
// RequireEnv is "1", where everything they need is to be there.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1, so this fails instead of skipping)", why, RequireEnv)
	}
	t.Skipf("%s, skipping (set %s=1 to fail instead)", why, RequireEnv)
}

// serial is held, within this process, by the test that holds LockFile.
var serial sync.Mutex

// before holds the labelled objects that were on the engine when the test
// holding serial took the lock ("container <id>", "volume <name>",
// "network <id>"): another process's leftovers, not this test's. A test
// that leaks fails its own NoLeaks; what it left must not fail every later
// test as well, as it did when a mutation sweep's mutant (rightly) leaked
// and every later e2e run reported the same objects. Guarded by serial.
var before map[string]bool

// Preexisting reports whether an object ("container <id>", "volume
// <name>", "network <id>") was on the engine when the running test took
// the lock, so that a test's own listing leaves it out.
func Preexisting(object string) bool { return before[object] }

// Serial makes the test the only Docker test running on the machine until
// it ends: `go test ./...` runs packages' test binaries in parallel, and
// Docker tests that count containers or stop daemons' work would see each
// other's. It takes an in-process mutex and an exclusive flock on LockFile,
// both released in t.Cleanup; call it once per test, before anything that
// registers a cleanup which touches Docker, so those cleanups run while the
// lock is held.
func Serial(t testing.TB) {
	t.Helper()
	serial.Lock()
	// Read-only is enough for flock, and lets another user's tests share
	// the file.
	f, err := os.OpenFile(LockFile, os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		serial.Unlock()
		t.Fatalf("docker test lock: %v", err)
	}
	if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		t.Logf("waiting for %s: another test process is using Docker", LockFile)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		f.Close()
		serial.Unlock()
		t.Fatalf("docker test lock %s: %v", LockFile, err)
	}
	before = labelledObjects(t)
	if len(before) > 0 {
		t.Logf("%d labelled Docker objects were on the engine before this test took the lock; they are not its own and its leak check leaves them out", len(before))
	}
	t.Cleanup(func() {
		before = nil
		f.Close() // closing the last descriptor releases the flock
		serial.Unlock()
	})
}

// labelledObjects lists what carries a LabelPrefix label on the engine
// the environment names; nothing when no engine answers (Client then
// skips or fails the test).
func labelledObjects(t testing.TB) map[string]bool {
	out := map[string]bool{}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return out
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return out
	}
	containers, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	for _, c := range containers.Items {
		if labelled(c.Labels) != "" {
			out["container "+c.ID] = true
		}
	}
	volumes, err := cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	for _, v := range volumes.Items {
		if labelled(v.Labels) != "" {
			out["volume "+v.Name] = true
		}
	}
	networks, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	for _, n := range networks.Items {
		if labelled(n.Labels) != "" {
			out["network "+n.ID] = true
		}
	}
	return out
}

// NoLeaks fails the test if any container, volume or network on the daemon
// carries a label whose key starts with LabelPrefix, but for those that
// were there when it took the lock (Preexisting). Call it at the end of
// a test, after the code under test has cleaned up, or register it with
// t.Cleanup right after Serial, so that it runs after every cleanup
// registered later (Create's, Volume's). It sees the whole daemon, so hold
// Serial.
func NoLeaks(t testing.TB, cli *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var leaks []string
	containers, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	for _, c := range containers.Items {
		if k := labelled(c.Labels); k != "" && !Preexisting("container "+c.ID) {
			leaks = append(leaks, fmt.Sprintf("container %s %v (%s, label %s)", short(c.ID), c.Names, c.State, k))
		}
	}
	volumes, err := cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	for _, v := range volumes.Items {
		if k := labelled(v.Labels); k != "" && !Preexisting("volume "+v.Name) {
			leaks = append(leaks, fmt.Sprintf("volume %s (label %s)", v.Name, k))
		}
	}
	networks, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	for _, n := range networks.Items {
		if k := labelled(n.Labels); k != "" && !Preexisting("network "+n.ID) {
			leaks = append(leaks, fmt.Sprintf("network %s (label %s)", n.Name, k))
		}
	}
	if len(leaks) > 0 {
		t.Errorf("Docker objects labelled %s* left behind:\n\t%s", LabelPrefix, strings.Join(leaks, "\n\t"))
	}
}

// labelled returns the first (sorted) label key with LabelPrefix, or "".
func labelled(labels map[string]string) string {
	var keys []string
	for k := range labels {
		if strings.HasPrefix(k, LabelPrefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	return keys[0]
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// FakeAgentName is the repository the fake agent's image is tagged in.
const FakeAgentName = "codeboost-fakeagent"

// fakeAgent is the fake agent's binary, built once per test process.
var fakeAgent struct {
	once sync.Once
	bin  []byte
	err  error
}

// FakeAgentImage returns the reference of an image with the fake agent
// (dadapter/docker/internal/fakeagent) as its entrypoint at /agent, over
// image.BaseFiles (busybox, /etc/passwd with agent 1000:1000, /tmp, and
// /task and /meta owned by agent). The image sets no user: the code under
// test must. The binary is built once per process with `CGO_ENABLED=0 go
// build -trimpath`; the image is built with image.Build, and removed when
// the test ends if this call made it. Call Serial first.
func FakeAgentImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	fakeAgent.once.Do(func() { fakeAgent.bin, fakeAgent.err = buildFakeAgent() })
	if fakeAgent.err != nil {
		t.Fatal(fakeAgent.err)
	}
	files, err := image.BaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, image.File{Path: "/agent", Mode: 0o755, Data: fakeAgent.bin})
	cfg := image.Config{Entrypoint: []string{"/agent"}, Env: []string{"PATH=/usr/bin:/bin"}}
	ref, err := image.ContentRef(FakeAgentName, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return built(t, cli, ref, func(ctx context.Context) error {
		_, err := image.Build(ctx, cli, ref, files, cfg)
		return err
	})
}

// HelperImage builds the helper image (image.Helper) and returns its
// reference; it is removed when the test ends if this call made it. Call
// Serial first.
func HelperImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	files, err := image.HelperFiles()
	if err != nil {
		t.Fatal(err)
	}
	cfg := image.HelperConfig()
	ref, err := image.ContentRef(image.HelperName, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return built(t, cli, ref, func(ctx context.Context) error {
		_, err := image.Build(ctx, cli, ref, files, cfg)
		return err
	})
}

// built runs build for ref and, if ref named no image before, removes it
// when the test ends.
func built(t testing.TB, cli *client.Client, ref string, build func(context.Context) error) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := cli.ImageInspect(ctx, ref)
	existed := err == nil
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatalf("inspect image %s: %v", ref, err)
	}
	start := time.Now()
	if err := build(ctx); err != nil {
		t.Fatal(err)
	}
	if !existed {
		t.Logf("built image %s in %v", ref, time.Since(start).Round(time.Millisecond))
		t.Cleanup(func() { RemoveImage(t, cli, ref) })
	}
	return ref
}

// RemoveImage removes the image ref names (untagging it, and deleting it
// when no other tag names it), reporting a failure as a test error.
func RemoveImage(t testing.TB, cli *client.Client, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		t.Errorf("remove image %s: %v", ref, err)
	}
}

// buildFakeAgent builds the fake agent, static, and returns the binary.
// `go test` puts its own go first in PATH.
func buildFakeAgent() ([]byte, error) {
	dir, err := os.MkdirTemp("", "codeboost-fakeagent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "agent")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/codeboost/codeboost/dadapter/docker/internal/fakeagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build the fake agent: %v\n%s", err, stderr.String())
	}
	return os.ReadFile(out)
}
