package dtest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// biteEnv names, in a re-run of the test binary, the bite to run.
const biteEnv = "CODEBOOST_DTEST_BITE"

// bite is a deliberately broken wrapper of an implementation and the case
// that must fail against it, with what its failure says.
type bite struct {
	name string
	what string // the broken behaviour
	kase string // the case that must catch it
	want string // a piece of that case's failure message
	wrap func(d dadapter.D, impl Impl) dadapter.D
}

// bites are the broken wrappers. Each breaks one sentence a case claims
// to check, and nothing else.
var bites = []bite{
	{
		name: "second-cancel-replaces-the-stop-reason", kase: "first-stop-reason-kept",
		what: "a settlement carries the last Cancel's reason instead of D's first",
		want: `stop reason "shutdown", want "cancelled"`,
		wrap: func(d dadapter.D, _ Impl) dadapter.D {
			return wrapStart(d, func(h dadapter.Handle) dadapter.Handle { return &lastReason{Handle: h} })
		},
	},
	{
		name: "settles-twice", kase: "agent-exits-on-its-own",
		what: "OnSettled calls fn twice",
		want: "called 2 times, want exactly once",
		wrap: func(d dadapter.D, _ Impl) dadapter.D {
			return wrapStart(d, func(h dadapter.Handle) dadapter.Handle { return &twice{Handle: h} })
		},
	},
	{
		name: "settles-at-cancel", kase: "settles-only-after-everything-stopped",
		what: "Cancel settles at once, before the agent has stopped",
		want: "settled while these were still there",
		wrap: func(d dadapter.D, _ Impl) dadapter.D {
			return wrapStart(d, func(h dadapter.Handle) dadapter.Handle { return &early{Handle: h} })
		},
	},
	{
		name: "recovery-returns-every-runners-storage", kase: "recovery-keeps-storage-and-returns-handles",
		what: "RecoverLeftovers returns the storage of every runner it knows, not only the owner's",
		want: "returned another runner's storage",
		wrap: func(d dadapter.D, impl Impl) dadapter.D { return &unscoped{D: d, impl: impl} },
	},
	{
		name: "export-ignores-the-bound", kase: "partial-output-bounded",
		what: "ExportTaskDiff returns the whole diff whatever maxBytes says",
		want: "not reported truncated",
		wrap: func(d dadapter.D, _ Impl) dadapter.D { return unbounded{d} },
	},
}

// Bites runs each bite's case against h's implementation wrapped in the
// bite, in a re-run of the test binary, and requires it to fail with the
// bite's message: proof that the case checks what it claims, on this
// implementation. Call it from a top-level test of its own.
func Bites(t *testing.T, h Harness) {
	if name := os.Getenv(biteEnv); name != "" {
		for _, b := range bites {
			if b.name == name {
				t.Logf("bite %s: %s; case %s must fail", b.name, b.what, b.kase)
				runCase(t, bitten{h, b}, caseNamed(b.kase))
				return
			}
		}
		t.Fatalf("no bite %q", name)
	}
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	for _, b := range bites {
		t.Run(b.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), biteEnv+"="+b.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("case %s passed against a D where %s:\n%s", b.kase, b.what, out)
			}
			if !strings.Contains(string(out), b.want) {
				t.Fatalf("case %s failed against a D where %s, but not with %q:\n%s", b.kase, b.what, b.want, out)
			}
		})
	}
}

// bitten is a harness whose D is wrapped in a bite.
type bitten struct {
	h Harness
	b bite
}

func (x bitten) New(t *testing.T) Impl {
	impl := x.h.New(t)
	return &bittenImpl{Impl: impl, b: x.b, d: x.b.wrap(impl.D(), impl)}
}

type bittenImpl struct {
	Impl
	b bite
	d dadapter.D
}

func (x *bittenImpl) D() dadapter.D { return x.d }

func (x *bittenImpl) Restart() dadapter.D {
	x.d = x.b.wrap(x.Impl.Restart(), x.Impl)
	return x.d
}

// startWrapper wraps every handle Start returns.
type startWrapper struct {
	dadapter.D
	wrap func(dadapter.Handle) dadapter.Handle
}

func wrapStart(d dadapter.D, wrap func(dadapter.Handle) dadapter.Handle) dadapter.D {
	return startWrapper{d, wrap}
}

func (w startWrapper) Start(in dadapter.InvocationInput) (dadapter.Handle, error) {
	h, err := w.D.Start(in)
	if err != nil {
		return nil, err
	}
	return w.wrap(h), nil
}

// lastReason reports the last Cancel's reason.
type lastReason struct {
	dadapter.Handle
	mu   sync.Mutex
	last words.StopReason
}

func (h *lastReason) Cancel(r words.StopReason) {
	h.mu.Lock()
	h.last = r
	h.mu.Unlock()
	h.Handle.Cancel(r)
}

func (h *lastReason) OnSettled(fn func(dadapter.Settlement)) {
	h.Handle.OnSettled(func(s dadapter.Settlement) {
		h.mu.Lock()
		if h.last != "" {
			s.StopReason = h.last
		}
		h.mu.Unlock()
		fn(s)
	})
}

// twice calls the settlement callback twice.
type twice struct{ dadapter.Handle }

func (h *twice) OnSettled(fn func(dadapter.Settlement)) {
	h.Handle.OnSettled(func(s dadapter.Settlement) { fn(s); fn(s) })
}

// early settles as soon as it is cancelled, and drops the real settlement.
type early struct {
	dadapter.Handle
	mu sync.Mutex
	fn func(dadapter.Settlement)
}

func (h *early) OnSettled(fn func(dadapter.Settlement)) {
	h.mu.Lock()
	h.fn = fn
	h.mu.Unlock()
	h.Handle.OnSettled(func(dadapter.Settlement) {})
}

func (h *early) Cancel(r words.StopReason) {
	h.Handle.Cancel(r)
	h.mu.Lock()
	fn := h.fn
	h.fn = nil
	h.mu.Unlock()
	if fn != nil {
		fn(dadapter.Settlement{StopReason: r})
	}
}

// unscoped recovers every runner the world has, whichever was asked for.
type unscoped struct {
	dadapter.D
	impl Impl
}

func (u *unscoped) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	u.D.RecoverLeftovers(ctx, owner, func(r dadapter.RecoveryReport, err error) {
		if err != nil {
			done(r, err)
			return
		}
		other := u.impl.OtherOwner()
		if other == owner {
			other = u.impl.Owner()
		}
		u.D.RecoverLeftovers(ctx, other, func(o dadapter.RecoveryReport, oerr error) {
			if oerr == nil {
				r.Storage = append(r.Storage, o.Storage...)
			}
			done(r, nil)
		})
	})
}

// unbounded ignores maxBytes.
type unbounded struct{ dadapter.D }

func (u unbounded) ExportTaskDiff(ctx context.Context, fs dadapter.TaskFilesystems, _ int, done func(dadapter.ExportResult, error)) {
	u.D.ExportTaskDiff(ctx, fs, 1<<30, done)
}
