// Package dtest is D's conformance suite: the D contract (package dadapter)
// written once, as tests parameterised by the implementation, and run
// against the simulated D (dadapter/simd) and the Docker D
// (dadapter/docker). The scenarios replay races against the simulator, so
// that trust must be earned: where the two disagree, the simulator is wrong
// until shown otherwise.
//
// An implementation joins the suite through a Harness (harness.go): a fresh
// D per case and the few things the suite cannot do through the contract
// (let time pass, kill the runner process, look at what is left labelled
// for a runner). Each case is one subtest and checks one sentence of the
// contract, quoted in its doc comment (start.go, settle.go, storage.go,
// recovery.go, export.go, inspect.go, tree.go). Every case also ends with
// the same two checks: every callback the case registered was called
// exactly once, and nothing is left labelled for either runner. A harness may name cases
// its implementation is known to fail (Gaps): they are skipped with the
// reason, in the open, rather than left out.
//
// Bites (bites.go) runs a few cases against deliberately broken wrappers of
// an implementation and requires them to fail, so the suite cannot pass
// without the behaviour it claims to check.
//
// Only tests import it. It imports the standard library, testing, words and
// dadapter; never an implementation.
package dtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// testCase is one contract sentence and the subtest that checks it.
type testCase struct {
	name string
	run  func(s *suite)
}

// cases are the suite, in the order Run runs them.
var cases = []testCase{
	{"start-refuses-only-when-nothing-was-allocated", startRefuses},
	{"start-returns-at-once", startReturnsAtOnce},
	{"settles-only-after-everything-stopped", settlesAfterEverythingStopped},
	{"agent-exits-on-its-own", exitsOnItsOwn},
	{"first-stop-reason-kept", firstStopReasonKept},
	{"deadline-stops-the-agent", deadlineStopsTheAgent},
	{"output-limit-stops-the-agent", outputLimitStopsTheAgent},
	{"callbacks-called-exactly-once", callbacksOnce},
	{"storage-labelled-with-its-owner", storageLabelled},
	{"allocation-refuses-an-owner-that-is-no-label", allocationRefusesBadOwner},
	{"allocation-id-names-one-allocation", allocationIDNamesOneAllocation},
	{"aborted-allocation-leaves-nothing", abortedAllocation},
	{"task-clone", taskClone},
	{"recovery-keeps-storage-and-returns-handles", recoveryKeepsStorage},
	{"recovery-removes-only-this-runners-agents", recoveryScopedAgents},
	{"recovery-refused-while-this-process-holds-storage", recoveryRefusedWhileHeld},
	{"recovered-handles-held-until-removed", recoveredHandlesHeld},
	{"unowned-resources-listed-never-removed", unownedListed},
	{"partial-output-bounded", partialOutput},
	{"export-aborted", exportAborted},
	{"removal", removal},
	{"commit-released", commitReleased},
	{"inspect-lists-the-agents-changes", inspectListsTheAgentsChanges},
	{"inspect-ignored", inspectIgnored},
	{"inspect-nested", inspectNested},
	{"inspect-removed-refused", inspectRemovedRefused},
	{"tree-fits-a-fresh-storage", treeFitsAFreshStorage},
	{"tree-refuses-a-create-of-an-existing-path", treeRefusesACreateOfAnExistingPath},
	{"tree-refuses-another-head", treeRefusesAnotherHead},
	{"tree-of-removed-storage-fails", treeOfRemovedStorageFails},
	{"start-refuses-a-tree-of-another-head", startRefusesATreeOfAnotherHead},
}

// Run runs every case against the implementation h makes, each as a
// subtest with a fresh D. The cases run one after another: a Docker
// harness holds the machine's Docker lock for the whole run. A case the
// harness lists as a known gap (Gaps) is skipped, naming the gap.
func Run(t *testing.T, h Harness) {
	var gaps map[string]string
	if g, ok := h.(Gaps); ok {
		gaps = g.KnownGaps()
		for name := range gaps {
			if !slices.ContainsFunc(cases, func(c testCase) bool { return c.name == name }) {
				t.Errorf("known gap %q names no case", name)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if why := gaps[c.name]; why != "" {
				t.Skip("known gap: " + why)
			}
			runCase(t, h, c)
		})
	}
}

