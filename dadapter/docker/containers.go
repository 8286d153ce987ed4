package docker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
)

// helperTmpfsBytes bounds /tmp in the export, inspect and commit
// containers, where git keeps its temporary index and the objects of the
// changed files: it is memory, counted against the container's memory
// limit.
const helperTmpfsBytes = 1 << 30

// lockedDown is the host configuration every container D starts begins
// from, so that no container of D's is looser than the agent's: a
// read-only root with a tmpfs /tmp of tmpfsBytes (none when 0), no network, no
// capabilities, no privilege gain (setuid binaries do not help), an init
// process so that a stop's SIGTERM reaches the program, and D's default
// memory, CPU and process limits. Callers loosen only what they must
// (start.go: the agent's network and the profile's limits).
func lockedDown(tmpfsBytes int64, mounts ...mount.Mount) *container.HostConfig {
	yes := true
	pids := int64(DefaultPIDs)
	var tmpfs map[string]string
	if tmpfsBytes > 0 {
		tmpfs = map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d", tmpfsBytes)}
	}
	return &container.HostConfig{
		Mounts:         mounts,
		ReadonlyRootfs: true,
		Tmpfs:          tmpfs,
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &yes,
		// Output is read from the attach stream; a log driver would only
		// copy it to the host's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:    DefaultMemoryBytes,
			NanoCPUs:  DefaultNanoCPUs,
			PidsLimit: &pids,
		},
	}
}

// readOnlyStorage mounts task storage as the export, inspect and commit
// containers see it: the work tree at /task and the metadata at /task/.git, both
// read-only, so that neither can change what it reads.
func readOnlyStorage(s *storage) []mount.Mount {
	return []mount.Mount{
		{Type: mount.TypeVolume, Source: s.work, Target: taskDir, ReadOnly: true},
		{Type: mount.TypeVolume, Source: s.meta, Target: metaDir, ReadOnly: true},
	}
}

// helperRun is one run of a helper-image container over task storage.
type helperRun struct {
	kind        Kind
	env         []string // besides PATH
	args        []string // the script's arguments
	stdoutLimit int      // what is kept of standard output; the script bounds what it writes
}

// helperOutput is what a helper container said and how it ended.
type helperOutput struct {
	stdout   []byte
	overflow bool   // it wrote more than stdoutLimit
	stderr   string // the last stderrTail bytes
	exitCode int64
}

const stderrTail = 4096

// runHelper runs the script in a locked-down helper container over s, as
// the agent's user, and removes the container before it returns, also
// when ctx ends first (whose error it then returns). Standard output comes
// through an attach made before the start, never through the log driver,
// which would mangle bytes that are not UTF-8. A removal that fails is
// part of the error.
func (d *D) runHelper(ctx context.Context, s *storage, r helperRun) (out helperOutput, err error) {
	name := objectName(r.kind, s.owner.AllocationID) + "-" + nonce()
	cfg := &container.Config{
		Image:           d.opt.HelperImage,
		User:            d.opt.AgentUser,
		Env:             append([]string{"PATH=/usr/bin:/bin", "CB_SCRIPT=" + helperScript}, r.env...),
		Cmd:             append([]string{"sh", "-c", `eval "$CB_SCRIPT"`, "codeboost"}, r.args...),
		WorkingDir:      "/",
		Labels:          ownerLabels(s.owner, r.kind),
		NetworkDisabled: true,
		AttachStdout:    true,
		AttachStderr:    true,
	}
	// The create is not cut short by ctx: its ID must come back, so that
	// the container is removed by it.
	var created client.ContainerCreateResult
	err = d.call(context.Background(), func(cctx context.Context) (err error) {
		created, err = d.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
			Name: name, Config: cfg, HostConfig: lockedDown(helperTmpfsBytes, readOnlyStorage(s)...),
		})
		return err
	})
	if err != nil {
		err = fmt.Errorf("create the %s container: %w", r.kind, err)
		if !refused(err) {
			rerr := (&cleanup{opt: d.opt}).retry(func(ctx context.Context) error { return d.removeContainerNamed(ctx, name, s.owner) })
			if rerr != nil {
				err = errors.Join(err, fmt.Errorf("container %s may be left behind: %w", name, rerr))
			}
		}
		return out, err
	}
	defer func() {
		if rerr := d.removeContainer(created.ID); rerr != nil {
			err = errors.Join(err, fmt.Errorf("the %s container %s was not removed: %w", r.kind, short(created.ID), rerr))
		}
	}()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	attach, err := d.cli.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return out, stopped(ctx, fmt.Errorf("attach to the %s container: %w", r.kind, err))
	}
	defer attach.Close()
	// The attached stream does not watch ctx once it is established.
	stop := context.AfterFunc(ctx, attach.Close)
	defer stop()
	if _, err := d.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return out, stopped(ctx, fmt.Errorf("start the %s container: %w", r.kind, err))
	}
	stdout := &capped{limit: r.stdoutLimit}
	stderr := &tail{limit: stderrTail}
	_, cerr := stdcopy.StdCopy(stdout, stderr, &whole{r: attach.Reader})
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if cerr != nil {
		return out, fmt.Errorf("read the %s container's output: %w", r.kind, cerr)
	}
	wait := d.cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-wait.Result:
		out.exitCode = res.StatusCode
	case err := <-wait.Error:
		return out, stopped(ctx, fmt.Errorf("wait for the %s container: %w", r.kind, err))
	}
	out.stdout, out.overflow, out.stderr = stdout.buf, stdout.overflow, string(stderr.buf)
	return out, nil
}

