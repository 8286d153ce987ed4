package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// ownGrammar are the commands whose arguments are all positional, each
// read by the command's own grammar, with why a k=v among them is not a
// key. Every other command refuses a key it does not take.
var ownGrammar = map[string]string{
	"fail-point":   "NAME TERMS: the terms are the failpoint library's",
	"order":        "a list of regexps",
	"agent-leaves": "manifest entries KIND=PATH; an unknown KIND is refused by the command",
	"exec-race":    "a program and its arguments",
}

// TestEveryCommandRefusesABadKey walks every registered command with a
// key it does not take (the nearest misspelling of one it does, when it
// takes any), a value of the wrong form for each key whose value has a
// form, and a ! it does not take; each must fail the script at that line
// (file:line, as testscript prints it), naming the key.
func TestEveryCommandRefusesABadKey(t *testing.T) {
	type probe struct{ script, want string }
	probes := map[string]probe{}
	words := map[string]bool{}
	for _, c := range cbts.Commands {
		pos := strings.Repeat("x ", c.Pos)
		bare := strings.TrimPrefix(c.Usage, "[!] ") == c.Name
		switch {
		case c.Name == "at":
			probes["at"] = probe{"at store/before-commit slots bogus-key=1", `slots: unknown key bogus-key= \(slots takes no keys\)`}
		case c.Name == "admit-tick":
			probes["admit-tick"] = probe{"admit-tick 'T1 review itme=2' 'T2 review'", `admit-tick: unknown key itme= \(did you mean item=\?\)`}
		case c.Words:
			words[c.Name] = true
			if _, ok := ownGrammar[c.Name]; !ok {
				t.Errorf("%s reads its own grammar (Words) but ownGrammar does not say why", c.Name)
			}
			continue
		case bare:
			probes[c.Name] = probe{c.Name + " bogus-key=1", regexp.QuoteMeta(c.Name) + ` takes no arguments, given \["bogus-key=1"\]`}
		case len(c.Keys) == 0:
			probes[c.Name] = probe{c.Name + " " + pos + "bogus-key=1", regexp.QuoteMeta(c.Name) + `: unknown key bogus-key= \(` + regexp.QuoteMeta(c.Name) + ` takes no keys\)`}
		default:
			k := c.Keys[0].Name
			bad := strings.TrimSuffix(k, "~") + "x" + strings.TrimPrefix(k, strings.TrimSuffix(k, "~"))
			probes[c.Name] = probe{c.Name + " " + pos + bad + "=1", regexp.QuoteMeta(fmt.Sprintf("%s: unknown key %s= (did you mean %s=?)", c.Name, bad, k))}
		}
		for _, k := range c.Keys {
			if k.Value.Doc == "TEXT" {
				continue
			}
			script := c.Name + " " + pos + k.Name + "='(%'"
			if c.Name == "admit-tick" {
				script = "admit-tick 'T1 review " + k.Name + "=(%' 'T2 review'"
			}
			probes[c.Name+" "+k.Name] = probe{script, regexp.QuoteMeta(c.Name+": "+k.Name+"=(%: ") + ".+"}
		}
		if !c.Negatable() {
			probes["! "+c.Name] = probe{"! " + c.Name, regexp.QuoteMeta(c.Name + " does not take !")}
		}
	}
	for name := range ownGrammar {
		if !words[name] {
			t.Errorf("ownGrammar names %s, which is not a command reading its own grammar", name)
		}
	}

	dir := t.TempDir()
	files := map[string]string{} // script file name → probe name
	i := 0
	for name, p := range probes {
		i++
		f := fmt.Sprintf("probe%03d", i)
		files[f] = name
		if err := os.WriteFile(filepath.Join(dir, f+".txtar"), []byte(p.script+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := runEach(cbts.Params(dir, cbts.Options{}))
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		p := probes[files[f]]
		r, ok := logs[f]
		if !ok {
			t.Errorf("%q did not run", p.script)
			continue
		}
		if !r.failed {
			t.Errorf("%q passed; want it refused", p.script)
			continue
		}
		want := regexp.MustCompile(`FAIL: \S*` + regexp.QuoteMeta(f) + `\.txtar:1: ` + p.want)
		if !want.MatchString(r.log) {
			t.Errorf("%q: want a failure matching %s, got:\n%s", p.script, want, r.log)
		}
	}
	if len(probes) < len(cbts.Commands) {
		t.Errorf("%d probes for %d commands", len(probes), len(cbts.Commands))
	}
}

// TestUsageNamesTheKeys keeps each command's usage line true: it shows
// exactly the keys the command declares.
func TestUsageNamesTheKeys(t *testing.T) {
	keyRE := regexp.MustCompile(`(?:^|[\s\[|'])([a-z][a-z0-9-]*~?)=`)
	for _, c := range cbts.Commands {
		if c.Words && c.Name != "admit-tick" {
			continue
		}
		inUsage := map[string]bool{}
		for _, m := range keyRE.FindAllStringSubmatch(c.Usage, -1) {
			inUsage[m[1]] = true
		}
		declared := map[string]bool{}
		for _, k := range c.Keys {
			declared[k.Name] = true
			if !inUsage[k.Name] {
				t.Errorf("%s declares %s= but its usage %q does not show it", c.Name, k.Name, c.Usage)
			}
		}
		for k := range inUsage {
			if !declared[k] {
				t.Errorf("%s's usage %q shows %s=, which it does not declare", c.Name, c.Usage, k)
			}
		}
	}
}

// TestKeysAreReadThroughTheirDeclaration: a command reads its keys only
// through argSet's methods, which panic on a key it does not declare, so no
// key it reads can be accepted misspelled. Reading the map behind them
// would skip that check.
func TestKeysAreReadThroughTheirDeclaration(t *testing.T) {
	files, err := filepath.Glob("../testscript/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testscript sources: %v", err)
	}
	direct := regexp.MustCompile(`\.kv\b`)
	for _, f := range files {
		if filepath.Base(f) == "params.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if direct.MatchString(line) {
				t.Errorf("%s:%d reads argSet.kv directly: use lookup, str, num or given", f, i+1)
			}
		}
	}
}

