package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// The variables D gives every agent besides its profile's allow-list.
const (
	EnvPrompt  = "CODEBOOST_PROMPT"
	EnvAttempt = "CODEBOOST_ATTEMPT"
	EnvPhase   = "CODEBOOST_PHASE"
)

// maxDiagnostic bounds Settlement.Diagnostic: it is stored on the attempt
// row and shown on the screen, and an error from the engine can be long.
const maxDiagnostic = 2048

// Start checks the input on the caller's goroutine and returns the handle
// at once; every engine call runs on the handle's own goroutine, so the
// caller (the runner's loop) never waits on Docker ("Launch setup does not
// block the server"). It returns an error only when it allocated nothing
// ("Rule for D"), after closing the sink, which D owns from here on.
func (d *D) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	h, err := d.register(in)
	if err != nil {
		closeSink(in.Output)
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	go h.run()
	return h, nil
}

// register validates in, refuses task storage this adapter does not hold
// (removed, another D's, or another runner's), and records the new handle
// in the same critical section as its check for another handle of the
// attempt, so that two Starts of one attempt ID cannot both succeed.
func (d *D) register(in dadapter.InvocationInput) (*handle, error) {
	if err := checkInput(in); err != nil {
		return nil, err
	}
	st, err := d.heldStorage(in.Storage)
	if err != nil {
		return nil, err
	}
	if st.owner.RunnerOwner != in.RunnerOwner {
		return nil, fmt.Errorf("task storage %s belongs to another runner", st.owner.AllocationID)
	}
	if err := checkLaunchTree(in, st); err != nil {
		return nil, err
	}
	spec := d.agentSpec(in, st)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handles[in.AttemptID] != nil {
		return nil, fmt.Errorf("attempt %s already has an invocation that has not settled", in.AttemptID)
	}
	h := newHandle(d, in, spec)
	d.handles[in.AttemptID] = h
	return h, nil
}

// checkInput refuses what Start must refuse before it allocates anything,
// besides storage this adapter does not hold (register): IDs that cannot
// be labels, a deadline already passed, and a profile D cannot run.
func checkInput(in dadapter.InvocationInput) error {
	if !ids.ValidToken(in.RunnerOwner) {
		return fmt.Errorf("runner owner %.40q is not 32 lowercase hex", in.RunnerOwner)
	}
	if err := ids.CheckUUID("attempt ID", in.AttemptID); err != nil {
		return err
	}
	if !time.Now().Before(in.Deadline) {
		return errors.New("the invocation deadline has already passed")
	}
	return checkProfile(in.Profile)
}

func checkProfile(p dadapter.AgentProfile) error {
	if strings.TrimSpace(p.Image) == "" {
		return errors.New("the agent profile names no image")
	}
	if p.MemoryBytes < 0 || p.NanoCPUs < 0 || p.PIDs < 0 || p.OutputLimit < 0 {
		return errors.New("the agent profile has a negative limit")
	}
	for _, name := range p.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("the agent profile's environment names %.40q, which is not a variable name", name)
		}
		if name == EnvPrompt || name == EnvAttempt || name == EnvPhase {
			return fmt.Errorf("the agent profile's environment names %s, which D sets", name)
		}
	}
	return nil
}

// checkLaunchTree refuses a task tree that is not this launch's: checked
// for another head than the clone's and the storage's base, or naming a
// gitlink that is not a clean relative path, or one twice (the engine
// would refuse the mounts only once setup had begun). A zero Tree is no
// check at all, and mounts nothing: D's own tests start agents without
// one, and F always passes CheckTaskTree's answer.
func checkLaunchTree(in dadapter.InvocationInput, st *storage) error {
	t := in.Tree
	if t.Head == "" && len(t.Gitlinks) == 0 {
		return nil
	}
	if t.Head != in.Clone.Head || t.Head != st.base {
		return fmt.Errorf("the task tree was checked for head %.80q, not for the clone's head %.80q and the storage's base %s", t.Head, in.Clone.Head, st.base)
	}
	seen := map[string]bool{}
	for _, p := range t.Gitlinks {
		if err := checkTreePath(p); err != nil {
			return fmt.Errorf("the task tree's gitlink %w", err)
		}
		if seen[p] {
			return fmt.Errorf("the task tree names the gitlink %q twice", p)
		}
		seen[p] = true
	}
	return nil
}