// stopped prefers ctx's error: a call cut short by an abort failed because
// of the abort.
func stopped(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// removeContainer removes a container by the ID D captured when it made it,
// which is proof of ownership on its own. One already gone is removed. A
// refusal is retried within the cleanup window, as the agent's and task
// storage's removals are: a helper container left by one refusal would
// hold the storage's volumes, and the storage's removal would fail too.
func (d *D) removeContainer(id string) error {
	return (&cleanup{opt: d.opt}).retry(func(ctx context.Context) error {
		_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		return gone(err)
	})
}

// removeContainerNamed removes a container whose ID never came back, found
// by name, only when all three owner labels prove it is owner's; one that
// is not is someone else's object under the name, and is left alone.
func (d *D) removeContainerNamed(ctx context.Context, name string, owner dadapter.StorageOwner) error {
	c, err := d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Container.Config == nil || !matches(c.Container.Config.Labels, owner) {
		return nil
	}
	_, err = d.cli.ContainerRemove(ctx, c.Container.ID, client.ContainerRemoveOptions{Force: true})
	return gone(err)
}

// nonce keeps the names of one allocation's helper containers apart, so
// that a leftover one never blocks the next run.
func nonce() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// capped keeps the first limit bytes written to it and drops the rest,
// without failing a write: the stream must be drained for the container
// to end.
type capped struct {
	limit    int
	buf      []byte
	overflow bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - len(c.buf); room < len(p) {
		c.overflow = true
		c.buf = append(c.buf, p[:max(room, 0)]...)
	} else {
		c.buf = append(c.buf, p...)
	}
	return len(p), nil
}

// whole passes a multiplexed attach stream through and fails its end
// inside a frame with io.ErrUnexpectedEOF. stdcopy.StdCopy takes an EOF in
// the middle of a frame for the stream's end and returns no error, so a
// stream cut short (a dropped connection, a proxy) would hand F part of a
// helper's output, a diff or a bundle, as if it were all of it.
type whole struct {
	r    io.Reader
	hdr  int     // bytes of the current frame's 8-byte header read so far
	size [4]byte // its payload size, big-endian, from header bytes 4 to 7
	left uint32  // payload bytes of the current frame not read yet
}

func (w *whole) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case w.left > 0:
			w.left--
		default: // a header byte
			if w.hdr >= 4 {
				w.size[w.hdr-4] = b
			}
			if w.hdr++; w.hdr == 8 {
				w.left, w.hdr = binary.BigEndian.Uint32(w.size[:]), 0
			}
		}
	}
	if err == io.EOF && (w.hdr > 0 || w.left > 0) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// tail keeps the last limit bytes written to it: where a failing program
// says why.
type tail struct {
	limit int
	buf   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if n := len(t.buf) - t.limit; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-empty lines of s, joined with " / ": where
// git says why it failed.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(no error output)"
	}
	return strings.Join(lines, " / ")
}
