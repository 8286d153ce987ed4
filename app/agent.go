package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
	"github.com/codeboost/codeboost/dadapter/nodocker"
	"github.com/codeboost/codeboost/demo"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/web"
	"github.com/codeboost/codeboost/words"
)

// engineTimeout bounds each call startup makes to the engine before the
// runner exists (the ping, the helper image, the agent image check).
const engineTimeout = 30 * time.Second

// newD picks the D the runner runs on: the demo's simulated agent, the
// Docker engine when an agent image is configured, or no D at all (a
// server that reviews plans; every attempt fails at preparation saying no
// agent is configured). An agent that is configured but cannot run is a
// startup error, never a silent fallback: the engine must answer, the
// helper image must build and the agent image must be on the engine.
func (a *App) newD() (dadapter.D, error) {
	if p := a.opt.Parts; p != nil {
		return p.D, nil
	}
	if a.opt.Demo {
		return demo.New(demo.Options{Loop: a.loop, Clock: a.clock, Seed: uint64(time.Now().UnixNano())}).D(), nil
	}
	profile := a.opt.Runner.Agent.Profile()
	if profile.Image == "" {
		a.log.Info("no agent is configured (runner.agent.image): the server reviews plans, and every attempt fails at preparation")
		return nodocker.D{}, nil
	}
	if a.opt.Engine == nil {
		return nil, errors.New("an agent is configured (runner.agent.image), but this build of codeboost opens no container engine (codeboost serve --demo runs without one)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), engineTimeout)
	defer cancel()
	d, err := a.opt.Engine(ctx, EngineOptions{RunnerRoot: a.root, CommitLimit: a.opt.Runner.Agent.CommitLimit, Log: a.log})
	if err != nil {
		return nil, fmt.Errorf("an agent is configured, but %w (codeboost serve --demo runs without Docker)", err)
	}
	if err := d.CheckImage(ctx, profile.Image); err != nil {
		d.Close()
		return nil, fmt.Errorf("the agent image: %w", err)
	}
	a.engine = d
	return d, nil
}

// Engine is the real D on a container engine as serve uses it: the D, the
// agent image check startup makes, and the client shutdown closes.
type Engine interface {
	dadapter.D
	CheckImage(ctx context.Context, image string) error
	Close() error
}

// OpenEngine opens the engine agents run on; the binary passes Docker's
// (cmd/codeboost: docker.Open). It is an option rather than an import so
// that what links this package without running agents, the scenarios' test
// binary above all (linked once per mutant by the bite test), does not link
// the Docker client and its dependencies; internal/importrules keeps it so.
type OpenEngine func(ctx context.Context, opt EngineOptions) (Engine, error)

// EngineOptions are what serve tells the engine's D besides each
// attempt's agent profile.
type EngineOptions struct {
	RunnerRoot  string // the runner-owned repositories and D's staging
	CommitLimit int64  // runner.agent.commitLimitBytes; 0: D's default
	Log         *slog.Logger
}

// kinds are the attempt kinds this runner accepts, and why a refused kind
// is refused: "The composed deps accept execute and credential-free check
// attempts (RunnerDeps.kinds); admission refuses every other kind before
// it writes anything." Questions and planning go through their own
// coordinators (ask, suggest with planning), which run their read-only
// attempts on D under owner tokens of their own, not through this runner.
// The demo's simulated agent writes nothing real, so it runs every kind.
func (a *App) kinds() (kinds []string, why string) {
	if p := a.opt.Parts; p != nil {
		return p.Kinds, ""
	}
	if a.opt.Demo {
		return nil, ""
	}
	return []string{words.KindExecute, words.KindCheck},
		"a production runner admits execute and check attempts only; questions and planning have coordinators of their own"
}

// repository names each configured task's repository by plan key, for
// D's source.
func (a *App) repository() func(planKey string) string {
	repos := map[string]string{}
	for _, t := range a.opt.Tasks {
		repos[t.identity().Key()] = t.Repository
	}
	return func(planKey string) string { return repos[planKey] }
}

// prompt is what the agent of an attempt is asked to do: its plan item's
// title and instructions, and the files and scope the item declares. It
// reads the item from the Store on the runner's loop, in the launch's
// turn; an attempt without an item (or a read that fails) gets its kind
// alone, and the agent's container says nothing else.
func (a *App) prompt(at store.Attempt) string {
	head := "codeboost " + at.Kind + " attempt " + at.ID
	if at.Item == nil {
		return head + "\n" // nothing to read: a View per launch was a tenth of a read-only attempt's cost
	}
	var it store.PlanItem
	var ok bool
	if err := a.store.View(func(tx *store.Tx) (err error) {
		it, ok, err = tx.ItemOf(at)
		return err
	}); err != nil {
		a.log.Warn("the prompt's plan item could not be read", "attempt", at.ID, "err", err)
		return head + "\n"
	}
	if !ok {
		return head + "\n"
	}
	return head + "\n" + itemPrompt(it)
}

// itemPrompt words one plan item for the agent.
func itemPrompt(it store.PlanItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan item %d: %s\n", it.Item, it.Title)
	spec, err := plan.ParseSpec(it.Spec)
	if err != nil || len(it.Spec) == 0 {
		return b.String()
	}
	if spec.Instructions != "" {
		b.WriteString("\n" + spec.Instructions + "\n")
	}
	for _, f := range spec.Files {
		if f.To != "" {
			fmt.Fprintf(&b, "- %s %s -> %s\n", f.Op, f.Path, f.To)
		} else {
			fmt.Fprintf(&b, "- %s %s\n", f.Op, f.Path)
		}
	}
	if len(spec.Scope) > 0 {
		fmt.Fprintf(&b, "Scope: %s\n", strings.Join(spec.Scope, ", "))
	}
	return b.String()
}

// commitDiff writes a runner commit's diff from the runner-owned
// repository of the task's repository to w, for the review screen: a
// changed file over diffBigBytes is one summary line, never read.
func (a *App) commitDiff(ctx context.Context, w io.Writer, t web.Task, base, commit string, maxBytes int) (bool, error) {
	if t.Repository == "" {
		return false, errors.New("the task has no repository")
	}
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	r, err := gitrepo.Open(ctx, a.root, a.token, t.Repository)
	if err != nil {
		return false, err
	}
	return r.Diff(ctx, w, base, commit, gitrepo.DiffOptions{MaxBytes: maxBytes, BigBytes: diffBigBytes})
}

// diffBigBytes is the size over which a commit's changed file is summarized
// in the diff view, as the partial output names a changed file over 8 MiB
// instead of diffing it.
const diffBigBytes = 8 << 20

// agentWords says what runs the attempts, for the "serving" line.
func (a *App) agentWords() string {
	switch {
	case a.engine == nil:
		return "no agent configured: attempts cannot start"
	}
	return "agent " + a.opt.Runner.Agent.Image + " on Docker; execute and check attempts, writes audited before they are committed"
}