// runCase runs one case and its closing checks.
func runCase(t *testing.T, h Harness, c testCase) {
	s := &suite{t: t, impl: h.New(t), reg: &registry{}}
	c.run(s)
	s.finish()
}

func caseNamed(name string) testCase {
	for _, c := range cases {
		if c.name == name {
			return c
		}
	}
	panic("dtest: no case " + name)
}

// suite is one case's state: the implementation and the callbacks the
// case registered, which finish checks were each called exactly once.
type suite struct {
	t    *testing.T
	impl Impl
	reg  *registry // shared with the case's subtests
}

// registry is the callbacks a case and its subtests registered.
type registry struct {
	mu        sync.Mutex
	callbacks []tracked
}

// run runs fn as a subtest of the case, over the same world.
func (s *suite) run(name string, fn func(s *suite)) {
	s.t.Run(name, func(t *testing.T) { fn(&suite{t: t, impl: s.impl, reg: s.reg}) })
}

// tracked is a registered callback finish checks.
type tracked interface {
	what() string
	count() int
}

// calls records every call of one callback, from whatever goroutine D
// calls it on (the Docker D calls from its own, the simulator inline).
type calls[T any] struct {
	name string
	mu   sync.Mutex
	got  []T
}

func (c *calls[T]) what() string { return c.name }

func (c *calls[T]) add(v T) {
	c.mu.Lock()
	c.got = append(c.got, v)
	c.mu.Unlock()
}

func (c *calls[T]) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// first is the first call's value; call it only once count() > 0.
func (c *calls[T]) first() T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[0]
}

func (c *calls[T]) called() bool { return c.count() > 0 }

// result is what a done callback with a value and an error received.
type result[T any] struct {
	v   T
	err error
}

// track makes a callback recorder that finish requires to have been
// called exactly once.
func track[T any](s *suite, format string, args ...any) *calls[T] {
	c := &calls[T]{name: fmt.Sprintf(format, args...)}
	s.reg.mu.Lock()
	s.reg.callbacks = append(s.reg.callbacks, c)
	s.reg.mu.Unlock()
	return c
}

// wait lets the implementation make progress until c has been called.
func wait[T any](s *suite, c *calls[T]) T {
	s.t.Helper()
	s.impl.Wait(s.t, c.name, c.called)
	return c.first()
}

// finish is every case's last step: "Each callback is called exactly once"
// (package dadapter), and whatever the case made is gone, for both runners.
func (s *suite) finish() {
	s.t.Helper()
	s.impl.Idle(s.t)
	s.reg.mu.Lock()
	callbacks := slices.Clone(s.reg.callbacks)
	s.reg.mu.Unlock()
	for _, c := range callbacks {
		if n := c.count(); n != 1 {
			s.t.Errorf("%s called %d times, want exactly once", c.what(), n)
		}
	}
	for _, owner := range []string{s.impl.Owner(), s.impl.OtherOwner()} {
		if left := s.objects(owner); len(left) > 0 {
			s.t.Errorf("left labelled for runner %s after the case removed everything:\n\t%s", owner, join(left))
		}
	}
}

func (s *suite) d() dadapter.D { return s.impl.D() }

// objects lists what the implementation holds for owner, failing the test
// when it cannot tell.
func (s *suite) objects(owner string) []Object {
	s.t.Helper()
	objs, err := s.impl.Objects(owner)
	if err != nil {
		s.t.Fatalf("list the objects of runner %s: %v", owner, err)
	}
	return objs
}

// of keeps the objects of role labelled with attempt.
func of(objs []Object, role Role, attempt string) []Object {
	var out []Object
	for _, o := range objs {
		if o.Role == role && o.Attempt == attempt {
			out = append(out, o)
		}
	}
	return out
}

func join(objs []Object) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.String())
	}
	return strings.Join(s, "\n\t")
}

// NewID returns a fresh lowercase UUID v4: the contract's form for attempt
// and allocation IDs.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewToken returns a fresh runner owner token: 32 lowercase hex.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

