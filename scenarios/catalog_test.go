package scenarios

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/failpoints"
)

// issue2IDs are the regressions issue 2 replays; each has its scenario file.
var issue2IDs = strings.Fields(`R002 R003 R006 R008 R012 R013 R015 R016 R017 R019 R020 R023 R025 R027 R028
	R029 R044 R045 R046 R048 R049 R056 R059 R065 R069 R073 R074 R075 R083 R094 R097 R106 R107 R109 R110 R111 R112 R113`)

// issue3IDs are the regressions issue 3 replays (crash, restart, shutdown,
// the lock, the owner token, preparation groups, plan runs).
var issue3IDs = strings.Fields(`R009 R011 R014 R018 R021 R022 R024 R026 R030 R033 R034 R037 R039 R040 R051 R052
	R053 R058 R060 R062 R064 R066 R068 R071 R072 R076 R077 R078 R079 R080 R081 R082 R084 R085 R086 R089 R090 R091
	R092 R093 R096 R098 R099 R100 R101 R102 R103 R104 R105 R108`)

func TestEveryRequiredRegressionHasAScenario(t *testing.T) {
	have := map[string]bool{}
	for _, sf := range scenarioFiles(t) {
		have[sf.id] = true
	}
	for _, id := range append(append([]string(nil), issue2IDs...), issue3IDs...) {
		if !have[id] {
			t.Errorf("regression %s has no scenario file in testdata/", id)
		}
	}
}

// TestEveryFailpointIsUsed fails if a failpoint is catalogued but no
// scenario switches it on, hooks it, or names it as a mutant it kills.
func TestEveryFailpointIsUsed(t *testing.T) {
	var all strings.Builder
	for _, sf := range scenarioFiles(t) {
		b, err := os.ReadFile(sf.path)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	text := all.String()
	claims := packageClaims(t)
	var unused []string
	for name := range failpoints.Catalog {
		if !strings.Contains(text, name) && claims[name] == nil {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	for _, n := range unused {
		t.Errorf("failpoint %s is defined but no scenario uses it", n)
	}
}

// TestHooksSayWhatTheyStandFor: a scenario that runs a command at a hook
// acts between two statements of one event, where production delivers no
// user action. Each says in an "# interleaving:" header line which
// production interleaving the hook stands for, or that none exists and the
// guard it exercises is defence in depth (sim.Loop.Interleave).
func TestHooksSayWhatTheyStandFor(t *testing.T) {
	for _, sf := range scenarioFiles(t) {
		b, err := os.ReadFile(sf.path)
		if err != nil {
			t.Fatal(err)
		}
		usesHook, says := false, false
		for _, line := range strings.Split(string(b), "\n") {
			l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "!"))
			if strings.HasPrefix(l, "at ") {
				usesHook = true
			}
			if strings.HasPrefix(line, "# interleaving: ") && len(strings.TrimSpace(strings.TrimPrefix(line, "# interleaving:"))) > 20 {
				says = true
			}
		}
		if usesHook && !says {
			t.Errorf("%s runs a command at a hook but has no '# interleaving:' line saying which production interleaving it stands for", sf.name)
		}
	}
}