// scriptResult is one script's outcome under runEach.
type scriptResult struct {
	failed bool
	log    string
}

// runEach runs every script of p and returns each one's outcome by name.
func runEach(p gts.Params) map[string]scriptResult {
	r := &eachT{results: map[string]scriptResult{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gts.RunT(r, p)
	}()
	<-done
	return r.results
}

// eachT is a testscript.T that keeps each script's log apart.
type eachT struct {
	mu      sync.Mutex
	results map[string]scriptResult
}

func (r *eachT) Skip(args ...any)  { runtime.Goexit() }
func (r *eachT) Fatal(args ...any) { runtime.Goexit() }
func (r *eachT) Parallel()         {}
func (r *eachT) Log(args ...any)   {}
func (r *eachT) FailNow()          { runtime.Goexit() }
func (r *eachT) Verbose() bool     { return false }
func (r *eachT) Run(name string, f func(gts.T)) {
	child := &recordingT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(child)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[name] = scriptResult{child.failed, child.log.String()}
}

// TestExamplesAreAccepted keeps the README's examples true to the strict
// language: each command's example passes its own argument check.
func TestExamplesAreAccepted(t *testing.T) {
	for _, c := range cbts.Commands {
		args := scriptWords(t, c.Example)
		neg := len(args) > 0 && args[0] == "!"
		if neg {
			args = args[1:]
		}
		if len(args) == 0 || args[0] != c.Name {
			t.Errorf("%s's example %q does not run %s", c.Name, c.Example, c.Name)
			continue
		}
		if err := c.Check(neg, args[1:]); err != nil {
			t.Errorf("%s's example %q is refused: %v", c.Name, c.Example, err)
		}
	}
}

// scriptWords splits a script line as testscript does: spaces separate
// words, single quotes quote, and two single quotes inside quotes are one.
func scriptWords(t *testing.T, line string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == '\'' && quoted && i+1 < len(line) && line[i+1] == '\'':
			cur.WriteByte('\'')
			i++
		case ch == '\'':
			quoted, have = !quoted, true
		case ch == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// TestNamesSayTheKind keeps a command's name telling a reader what it does:
// a past participle (traced, drained, d-cancelled) asserts, and a command
// named for a change (set-, new-, plant-, remove-, read-) acts.
func TestNamesSayTheKind(t *testing.T) {
	acting := regexp.MustCompile(`^(set|new|plant|remove|read)-`)
	for _, c := range cbts.Commands {
		if strings.HasSuffix(c.Name, "ed") && c.Kind != cbts.Assertion {
			t.Errorf("%s reads as an assertion (a past participle) but is an action", c.Name)
		}
		if acting.MatchString(c.Name) && c.Kind != cbts.Action {
			t.Errorf("%s reads as an action but is an assertion", c.Name)
		}
	}
}