// attempt is one attempt's prepared task storage and clone, as the runner
// has them when it calls Start.
type attempt struct {
	owner string
	id    string
	alloc string
	src   dadapter.Source
	fs    dadapter.TaskFilesystems
	clone dadapter.Clone
}

// prepared allocates task storage and a task clone for a fresh attempt of
// owner, as the runner's preparation does, failing the test if either
// fails.
func (s *suite) prepared(owner string) *attempt {
	s.t.Helper()
	a := &attempt{owner: owner, id: NewID(), alloc: NewID(), src: s.impl.Source(s.t)}
	fs, err := s.prepare(a.storageOwner(), a.src)
	if err != nil {
		s.t.Fatalf("PrepareTaskFilesystems for attempt %s: %v", a.id, err)
	}
	a.fs = fs
	a.clone, _, err = s.cloneIn(context.Background(), s.impl.AttemptDir(s.t, owner, a.id), a.src)
	if err != nil {
		s.t.Fatalf("CreateTaskClone for attempt %s: %v", a.id, err)
	}
	return a
}

func (a *attempt) storageOwner() dadapter.StorageOwner {
	return dadapter.StorageOwner{RunnerOwner: a.owner, AttemptID: a.id, AllocationID: a.alloc}
}

// prepare allocates task storage and waits for its done.
func (s *suite) prepare(owner dadapter.StorageOwner, src dadapter.Source) (dadapter.TaskFilesystems, error) {
	return s.prepareCtx(context.Background(), owner, src)
}

func (s *suite) prepareCtx(ctx context.Context, owner dadapter.StorageOwner, src dadapter.Source) (dadapter.TaskFilesystems, error) {
	s.t.Helper()
	done := track[result[dadapter.TaskFilesystems]](s, "PrepareTaskFilesystems(%s) done", owner.AttemptID)
	s.d().PrepareTaskFilesystems(ctx, owner, src, nil, func(fs dadapter.TaskFilesystems, err error) {
		done.add(result[dadapter.TaskFilesystems]{fs, err})
	})
	r := wait(s, done)
	if r.err == nil && r.v == nil {
		s.t.Fatalf("PrepareTaskFilesystems(%s) reported neither storage nor an error", owner.AttemptID)
	}
	return r.v, r.err
}

// cloneIn makes a task clone under parent and reports whether any process
// group was reported after done.
func (s *suite) cloneIn(ctx context.Context, parent string, src dadapter.Source) (dadapter.Clone, bool, error) {
	s.t.Helper()
	done := track[result[dadapter.Clone]](s, "CreateTaskClone(%s) done", filepath.Base(parent))
	var mu sync.Mutex
	late := false
	s.d().CreateTaskClone(ctx, parent, src, func(dadapter.ProcessGroup) {
		mu.Lock()
		defer mu.Unlock()
		if done.called() {
			late = true
		}
	}, func(c dadapter.Clone, err error) {
		done.add(result[dadapter.Clone]{c, err})
	})
	r := wait(s, done)
	mu.Lock()
	defer mu.Unlock()
	return r.v, late, r.err
}

// input is Start's input for a, running the fake agent in mode, with a
// deadline far enough away that only a case that sets one meets it.
func (s *suite) input(a *attempt, mode string) dadapter.InvocationInput {
	return dadapter.InvocationInput{
		RunnerOwner: a.owner, AttemptID: a.id, Phase: "execute",
		Deadline: s.impl.Now().Add(10 * time.Minute),
		Storage:  a.fs, Clone: a.clone, Prompt: "conformance: " + mode,
		Profile: s.impl.Profile(mode),
	}
}

// settled is what one settlement callback saw when it was called: the
// settlement, the agent objects of the attempt still present at that
// moment (there must be none), and whether the output sink had closed.
type settled struct {
	dadapter.Settlement
	agents     []Object
	listErr    error
	sinkClosed bool
	at         time.Time // the world's time of the call
}

// started is a started invocation with its recorders.
type started struct {
	a       *attempt
	h       dadapter.Handle
	sink    *Sink
	settled *calls[settled]
}

