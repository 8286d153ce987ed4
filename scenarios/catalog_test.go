package scenarios

import (
	"fmt"
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

// issue11IDs are the regressions issue 11 replays (the neighbouring
// lanes: questions, suggestions and drafts, the merge coordinator); with
// them every one of the 113 has its scenario.
var issue11IDs = strings.Fields(`R010 R035 R036 R050 R054 R055 R057 R061 R067 R070 R087 R095`)

// requiredIDs are every required regression, R001 to R113: the seed's
// table (regressions.tsv) numbers them so.
func requiredIDs() []string {
	ids := make([]string, 0, 113)
	for i := 1; i <= 113; i++ {
		ids = append(ids, fmt.Sprintf("R%03d", i))
	}
	return ids
}

// e3Cases are the suggestion coordinator contract's required cases (seed
// 002), each an E3-<n> scenario.
var e3Cases = []string{"import before late completion", "snapshot change", "completion racing failure cleanup",
	"external cancellation", "bounded provider errors", "timeout followed by an unsettled provider",
	"retry while cancellation is pending", "shutdown admission", "post-submit mutation of caller-owned input"}

func TestEveryRequiredRegressionHasAScenario(t *testing.T) {
	have := map[string]bool{}
	for _, sf := range scenarioFiles(t) {
		have[sf.id] = true
	}
	for _, id := range requiredIDs() {
		if !have[id] {
			t.Errorf("regression %s has no scenario file in testdata/", id)
		}
	}
	for i, c := range e3Cases {
		if id := fmt.Sprintf("E3-%d", i+1); !have[id] {
			t.Errorf("the suggestion coordinator's case %q has no scenario %s-….txtar in testdata/", c, id)
		}
	}
	// The issues' own lists stay true: each named ID is a required one.
	required := map[string]bool{}
	for _, id := range requiredIDs() {
		required[id] = true
	}
	for _, id := range append(append(append([]string(nil), issue2IDs...), issue3IDs...), issue11IDs...) {
		if !required[id] {
			t.Errorf("%s is listed by an issue but is not a required regression", id)
		}
	}
}

// pastIssueAllowed are the scenarios that may keep a PAST-ISSUE line (a
// step this build cannot replay as the contract words it), each with why.
// Every other scenario replays its case whole.
var pastIssueAllowed = map[string]string{
	"R053": "a child that ignores SIGTERM is played by the simulated host; the real SIGTERM, grace and SIGKILL are dadapter/procgroup's, tested on real processes in its own suite",
	"R060": "the simulated host stands in for real process groups; the real stop and identity proof are dadapter/procgroup's, tested on real processes",
	"R062": "the exact interleaving (a symlink appearing between the lock's open and its path check) needs a filesystem hook the OS does not offer; the check itself is replayed",
	"R081": "the scenarios run as root, which may open any file; the refusal of an unsafe parent is replayed by its checks, not by a permission error",
	"R091": "F3 performs no rebase yet: only its durable marker is written and recovered",
	"R102": "a live allocator's writes racing D's scan are not modelled by the simulated host; the recovery order is replayed",
}

// TestPastIssueLinesAreAllowed fails if a scenario keeps a PAST-ISSUE
// line without a reason above, or the list names a scenario that no
// longer needs one.
func TestPastIssueLinesAreAllowed(t *testing.T) {
	kept := map[string]bool{}
	for _, sf := range scenarioFiles(t) {
		b, err := os.ReadFile(sf.path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "PAST-ISSUE") {
			continue
		}
		kept[sf.id] = true
		if _, ok := pastIssueAllowed[sf.id]; !ok {
			t.Errorf("%s keeps a PAST-ISSUE line: finish the step, or add it to pastIssueAllowed with the reason", sf.path)
		}
	}
	for id := range pastIssueAllowed {
		if !kept[id] {
			t.Errorf("pastIssueAllowed names %s, which has no PAST-ISSUE line any more: drop it from the list", id)
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
