// Package testscript is codeboost's scenario language: testscript commands
// over a simulated world (package sim), so that a race found in review can be
// replayed as named steps in a .txtar file. Commands read like the contract's
// test column and assert both what the caller sees and the durable row.
//
// Each command is one small handler with its own usage, summary and example,
// its kind (an action or an assertion) and the keys it takes, each with the
// form of its value; one family of commands to a file (cmd_*.go). The one
// parser refuses, at the script's line, anything a command would otherwise
// ignore: a key it does not take, a malformed value, a ! it does not take.
// scenarios/README.md is generated from the definitions and a test fails
// when it is out of date. It may import sim, the packages sim drives, and go-internal's
// testscript.
package testscript

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/merge"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/words"
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
	for i := range Commands {
		c := &Commands[i]
		m[c.Name] = func(ts *gts.TestScript, neg bool, args []string) { c.Run(ts, neg, c.parse(ts, neg, args)) }
	}
	return m
}

// Kind says whether a command acts on the world or asserts on it.
type Kind int

const (
	// Action changes the world, or reads it the way production does and
	// prints what it got for stdout to match.
	Action Kind = iota
	// Assertion checks the world and fails the scenario on a mismatch; it
	// changes nothing.
	Assertion
)

// Command is one scenario command.
type Command struct {
	Name    string
	Kind    Kind
	Usage   string
	Summary string
	Example string
	// Keys are the k=v arguments it takes; any other key, or a value of
	// the wrong form, is refused before it runs.
	Keys []Key
	// Pos is how many leading arguments are positional whatever they hold
	// (a regexp or a body with '=' in it); later ones of the form k=v are
	// keys.
	Pos int
	// Words: every argument is positional and the command reads its own
	// grammar (a list of regexps, a nested command, manifest entries); it
	// takes no keys.
	Words bool
	Run   func(ts *gts.TestScript, neg bool, a argSet)
}

// Negatable is whether the command takes a leading !: its usage says so.
func (c *Command) Negatable() bool { return strings.HasPrefix(c.Usage, "[!] ") }

// takesNoArguments is whether the usage is the bare name.
func (c *Command) takesNoArguments() bool {
	return strings.TrimPrefix(c.Usage, "[!] ") == c.Name
}

// Commands lists every command, sorted by name when the package loads.
var Commands []Command

func register(c ...Command) {
	Commands = append(Commands, c...)
	sort.Slice(Commands, func(i, j int) bool { return Commands[i].Name < Commands[j].Name })
}

// command finds a registered command by name.
func command(name string) *Command {
	for i := range Commands {
		if Commands[i].Name == name {
			return &Commands[i]
		}
	}
	return nil
}

// argSet is one command's arguments: its positional ones, and the keys it
// was given, checked against those it declares. Reading a key the command
// does not declare panics: a key it reads is a key it refuses when
// misspelled.
type argSet struct {
	cmd  string
	pos  []string
	kv   map[string]string
	keys map[string]Key // declared
}

// keyRE is what a k=v argument looks like; anything else is positional.
var keyRE = regexp.MustCompile(`(?s)^([a-z][a-z0-9-]*~?)=(.*)$`)

// parse splits args into positional ones and keys, and fails the step
// (ts.Fatalf: testscript prefixes the script's file and line) on anything
// Check refuses.
func (c *Command) parse(ts *gts.TestScript, neg bool, args []string) argSet {
	a, err := c.check(neg, args)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return a
}

// Check refuses what the command would otherwise ignore or misread: a !
// it does not take, an argument to a command that takes none, a key it
// does not take (naming the nearest one it does), a key given twice and a
// value of the wrong form.
func (c *Command) Check(neg bool, args []string) error {
	_, err := c.check(neg, args)
	return err
}

func (c *Command) check(neg bool, args []string) (argSet, error) {
	if neg && !c.Negatable() {
		return argSet{}, fmt.Errorf("%s does not take !: its usage is %s", c.Name, c.Usage)
	}
	if len(args) > 0 && c.takesNoArguments() {
		return argSet{}, fmt.Errorf("%s takes no arguments, given %q", c.Name, args)
	}
	a := argSet{cmd: c.Name, kv: map[string]string{}, keys: map[string]Key{}}
	for _, k := range c.Keys {
		a.keys[k.Name] = k
	}
	for i, s := range args {
		m := keyRE.FindStringSubmatch(s)
		if c.Words || i < c.Pos || m == nil {
			a.pos = append(a.pos, s)
			continue
		}
		k, v := m[1], m[2]
		key, ok := a.keys[k]
		if !ok {
			return argSet{}, errors.New(c.unknownKey(k))
		}
		if _, dup := a.kv[k]; dup {
			return argSet{}, fmt.Errorf("%s: key %s= given twice", c.Name, k)
		}
		if err := key.Value.check(v); err != nil {
			return argSet{}, fmt.Errorf("%s: %s=%s: %v", c.Name, k, v, err)
		}
		a.kv[k] = v
	}
	return a, nil
}

