package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// BenchmarkAttempt times one read-only attempt through the adapter
// (allocate storage, start, settle, remove) beside the same engine calls
// made raw (volume create, container create, start, wait, container
// remove, volume remove) and a plain `docker run --rm`, in one run, with
// the fake agent's succeed mode. The adapter's parts are timed apart too,
// to say where its time goes: allocation seeds the storage from the
// runner-owned repository (git on the host, the staged commit, the archive
// API) and makes a keeper, which the raw calls do not.
//
//	go test ./dadapter/docker -run '^$' -bench Attempt/paired -benchtime 10x -count 8 | tee new.txt; benchstat new.txt
func BenchmarkAttempt(b *testing.B) {
	cli := dockertest.Client(b)
	dockertest.Serial(b)
	agent := dockertest.FakeAgentImage(b, cli)
	helper := dockertest.HelperImage(b, cli)
	root := b.TempDir()
	src := benchRepo(b)
	d, err := New(Options{Client: cli, RunnerRoot: root, HelperImage: helper})
	if err != nil {
		b.Fatal(err)
	}
	owner := dtest.NewToken()
	profile := dadapter.AgentProfile{Image: agent, Argv: []string{"succeed"}}

	// attempt is one whole attempt through the adapter: allocate, start
	// and settle, remove.
	attempt := func(b *testing.B) {
		fs := benchAllocate(b, d, owner, src)
		benchRun(b, d, fs, profile)
		benchRemove(b, d, fs)
	}
	b.Run("adapter", func(b *testing.B) {
		for b.Loop() {
			attempt(b)
		}
	})
	b.Run("adapter-allocate-remove", func(b *testing.B) {
		for b.Loop() {
			benchRemove(b, d, benchAllocate(b, d, owner, src))
		}
	})
	b.Run("adapter-start-settle", func(b *testing.B) {
		fs := benchAllocate(b, d, owner, src)
		defer benchRemove(b, d, fs)
		for b.Loop() {
			benchRun(b, d, fs, profile)
		}
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			benchRaw(b, cli, agent)
		}
	})
	// paired alternates one adapter attempt and one raw one, so that the
	// engine's drift over a run (it slows as its state grows) weighs on
	// both alike: its ratio is the figure to quote.
	b.Run("paired", func(b *testing.B) {
		var adapter, raw time.Duration
		for b.Loop() {
			t0 := time.Now()
			attempt(b)
			t1 := time.Now()
			benchRaw(b, cli, agent)
			adapter, raw = adapter+t1.Sub(t0), raw+time.Since(t1)
		}
		b.ReportMetric(float64(adapter.Nanoseconds())/float64(b.N), "adapter-ns/op")
		b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
		b.ReportMetric(float64(adapter)/float64(raw), "adapter/raw")
	})
	b.Run("docker-run-rm", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command("docker", "run", "--rm", agent, "succeed").CombinedOutput(); err != nil {
				b.Fatalf("docker run: %v\n%s", err, out)
			}
		}
	})
}

// benchRaw makes the engine calls of one attempt raw: volume create,
// container create, start, wait, container remove, volume remove.
func benchRaw(b *testing.B, cli *client.Client, agent string) {
	ctx := context.Background()
	v, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Labels: map[string]string{dockertest.TestLabel: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: agent, Cmd: []string{"succeed"}, Labels: map[string]string{dockertest.TestLabel: "bench"}},
		HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: v.Volume.Name, Target: "/task"}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	w := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		b.Fatal(err)
	}
	if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
	if _, err := cli.VolumeRemove(ctx, v.Volume.Name, client.VolumeRemoveOptions{}); err != nil {
		b.Fatal(err)
	}
}

func benchAllocate(b *testing.B, d *D, owner string, src dadapter.Source) dadapter.TaskFilesystems {
	o := dadapter.StorageOwner{RunnerOwner: owner, AttemptID: dtest.NewID(), AllocationID: dtest.NewID()}
	type result struct {
		fs  dadapter.TaskFilesystems
		err error
	}
	done := make(chan result, 1)
	d.PrepareTaskFilesystems(context.Background(), o, src, nil, func(fs dadapter.TaskFilesystems, err error) { done <- result{fs, err} })
	r := <-done
	if r.err != nil {
		b.Fatal(r.err)
	}
	return r.fs
}

// benchRun starts one invocation on fs as its own attempt and waits for
// its settlement. A settled attempt ID may start again (Start refuses only
// an unsettled one), so the storage's attempt ID serves every iteration.
func benchRun(b *testing.B, d *D, fs dadapter.TaskFilesystems, p dadapter.AgentProfile) {
	o := fs.Owner()
	h, err := d.Start(dadapter.InvocationInput{RunnerOwner: o.RunnerOwner, AttemptID: o.AttemptID, Phase: "review",
		Deadline: time.Now().Add(time.Minute), Storage: fs, Profile: p})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan dadapter.Settlement, 1)
	h.OnSettled(func(s dadapter.Settlement) { done <- s })
	if s := <-done; s.ExitCode != 0 || s.StopReason != "" {
		b.Fatalf("settled %+v", s)
	}
}

func benchRemove(b *testing.B, d *D, fs dadapter.TaskFilesystems) {
	done := make(chan error, 1)
	d.RemoveTaskFilesystems(fs, func(err error) { done <- err })
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// benchRepo is a user repository with one small commit.
func benchRepo(b *testing.B) dadapter.Source {
	dir := filepath.Join(b.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("A repository.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README.md"},
		{"-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dadapter.Source{Repository: dir}
}
