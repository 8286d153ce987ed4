// Package testscript is codeboost's scenario language: testscript commands
// over a simulated world (package sim), so that a race found in review can be
// replayed as named steps in a .txtar file. Commands read like the contract's
// test column and assert both what the caller sees and the durable row.
//
// Each command is one small handler with its own usage, summary and example;
// scenarios/README.md is generated from them and a test fails when it is out
// of date. It may import sim, the packages sim drives, and go-internal's
// testscript.
package testscript

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/sim"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Options tune one run of the scenarios.
type Options struct {
	// Record receives each script's trace when it ends.
	Record func(script string, trace []string)
	// Seed seeds every world's ID source (default 1).
	Seed uint64
	// SharedFailpoints, if set, is used by every world instead of a
	// registry of its own: only the isolation test sets it, to show that
	// sharing one registry (as the library's global one would) breaks
	// parallel scenarios.
	SharedFailpoints *failpoints.Set
}

type key int

const worldKey key = 0

// scenario is one script's state: its world (made on first use, so that a
// leading `runner` command can configure it) and the names it gave.
type scenario struct {
	dir   string
	cfg   sim.Config
	fp    *failpoints.Set
	w     *sim.World
	tasks map[string]string // script name → plan key
	auto  int               // counter for unnamed action IDs
	http  httpState         // the review server and its requests in flight (cmd_http.go)
	// askClosed is the channel Ask's close returned (cmd_ask.go), nil
	// before ask-close.
	askClosed <-chan struct{}
	// plans is the planning commands' state (cmd_suggest.go).
	plans planState
	// mergeClicks are the merge clicks sent, by action name, so that a
	// resend carries the body the click first had (cmd_merge_flow.go).
	mergeClicks map[string]merge.Request
}

func (s *scenario) world(ts *gts.TestScript) *sim.World {
	if s.w == nil {
		w, err := sim.NewWorld(s.dir, s.cfg, s.fp)
		if err != nil {
			ts.Fatalf("world: %v", err)
		}
		s.w = w
	}
	return s.w
}

func get(ts *gts.TestScript) *scenario { return ts.Value(worldKey).(*scenario) }

// Params returns the testscript parameters that run the scenarios in dir.
func Params(dir string, opt Options) gts.Params {
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	var mu sync.Mutex
	return gts.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *gts.Env) error {
			fp := failpoints.New()
			if opt.SharedFailpoints != nil {
				fp = opt.SharedFailpoints
			}
			s := &scenario{dir: filepath.Join(env.WorkDir, "world"), fp: fp, tasks: map[string]string{},
				cfg: sim.Config{Seed: opt.Seed}}
			env.Values[worldKey] = s
			script := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
			env.Defer(func() {
				if s.w == nil {
					return
				}
				if opt.Record != nil {
					mu.Lock()
					opt.Record(script, s.w.Lines())
					mu.Unlock()
				}
				s.w.Close()
			})
			return nil
		},
		Cmds: cmds(),
	}
}

func cmds() map[string]func(ts *gts.TestScript, neg bool, args []string) {
	m := map[string]func(ts *gts.TestScript, neg bool, args []string){}
	for _, c := range Commands {
		m[c.Name] = c.Run
	}
	return m
}

// Command is one scenario command.
type Command struct {
	Name    string
	Usage   string
	Summary string
	Example string
	Run     func(ts *gts.TestScript, neg bool, args []string)
}

// Commands lists every command, sorted by name when the package loads.
var Commands []Command

func register(c ...Command) {
	Commands = append(Commands, c...)
	sort.Slice(Commands, func(i, j int) bool { return Commands[i].Name < Commands[j].Name })
}

// args splits "k=v" arguments from positional ones.
type argSet struct {
	pos []string
	kv  map[string]string
}

func parse(args []string) argSet {
	a := argSet{kv: map[string]string{}}
	for _, s := range args {
		if k, v, ok := strings.Cut(s, "="); ok && k != "" && !strings.ContainsAny(k, " '\"") {
			a.kv[k] = v
			continue
		}
		a.pos = append(a.pos, s)
	}
	return a
}

// actionID turns a script's action name into a stable lowercase UUID v4, so
// that "action=a1" means the same ID on every run.
func actionID(name string) string {
	sum := sha256.Sum256([]byte("codeboost-action:" + name))
	b := sum[:16]
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *scenario) action(a argSet) string {
	if v, ok := a.kv["action"]; ok {
		if v == "raw:" || strings.HasPrefix(v, "raw:") {
			return strings.TrimPrefix(v, "raw:") // an unchecked ID, to test refusals
		}
		return actionID(v)
	}
	s.auto++
	return actionID(fmt.Sprintf("auto-%d", s.auto))
}

func (s *scenario) planKey(ts *gts.TestScript, name string) string {
	k, ok := s.tasks[name]
	if !ok {
		ts.Fatalf("no task is named %s (make one with new-task)", name)
	}
	return k
}

func (s *scenario) attempt(ts *gts.TestScript, name string) string {
	id, err := s.world(ts).ID(name)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return id
}

// fatal fails the step with its message and the trace so far.
func (s *scenario) fatal(ts *gts.TestScript, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.w != nil {
		msg += "\ntrace so far:\n  " + strings.Join(s.w.Lines(), "\n  ")
	}
	ts.Fatalf("%s", msg)
}

// expect checks an operation's error against the command's negation and
// prints the error to stderr for `stderr` to match.
func (s *scenario) expect(ts *gts.TestScript, neg bool, what string, err error) {
	if err != nil {
		fmt.Fprintln(ts.Stderr(), err)
	}
	switch {
	case neg && err == nil:
		s.fatal(ts, "%s unexpectedly succeeded", what)
	case !neg && err != nil:
		s.fatal(ts, "%s: %v", what, err)
	}
}