// unknownKey is the refusal of key k: the nearest declared key, and all
// of them.
func (c *Command) unknownKey(k string) string {
	if len(c.Keys) == 0 {
		return fmt.Sprintf("%s: unknown key %s= (%s takes no keys)", c.Name, k, c.Name)
	}
	names := make([]string, len(c.Keys))
	best, bestD := "", 3 // suggest only a near miss: at most two edits
	for i, key := range c.Keys {
		names[i] = key.Name
		if d := editDistance(k, key.Name); d < bestD {
			best, bestD = key.Name, d
		}
	}
	hint := ""
	if best != "" {
		hint = fmt.Sprintf(" (did you mean %s=?)", best)
	}
	return fmt.Sprintf("%s: unknown key %s=%s; it takes %s", c.Name, k, hint, strings.Join(names, "= ")+"=")
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// declared panics when the command reads a key it does not declare: such a
// key would be accepted misspelled, so the definition is wrong.
func (a argSet) declared(k string) {
	if _, ok := a.keys[k]; !ok {
		panic(fmt.Sprintf("testscript: command %s reads key %s=, which its definition does not declare", a.cmd, k))
	}
}

// lookup is key k's value and whether it was given.
func (a argSet) lookup(k string) (string, bool) {
	a.declared(k)
	v, ok := a.kv[k]
	return v, ok
}

// str is key k's value, "" when not given.
func (a argSet) str(k string) string { v, _ := a.lookup(k); return v }

// num is the integer value of key k (checked by parse) and whether it was
// given.
func (a argSet) num(k string) (int, bool) {
	v, ok := a.lookup(k)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("testscript: command %s reads %s= as a number but declares it %s", a.cmd, k, a.keys[k].Value.Doc))
	}
	return n, true
}

// given is every key given, for an assertion that compares them all.
func (a argSet) given() map[string]string {
	out := make(map[string]string, len(a.kv))
	for k, v := range a.kv {
		out[k] = v
	}
	return out
}

// Key is one k=v argument a command takes.
type Key struct {
	Name  string
	Value Value
}

// Value is the form of a key's value: Doc shows it in the README, check
// refuses a malformed one.
type Value struct {
	Doc   string
	check func(string) error
}

var (
	Int      = Value{"N", func(v string) error { _, err := strconv.Atoi(v); return errIf(err != nil, "not an integer") }}
	Duration = Value{"DURATION", func(v string) error {
		_, err := time.ParseDuration(v)
		return errIf(err != nil, "not a duration (10m, 1h30m)")
	}}
	// Name is a name the script gives (an attempt, a request, an action).
	Name   = Value{"NAME", func(v string) error { return errIf(!nameRE.MatchString(v), "not a name (letters, digits, - _ .)") }}
	Text   = Value{"TEXT", func(string) error { return nil }}
	Regexp = Value{"REGEXP", func(v string) error { _, err := regexp.Compile(v); return err }}
	Bool   = Enum("true", "false")
	SetOr  = Enum("set", "unset")
	// IntOrNone is a number, or none.
	IntOrNone = Value{"N|none", func(v string) error {
		_, err := strconv.Atoi(v)
		return errIf(err != nil && v != "none", "not an integer or none")
	}}
	// Ints is a comma-separated list of numbers.
	Ints = Value{"N,N…", func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if _, err := strconv.Atoi(p); err != nil {
				return fmt.Errorf("%q is not an integer", p)
			}
		}
		return nil
	}}
)

// ActionName names a user action's ID: a script name (hashed to a UUID),
// raw:ID sent as it is, or len:N, N bytes of "a" (a too-long ID).
var ActionName = Value{"NAME|raw:ID|len:N", func(v string) error {
	if strings.HasPrefix(v, "raw:") {
		return nil
	}
	if n, ok := strings.CutPrefix(v, "len:"); ok {
		_, err := strconv.Atoi(n)
		return errIf(err != nil, "len:N wants an integer")
	}
	return Name.check(v)
}}

// TaskStatus is a task status, as the contract words it.
var TaskStatus = Enum(taskStatuses()...)

func taskStatuses() []string {
	out := make([]string, len(words.TaskStatuses))
	for i, st := range words.TaskStatuses {
		out[i] = string(st)
	}
	return out
}

// StopReason is one of D's own stop reasons.
var StopReason = Enum(string(words.StopCancelled), string(words.StopShutdown), string(words.StopTimeout),
	string(words.StopOutputLimit), string(words.StopCaptureFailure))

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Enum is a value that is one of words.
func Enum(words ...string) Value {
	return Value{strings.Join(words, "|"), func(v string) error {
		return errIf(!slices.Contains(words, v), "not one of "+strings.Join(words, ", "))
	}}
}

// OrNone is v, or the word none.
func OrNone(v Value) Value {
	return Value{v.Doc + "|none", func(s string) error {
		if s == "none" {
			return nil
		}
		return v.check(s)
	}}
}

func errIf(bad bool, msg string) error {
	if bad {
		return errors.New(msg)
	}
	return nil
}

// K declares a key.
func K(name string, v Value) Key { return Key{name, v} }

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
	if v, ok := a.lookup("action"); ok {
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