// start starts in, failing the test if Start refuses, and registers the
// settlement callback that snapshots what is left of the invocation.
func (s *suite) start(a *attempt, in dadapter.InvocationInput) *started {
	s.t.Helper()
	st := &started{a: a, sink: &Sink{}}
	in.Output = st.sink
	h, err := s.d().Start(in)
	if err != nil {
		s.t.Fatalf("Start(%s, %s): %v", in.AttemptID, modeOf(in), err)
	}
	if h == nil {
		s.t.Fatalf("Start(%s) returned neither a handle nor an error", in.AttemptID)
	}
	st.h = h
	st.settled = track[settled](s, "OnSettled of %s (%s)", in.AttemptID, modeOf(in))
	h.OnSettled(s.snapshot(st))
	return st
}

// snapshot is a settlement callback that records, at the moment it is
// called, what of the invocation is still there.
func (s *suite) snapshot(st *started) func(dadapter.Settlement) {
	return func(r dadapter.Settlement) {
		objs, err := s.impl.Objects(st.a.owner)
		st.settled.add(settled{Settlement: r, agents: of(objs, RoleAgent, st.a.id), listErr: err, sinkClosed: st.sink.Closes() > 0, at: s.impl.Now()})
	}
}

func modeOf(in dadapter.InvocationInput) string {
	if len(in.Profile.Argv) > 0 {
		return in.Profile.Argv[len(in.Profile.Argv)-1]
	}
	return "?"
}

// await waits for st's settlement and checks what held at that moment for
// every invocation: nothing of it was left running, and its output sink
// had closed ("Close exactly once: when the capture has stopped, before it
// calls the settlement callback").
func (s *suite) await(st *started) dadapter.Settlement {
	s.t.Helper()
	r := wait(s, st.settled)
	if r.listErr != nil {
		s.t.Errorf("list the objects at settlement: %v", r.listErr)
	}
	if len(r.agents) > 0 {
		s.t.Errorf("%s settled while these were still there:\n\t%s", st.a.id, join(r.agents))
	}
	if !r.sinkClosed {
		s.t.Errorf("%s settled before its output sink was closed", st.a.id)
	}
	if n := st.sink.Closes(); n != 1 {
		s.t.Errorf("output sink of %s closed %d times, want once", st.a.id, n)
	}
	if n := st.sink.WritesAfterClose(); n > 0 {
		s.t.Errorf("output sink of %s written %d times after it was closed", st.a.id, n)
	}
	return r.Settlement
}

// awaitOutput waits until the agent has written want to its output: it
// has started and is running.
func (s *suite) awaitOutput(st *started, want string) {
	s.t.Helper()
	s.impl.Wait(s.t, fmt.Sprintf("%s writes %q", st.a.id, want), func() bool {
		return strings.Contains(st.sink.String(), want) || st.settled.called()
	})
	if !strings.Contains(st.sink.String(), want) {
		r := st.settled.first()
		s.t.Fatalf("%s settled before it wrote %q: stop reason %q, exit %d: %s", st.a.id, want, r.StopReason, r.ExitCode, r.Diagnostic)
	}
}

// remove removes task storage, failing the test if it fails.
func (s *suite) remove(fs dadapter.TaskFilesystems) {
	s.t.Helper()
	if err := s.removeErr(fs); err != nil {
		s.t.Fatalf("RemoveTaskFilesystems(%s): %v", fs.Owner().AttemptID, err)
	}
}

func (s *suite) removeErr(fs dadapter.TaskFilesystems) error {
	s.t.Helper()
	done := track[error](s, "RemoveTaskFilesystems(%s) done", fs.Owner().AttemptID)
	s.d().RemoveTaskFilesystems(fs, done.add)
	return wait(s, done)
}

func (s *suite) export(ctx context.Context, fs dadapter.TaskFilesystems, maxBytes int) (dadapter.ExportResult, error) {
	s.t.Helper()
	done := track[result[dadapter.ExportResult]](s, "ExportTaskDiff(%s, %d) done", fs.Owner().AttemptID, maxBytes)
	s.d().ExportTaskDiff(ctx, fs, maxBytes, func(r dadapter.ExportResult, err error) {
		done.add(result[dadapter.ExportResult]{r, err})
	})
	r := wait(s, done)
	return r.v, r.err
}