// agentSpec is what D asks the engine for: an agent container locked down
// (lockedDown) so that the agent can change nothing but the task folder,
// read no credential it was not given, and reach no network it was not
// given; the profile loosens only its network and its limits.
//
// The adapter cannot cap the disk a container uses: the engine's storage
// driver here (fuse-overlayfs) has no --storage-opt size, so the task
// volume shares the host's disk, bounded only by the export's limits. The
// root filesystem is read-only and /tmp a tmpfs as large as the memory
// limit, against which its pages count, so only the task volume can grow.
func (d *D) agentSpec(in dadapter.InvocationInput, st *storage) client.ContainerCreateOptions {
	p := in.Profile
	memory := orDefault(p.MemoryBytes, DefaultMemoryBytes)
	// Only the writable phases may change the work tree: a question, a
	// planning or review invocation gets it read-only, so a read-only
	// attempt is read-only in fact, not by the agent's good manners.
	mounts := []mount.Mount{taskMount(st.work, taskDir, !words.WritablePhase(in.Phase)), taskMount(st.meta, metaDir, true)}
	for _, g := range in.Tree.Gitlinks {
		mounts = append(mounts, gitlinkMount(g))
	}
	host := lockedDown(memory, mounts...)
	if p.Network != "" {
		host.NetworkMode = container.NetworkMode(p.Network)
	}
	pids := orDefault(p.PIDs, DefaultPIDs)
	host.Resources = container.Resources{Memory: memory, NanoCPUs: orDefault(p.NanoCPUs, DefaultNanoCPUs), PidsLimit: &pids}
	grace := graceSeconds(d.opt.Grace)
	owner := dadapter.StorageOwner{RunnerOwner: in.RunnerOwner, AttemptID: in.AttemptID, AllocationID: st.owner.AllocationID}
	return client.ContainerCreateOptions{
		Name: agentName(in.AttemptID),
		Config: &container.Config{
			Image:        p.Image,
			Cmd:          p.Argv,
			User:         d.opt.AgentUser,
			Env:          agentEnv(in),
			WorkingDir:   taskDir,
			Labels:       ownerLabels(owner, KindAgent),
			AttachStdout: true,
			AttachStderr: true,
			StopTimeout:  &grace,
		},
		HostConfig: host,
	}
}

// taskMount mounts a task storage volume. NoCopy: an empty volume must not
// be filled from the image, whose files would then read as the agent's work.
func taskMount(volume, target string, readOnly bool) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: volume, Target: target, ReadOnly: readOnly,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
}

// gitlinkMount covers a submodule directory of the work tree with an
// empty, read-only, root-owned tmpfs: what the agent writes there would be
// in no commit and shown by no diff (git sees nothing inside a gitlink),
// so it may write nothing there. The mount goes with the container, so it
// needs no cleanup of its own, and the directory under it stays as
// CheckTaskTree proved it: there and empty.
func gitlinkMount(p string) mount.Mount {
	return mount.Mount{Type: mount.TypeTmpfs, Target: path.Join(taskDir, p), ReadOnly: true,
		TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o555}}
}

