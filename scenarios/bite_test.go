package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/internal/mutant"
)

// moduleRoot is where mutants' file paths start.
const moduleRoot = ".."

// loadMutants reads scenarios/mutants/.
func loadMutants(t *testing.T) map[string]mutant.Mutant {
	t.Helper()
	ms, err := mutant.LoadDir("mutants")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mutant.Mutant{}
	for _, m := range ms {
		out[m.Name] = m
	}
	return out
}

// packageClaims reads the "kills:" lines of package tests' doc comments.
func packageClaims(t *testing.T) map[string][]mutant.Claim {
	t.Helper()
	c, err := mutant.PackageClaims(moduleRoot, "scenarios")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScenariosBite shows that every scenario guards something: each one
// names, in a "# kills:" header line, the mutants under which it must fail,
// and it does. Each mutant is built into its own test binaries with
// `go test -overlay` (the source tree is never edited), and every scenario
// and package test that claims it runs against them.
func TestScenariosBite(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds and runs every mutant; not under -race (see raceEnabled)")
	}
	mutants := loadMutants(t)
	byMutant := map[string][]string{} // mutant → scenario names
	for _, sf := range scenarioFiles(t) {
		if len(sf.kills) == 0 {
			t.Errorf("%s kills no mutant: a scenario must fail when the behaviour it guards is removed", sf.name)
		}
		for _, m := range sf.kills {
			byMutant[m] = append(byMutant[m], sf.name)
		}
	}
	pkgClaims := packageClaims(t)
	for m := range pkgClaims {
		if _, ok := byMutant[m]; !ok {
			byMutant[m] = nil
		}
	}
	names := make([]string, 0, len(byMutant))
	for m := range byMutant {
		names = append(names, m)
	}
	sort.Strings(names)
	shard, of, err := biteShard()
	if err != nil {
		t.Fatal(err)
	}
	if of > 1 {
		t.Logf("%s=%d/%d: building %d of %d mutants (every %dth from the %dth, in name order); make bite builds them all",
			biteShardEnv, shard, of, (len(names)-shard+of-1)/of, len(names), of, shard)
	}
	// Every claim names a mutant that exists, whatever the shard: a name
	// checked only in its own shard would fail one CI run in BITE_SHARDS.
	for _, name := range names {
		if _, ok := mutants[name]; !ok {
			t.Errorf("%v name unknown mutant %q (no scenarios/mutants/%s.txtar)", append(byMutant[name], claimNames(pkgClaims[name])...), name, strings.TrimPrefix(name, "mutant/"))
		}
	}
	for i, name := range names {
		m, ok := mutants[name]
		if i%of != shard || !ok {
			continue
		}
		scripts := byMutant[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			biteOverlay(t, m, scripts, pkgClaims[name])
		})
	}
}

// biteShardEnv picks one shard of the mutants: "i/n" builds the mutants
// whose index in name order is i modulo n. A mutant costs a build and a
// link of its test binaries (about 4 s of CPU each here), so the 200-odd
// of them take longer than a CI run may; CI builds one shard a run
// (make test: one in the Makefile's BITE_SHARDS), turning with the commit
// count, and
// `make bite` builds them all. Every
// mutant is still checked to apply (TestMutantsApply) and to be claimed
// (TestEveryMutantIsKilled) on every run.
const biteShardEnv = "CODEBOOST_BITE_SHARD"

func biteShard() (shard, of int, err error) {
	v := os.Getenv(biteShardEnv)
	if v == "" {
		return 0, 1, nil
	}
	if _, err := fmt.Sscanf(v, "%d/%d", &shard, &of); err != nil || of < 1 || shard < 0 || shard >= of || fmt.Sprintf("%d/%d", shard, of) != v {
		return 0, 0, fmt.Errorf("%s=%q: want i/n with 0 <= i < n", biteShardEnv, v)
	}
	return shard, of, nil
}

func claimNames(cs []mutant.Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pkg+"."+c.Test)
	}
	return out
}

// biteOverlay builds m's test binaries and checks that every claiming
// scenario and package test fails against them.
func biteOverlay(t *testing.T, m mutant.Mutant, scripts []string, claims []mutant.Claim) {
	ctx := context.Background()
	dir := t.TempDir()
	overlay, err := m.Overlay(moduleRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		pkg   string
		tests []string
	}
	var runs []run
	if len(scripts) > 0 {
		var tests []string
		for _, s := range scripts {
			tests = append(tests, "TestScenarios/"+s)
		}
		runs = append(runs, run{"./scenarios", tests})
	}
	byPkg := map[string][]string{}
	var pkgs []string
	for _, c := range claims {
		if byPkg[c.Pkg] == nil {
			pkgs = append(pkgs, c.Pkg)
		}
		byPkg[c.Pkg] = append(byPkg[c.Pkg], c.Test)
	}
	for _, p := range pkgs {
		runs = append(runs, run{p, byPkg[p]})
	}
	for _, r := range runs {
		bin := filepath.Join(dir, strings.ReplaceAll(strings.Trim(r.pkg, "./"), "/", "_")+".test")
		// Without DWARF or a symbol table the link, most of a mutant's
		// build, is shorter; a failing test still prints its stack.
		if err := mutant.BuildTestFlags(ctx, moduleRoot, r.pkg, overlay, bin, "-ldflags=-s -w"); err != nil {
			t.Fatalf("%s does not build: %v", m.Name, err)
		}
		res := mutant.RunTests(ctx, bin, filepath.Join(moduleRoot, r.pkg), mutant.Pattern(r.tests), false, overlay)
		for _, test := range r.tests {
			switch {
			case slices.Contains(res.Failed, test):
				// With -v, each bite names the step where the mutant was
				// caught, so a reviewer can check it is the guarded one.
				t.Logf("%s under %s: %s", test, m.Name, firstFailLine(res.Output, test))
			case slices.Contains(res.Passed, test):
				t.Errorf("%s passed with %s applied; it does not guard that behaviour (%s)", test, m.Name, m.What)
			default:
				t.Errorf("%s did not run under %s:\n%s", test, m.Name, tail(res.Output, 40))
			}
		}
	}
}

// firstFailLine finds the FAIL: line testscript prints for a script.
func firstFailLine(out, test string) string {
	script := test[strings.LastIndex(test, "/")+1:]
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "FAIL: ") && strings.Contains(l, script) {
			return l
		}
	}
	return "failed"
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestEveryMutantIsKilled fails if a mutant is kept on file but no scenario
// or package test claims to kill it.
func TestEveryMutantIsKilled(t *testing.T) {
	claimed := map[string]bool{}
	for _, sf := range scenarioFiles(t) {
		for _, m := range sf.kills {
			claimed[m] = true
		}
	}
	for m := range packageClaims(t) {
		claimed[m] = true
	}
	for m := range loadMutants(t) {
		if !claimed[m] {
			t.Errorf("mutant %s is killed by no scenario", m)
		}
	}
}

// TestMutantsApply checks every mutant file still applies to the tree
// without building it, so a stale one is named even under -short. Every
// block names the declaration that holds it (its "in:" line), so that a
// mutant follows its function when the code moves (make reanchor) and
// stops applying when its lines land in another one.
func TestMutantsApply(t *testing.T) {
	for _, m := range loadMutants(t) {
		if _, err := m.Mutate(moduleRoot); err != nil {
			t.Error(err)
		}
		for i, e := range m.Edits {
			if e.Anchor == "" {
				t.Errorf("%s: block %d (%s) names no declaration: add the \"in:\" lines with make reanchor", m.Path, i+1, e.File)
				break
			}
		}
	}
}
