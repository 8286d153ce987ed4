package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/failpoints"
	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestScenariosBite shows that every scenario guards something: each one
// names, in a "# kills:" header line, the mutants (failpoints that remove one
// guard each) under which it must fail, and it does.
func TestScenariosBite(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs every scenario under its mutants; not under -race (see raceEnabled)")
	}
	known := failpoints.Mutants()
	for _, sf := range scenarioFiles(t) {
		if len(sf.kills) == 0 {
			t.Errorf("%s kills no mutant: a scenario must fail when the behaviour it guards is removed", sf.name)
			continue
		}
		for _, m := range sf.kills {
			if !slices.Contains(known, m) {
				t.Errorf("%s names unknown mutant %q", sf.name, m)
				continue
			}
			t.Run(sf.name+"/"+m, func(t *testing.T) {
				t.Parallel()
				p := cbts.Params("", cbts.Options{Mutant: m})
				p.Files = []string{sf.path}
				failed, log := runQuiet(p)
				// With -v, each bite names the step where the mutant was
				// caught, so a reviewer can check it is the guarded one.
				if i := strings.LastIndex(log, "FAIL: "); i >= 0 {
					t.Logf("%s under %s: %s", sf.name, m, strings.SplitN(log[i:], "\n", 2)[0])
				}
				if !failed {
					t.Errorf("%s passed with %s switched on; it does not guard that behaviour\n%s", sf.name, m, log)
				}
			})
		}
	}
}

// TestEveryMutantIsKilled fails if a mutant is catalogued but no scenario
// (or package test) claims to kill it.
func TestEveryMutantIsKilled(t *testing.T) {
	claimed := map[string]bool{}
	for _, sf := range scenarioFiles(t) {
		for _, m := range sf.kills {
			claimed[m] = true
		}
	}
	for _, m := range failpoints.Mutants() {
		if !claimed[m] && !killedByPackageTests[m] {
			t.Errorf("mutant %s is killed by no scenario", m)
		}
	}
}

// killedByPackageTests are mutants whose guard is shown by a package's own
// tests rather than a scenario (named there).
var killedByPackageTests = map[string]bool{}

var _ = gts.Params{}