// agentEnv is the agent's environment: the allow-listed host variables
// that are set (its credentials), and what D tells every agent. Nothing
// else of the host's reaches it.
func agentEnv(in dadapter.InvocationInput) []string {
	var env []string
	for _, name := range in.Profile.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	// The metadata volume is root-owned (the agent must not write it), so
	// git as the agent user would refuse the repository as of dubious
	// ownership; the agent's git may read it.
	return append(env, EnvPrompt+"="+in.Prompt, EnvAttempt+"="+in.AttemptID, EnvPhase+"="+in.Phase,
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0="+taskDir)
}

// agentName names the container after its attempt, with a random suffix:
// when a create's answer never arrives, cleanup finds the container by
// this name (and all three owner labels), and no leftover of an earlier
// invocation can hold the name.
func agentName(attemptID string) string {
	return "codeboost-" + string(KindAgent) + "-" + attemptID + "-" + nonce()
}

func orDefault(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// graceSeconds is the grace in the engine's unit, rounded up so that a
// grace is never shortened.
func graceSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// handle is one invocation: its first stop reason, its settlement, and the
// context whose cancellation stops the engine call in flight.
type handle struct {
	d    *D
	in   dadapter.InvocationInput
	spec client.ContainerCreateOptions

	// ctx is cancelled by the first stop (Cancel, the deadline, the output
	// limit, a failed capture): setup's calls and the watch end with it.
	ctx      context.Context
	cancel   context.CancelFunc
	deadline *time.Timer

	mu      sync.Mutex
	reason  words.StopReason // the first stop reason, kept
	why     string           // D's words for it, when D stopped on its own
	settled *dadapter.Settlement
	waiting []func(dadapter.Settlement)
}

func newHandle(d *D, in dadapter.InvocationInput, spec client.ContainerCreateOptions) *handle {
	h := &handle{d: d, in: in, spec: spec}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.deadline = time.AfterFunc(time.Until(in.Deadline), func() {
		h.stop(words.StopTimeout, "stopped: the invocation deadline passed")
	})
	return h
}

// Cancel asks for a stop; the first reason D received stays. A stop
// always carries a reason, so that a settlement never reads as an agent
// that exited on its own: a Cancel without one counts as cancelled.
func (h *handle) Cancel(reason words.StopReason) {
	if reason == words.StopNone {
		reason = words.StopCancelled
	}
	h.stop(reason, "")
}

// stop records reason if it is the first, and cancels the engine call in
// flight. A stop after settlement changes nothing.
func (h *handle) stop(reason words.StopReason, why string) {
	h.mu.Lock()
	if h.settled == nil && h.reason == "" && reason != "" {
		h.reason, h.why = reason, why
		h.d.opt.Log.Info("docker: stopping agent", "attempt", h.in.AttemptID, "reason", reason)
	}
	h.mu.Unlock()
	h.cancel()
}

// stopReason is the first stop reason and D's words for it.
func (h *handle) stopReason() (words.StopReason, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason, h.why
}

func (h *handle) OnSettled(fn func(dadapter.Settlement)) {
	h.mu.Lock()
	s := h.settled
	if s == nil {
		h.waiting = append(h.waiting, fn)
	}
	h.mu.Unlock()
	if s != nil {
		fn(*s)
	}
}

// settle delivers s to every registered callback, once, and frees the
// attempt ID for a later Start.
func (h *handle) settle(s dadapter.Settlement) {
	h.deadline.Stop()
	h.cancel()
	h.mu.Lock()
	h.settled = &s
	fns := h.waiting
	h.waiting = nil
	h.mu.Unlock()
	h.d.mu.Lock()
	if h.d.handles[h.in.AttemptID] == h {
		delete(h.d.handles, h.in.AttemptID)
	}
	h.d.mu.Unlock()
	for _, fn := range fns {
		fn(s)
	}
}

func closeSink(s dadapter.OutputSink) {
	if s != nil {
		s.Close()
	}
}

// agent is the invocation's container, as far as setup got.
type agent struct {
	id       string // captured at create: proof of ownership on its own
	unknown  bool   // a create went out and no answer came back: look it up by name
	stream   *client.HijackedResponse
	capture  *capture
	captured chan struct{} // closed when the capture has stopped reading
	started  bool          // the start call answered
	exited   chan exit     // the wait's one outcome; nil until the wait is registered
	status   *exit         // that outcome, once received
	endWait  context.CancelFunc
}

// exit is the wait's outcome: the agent's exit code, or why it is unknown.
type exit struct {
	code int
	err  error
}

// launch is the setup: create, attach, start, wait. Each call is bounded
// by CallTimeout and ends at the first stop (the invocation deadline is a
// stop too, so it bounds setup), but for the create: see create.
func (h *handle) launch(a *agent) error {
	steps := []struct {
		what string
		run  func(context.Context, *agent) error
		ctx  context.Context
	}{
		{"create the agent container", h.create, context.Background()},
		{"attach to the agent's output", h.attach, h.ctx},
		{"start the agent", h.startAgent, h.ctx},
		{"wait for the agent", h.await, h.ctx},
	}
	for _, s := range steps {
		if err := h.d.call(s.ctx, func(ctx context.Context) error { return s.run(ctx, a) }); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// create makes the agent's container and captures its ID. A stop does not
// cut it short (CallTimeout still bounds it): a create abandoned in flight
// may still be carried out by the engine after cleanup has looked for it
// by name and found nothing, leaving a container no one removes, while
// the answer, which comes at once from an engine that works, names what
// cleanup must remove. The setup stops right after it.
func (h *handle) create(ctx context.Context, a *agent) error {
	res, err := h.d.cli.ContainerCreate(ctx, h.spec)
	if err != nil {
		a.unknown = !refused(err)
		return err
	}
	a.id = res.ID
	return nil
}

// attach connects the capture before the agent starts, so that no output
// is lost. The stream outlives the call's context: teardown closes it.
func (h *handle) attach(ctx context.Context, a *agent) error {
	res, err := h.d.cli.ContainerAttach(ctx, a.id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return err
	}
	a.stream = &res.HijackedResponse
	a.capture = newCapture(h)
	a.captured = make(chan struct{})
	go func() {
		defer close(a.captured)
		a.capture.read(a.stream.Reader)
	}()
	return nil
}

func (h *handle) startAgent(ctx context.Context, a *agent) error {
	_, err := h.d.cli.ContainerStart(ctx, a.id, client.ContainerStartOptions{})
	a.started = err == nil
	return err
}

// await registers the wait for the agent's exit. The wait's request lives
// as long as the agent, so it gets a context of its own, ended only at
// teardown; ctx bounds just its acknowledgement. Waiting for not-running
// after the start cannot miss an exit: an exited container answers at once.
func (h *handle) await(ctx context.Context, a *agent) error {
	wctx, end := context.WithCancel(context.Background())
	a.endWait = end
	cut := context.AfterFunc(ctx, end)
	res := h.d.cli.ContainerWait(wctx, a.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	acknowledged := cut()
	exited := make(chan exit, 1)
	a.exited = exited
	go func() {
		select {
		case r := <-res.Result:
			exited <- waitOutcome(r)
		case err := <-res.Error:
			exited <- exit{code: -1, err: err}
		}
	}()
	if !acknowledged {
		return ctx.Err()
	}
	return nil
}

// waitOutcome reads the wait's answer. A negative status code is no exit
// status (those are 0-255) but the engine's word that its wait ended
// without an exit (its side of the request ended first), with the reason
// in Error: the exit code is unknown and the agent may still run.
func waitOutcome(r container.WaitResponse) exit {
	if r.StatusCode >= 0 {
		return exit{code: int(r.StatusCode)}
	}
	why := "the engine's wait ended without an exit"
	if r.Error != nil && r.Error.Message != "" {
		why += ": " + r.Error.Message
	}
	return exit{code: -1, err: errors.New(why)}
}

// refused reports whether err is the engine's answer refusing a request
// (a 4xx status): the engine made nothing. Any other error (a timeout, a
// lost connection, an internal error) leaves open whether it did.
func refused(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsInvalidArgument(err) || cerrdefs.IsConflict(err) ||
		cerrdefs.IsAlreadyExists(err) || cerrdefs.IsPermissionDenied(err) || cerrdefs.IsUnauthorized(err) ||
		cerrdefs.IsFailedPrecondition(err) || cerrdefs.IsNotImplemented(err)
}

// capture reads the agent's output: stdout is its result, bounded by the
// profile's output limit; the end of stderr is kept for the settlement;
// stdout and stderr both go to the live sink.
type capture struct {
	h       *handle
	sink    dadapter.OutputSink
	limit   int
	result  []byte
	over    bool
	errTail tail // the last dadapter.StderrTail bytes of stderr
	// closing is set by teardown before it closes the stream, so that the
	// read error that follows is not taken for a failed capture.
	mu      sync.Mutex
	closing bool
}

func newCapture(h *handle) *capture {
	limit := h.in.Profile.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	return &capture{h: h, sink: h.in.Output, limit: limit, errTail: tail{limit: dadapter.StderrTail}}
}

// read demultiplexes the attach stream until it ends. A read that fails
// while the stream is still wanted loses output: D stops the agent with
// capture-failure rather than settle with a result it cannot vouch for. A
// stream that ends inside a frame has lost output too (whole).
func (c *capture) read(r io.Reader) {
	_, err := stdcopy.StdCopy(writerFunc(c.stdout), writerFunc(c.stderr), &whole{r: r})
	if err != nil && !c.isClosing() {
		c.h.stop(words.StopCaptureFailure, bound("stopped: the output capture failed: "+err.Error()))
	}
}

func (c *capture) stdout(p []byte) (int, error) {
	c.live(p)
	if c.over {
		return len(p), nil
	}
	if room := c.limit - len(c.result); len(p) > room {
		c.result = append(c.result, p[:room]...)
		c.over = true
		c.h.stop(words.StopOutputLimit, fmt.Sprintf("stopped: the agent's result passed the output limit of %d bytes", c.limit))
		return len(p), nil
	}
	c.result = append(c.result, p...)
	return len(p), nil
}

func (c *capture) stderr(p []byte) (int, error) {
	c.live(p)
	return c.errTail.Write(p)
}

// live passes output to the watchers; a sink's error never stops the
// capture.
func (c *capture) live(p []byte) {
	if c.sink != nil {
		_, _ = c.sink.Write(p)
	}
}

func (c *capture) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

func (c *capture) setClosing() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// bound cuts s to maxDiagnostic bytes on a rune boundary.
func bound(s string) string {
	if len(s) <= maxDiagnostic {
		return s
	}
	cut := maxDiagnostic - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