func (s *suite) commit(fs dadapter.TaskFilesystems) (dadapter.Bundle, error) {
	s.t.Helper()
	done := track[result[dadapter.Bundle]](s, "CommitTaskChanges(%s) done", fs.Owner().AttemptID)
	s.d().CommitTaskChanges(context.Background(), fs, func(b dadapter.Bundle, err error) {
		done.add(result[dadapter.Bundle]{b, err})
	})
	r := wait(s, done)
	return r.v, r.err
}

func (s *suite) release(fs dadapter.TaskFilesystems) error {
	s.t.Helper()
	done := track[error](s, "ReleaseTaskCommit(%s) done", fs.Owner().AttemptID)
	s.d().ReleaseTaskCommit(fs, done.add)
	return wait(s, done)
}

func (s *suite) recover(owner string) (dadapter.RecoveryReport, error) {
	s.t.Helper()
	done := track[result[dadapter.RecoveryReport]](s, "RecoverLeftovers(%s) done", owner)
	s.d().RecoverLeftovers(context.Background(), owner, func(r dadapter.RecoveryReport, err error) {
		done.add(result[dadapter.RecoveryReport]{r, err})
	})
	r := wait(s, done)
	return r.v, r.err
}

// mustRecover runs recovery, failing the test if it fails.
func (s *suite) mustRecover(owner string) dadapter.RecoveryReport {
	s.t.Helper()
	r, err := s.recover(owner)
	if err != nil {
		s.t.Fatalf("RecoverLeftovers(%s): %v", owner, err)
	}
	return r
}

// storageOf returns the one recovered handle of attempt, failing when
// there is none or more than one.
func (s *suite) storageOf(r dadapter.RecoveryReport, attemptID string) dadapter.RecoveredStorage {
	s.t.Helper()
	var found []dadapter.RecoveredStorage
	for _, h := range r.Storage {
		if h.Owner().AttemptID == attemptID {
			found = append(found, h)
		}
	}
	if len(found) != 1 {
		s.t.Fatalf("recovery returned %d storage handles for attempt %s, want one (report: %s)", len(found), attemptID, describe(r))
	}
	return found[0]
}

func describe(r dadapter.RecoveryReport) string {
	var parts []string
	for _, h := range r.Storage {
		parts = append(parts, fmt.Sprintf("storage %+v", h.Owner()))
	}
	for _, u := range r.Unowned {
		parts = append(parts, fmt.Sprintf("unowned %s %s (%s)", u.Kind, u.Name, u.Reason))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, "; ")
}

// cancelled is a context already cancelled: an abort that came first.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Sink is an output sink that records what reaches it; it is safe for use
// from D's goroutines.
type Sink struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	closes     int
	afterClose int
}

func (k *Sink) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closes > 0 {
		k.afterClose++
		return len(p), nil
	}
	return k.buf.Write(p)
}

func (k *Sink) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closes++
	return nil
}

// String is what reached the sink so far.
func (k *Sink) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.buf.String()
}

// Closes counts the Close calls.
func (k *Sink) Closes() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closes
}

// WritesAfterClose counts the writes that came after a Close.
func (k *Sink) WritesAfterClose() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.afterClose
}

// ParseRemoveCommand reads a command D printed for an unowned resource
// back into its kind and name: what a harness's RemoveByCommand runs. It
// reports false for anything dadapter.RemoveCommand would not have
// printed.
func ParseRemoveCommand(cmd string) (dadapter.ResourceKind, string, bool) {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "", "", false
	}
	name := f[len(f)-1]
	for _, k := range []dadapter.ResourceKind{dadapter.KindContainer, dadapter.KindNetwork, dadapter.KindVolume} {
		if dadapter.RemoveCommand(k, name) == cmd {
			return k, name, true
		}
	}
	return "", "", false
}

// stopReasons are the reasons a settlement may carry.
var stopReasons = []words.StopReason{words.StopNone, words.StopCancelled, words.StopShutdown,
	words.StopTimeout, words.StopOutputLimit, words.StopCaptureFailure}

func knownStopReason(r words.StopReason) bool { return slices.Contains(stopReasons, r) }
