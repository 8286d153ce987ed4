package scenarios

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

var traces = flag.Bool("traces", false, "TestReplay: replay the scenarios and print each one's trace")

// TestReplay is the scenario replay, which lives here and not in the
// codeboost binary (that links no scenario language and no scenario
// files). With -traces it replays every scenario that -run selects and,
// once all have ended, prints each one's trace of events in virtual time,
// in name order; a failing scenario fails the test as in TestScenarios.
// Without -traces it is skipped: TestScenarios is the suite. `make replay`
// runs it in local directory mode, where go test shows the output:
//
//	cd scenarios && go test -count=1 -run '^TestReplay$' -traces
//	cd scenarios && go test -count=1 -run '^TestReplay$/^F-4' -traces
func TestReplay(t *testing.T) {
	if !*traces {
		t.Skip("the replay prints traces only with -traces; TestScenarios is the suite")
	}
	var mu sync.Mutex
	ran := map[string]bool{}
	recorded := map[string][]string{}
	p := cbts.Params("testdata", cbts.Options{Record: func(script string, trace []string) {
		mu.Lock()
		defer mu.Unlock()
		recorded[script] = trace
	}})
	setup := p.Setup
	p.Setup = func(env *gts.Env) error {
		mu.Lock()
		ran[strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")] = true
		mu.Unlock()
		return setup(env)
	}
	t.Cleanup(func() { printTraces(ran, recorded) })
	gts.Run(t, p)
}

// printTraces writes each replayed scenario's trace, indented under its
// name, in name order. A scenario that ran only real codeboost processes
// has no simulated world and so no trace; it says so.
func printTraces(ran map[string]bool, recorded map[string][]string) {
	names := make([]string, 0, len(ran))
	for name := range ran {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintln(os.Stdout, name)
		trace, ok := recorded[name]
		if !ok {
			fmt.Fprintln(os.Stdout, "    (real codeboost processes only: no simulated trace)")
		}
		for _, line := range trace {
			fmt.Fprintln(os.Stdout, "    "+line)
		}
	}
	fmt.Fprintf(os.Stdout, "%d scenarios replayed\n", len(names))
}
