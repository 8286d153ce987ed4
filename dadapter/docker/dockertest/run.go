package dockertest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestLabel is the label Create puts on the containers it makes (the
// test's name), so that NoLeaks finds one a test forgot.
const TestLabel = LabelPrefix + "test"

// Sandbox is the host configuration the adapter gives an agent, for tests
// that run containers by hand: an init process (so SIGTERM reaches the
// agent), a read-only root with a tmpfs /tmp, no network, no capabilities
// and no privilege gain.
func Sandbox() *container.HostConfig {
	yes := true
	return &container.HostConfig{
		Init:           &yes,
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=64m"},
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
	}
}

// Create creates a container of cfg and host, labelled TestLabel, and
// removes it (forcibly, with its anonymous volumes) when the test ends.
func Create(t testing.TB, cli *client.Client, cfg *container.Config, host *container.HostConfig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := *cfg
	c.Labels = map[string]string{TestLabel: t.Name()}
	for k, v := range cfg.Labels {
		c.Labels[k] = v
	}
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &c, HostConfig: host})
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("remove container %s: %v", short(res.ID), err)
		}
	})
	return res.ID
}

// Volume creates a named volume labelled TestLabel and removes it when the
// test ends (after the containers Create made, which were created later).
func Volume(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Labels: map[string]string{TestLabel: t.Name()}})
	if err != nil {
		t.Fatalf("create volume: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.VolumeRemove(ctx, v.Volume.Name, client.VolumeRemoveOptions{}); err != nil {
			t.Errorf("remove volume %s: %v", v.Volume.Name, err)
		}
	})
	return v.Volume.Name
}

// Output is what a container that ran to its end said.
type Output struct {
	ExitCode       int64
	Stdout, Stderr string
}

// Run creates a container (Create), starts it, waits up to timeout for it
// to exit and returns its exit code and output. It fails the test when the
// container does not exit in time.
func Run(t testing.TB, cli *client.Client, cfg *container.Config, host *container.HostConfig, timeout time.Duration) Output {
	t.Helper()
	id := Create(t, cli, cfg, host)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start container: %v", err)
	}
	wait := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var out Output
	select {
	case r := <-wait.Result:
		out.ExitCode = r.StatusCode
	case err := <-wait.Error:
		t.Fatalf("wait for container %s: %v", short(id), err)
	}
	out.Stdout, out.Stderr = Logs(t, cli, id)
	return out
}

// Logs returns what the container has written so far to stdout and stderr.
func Logs(t testing.TB, cli *client.Client, id string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of container %s: %v", short(id), err)
	}
	defer logs.Close()
	var o, e bytes.Buffer
	if _, err := stdcopy.StdCopy(&o, &e, logs); err != nil {
		t.Fatalf("logs of container %s: %v", short(id), err)
	}
	return o.String(), e.String()
}
