package scenarios

import (
	"os"
	"runtime"
	"sync"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	"github.com/google/go-cmp/cmp"
)

// TestTracesRepeat runs every scenario at GOMAXPROCS 1 and again at
// GOMAXPROCS 2, all scripts at once each time, and compares the traces byte
// for byte, as simulation testers do: the same script must give the same
// trace on every run and at any number of CPUs. CI runs it under -race too,
// so one pass of `go test -race ./scenarios` proves what the old
// `-count=3 -race -cpu 1,2` run did at a third of the cost.
//
// make test sets CODEBOOST_SCENARIOS_SPLIT=1: a CI run then replays every
// scenario three times in all, not six: twice here in the plain pass,
// once (TestScenarios) under -race. Unset, both tests run in both passes.
func TestTracesRepeat(t *testing.T) {
	if raceEnabled && os.Getenv(splitEnv) == "1" {
		t.Skip("the plain pass of this run compares the traces; under -race TestScenarios replays every scenario (" + splitEnv + "=1)")
	}
	procs := []int{1, 2}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runs := make([]map[string][]string, len(procs))
	for i, n := range procs {
		runtime.GOMAXPROCS(n)
		var mu sync.Mutex
		traces := map[string][]string{}
		runs[i] = traces
		p := cbts.Params("testdata", cbts.Options{Record: func(script string, trace []string) {
			mu.Lock()
			defer mu.Unlock()
			traces[script] = trace
		}})
		if failed, log := runQuietParallel(p); failed {
			t.Fatalf("scenarios failed at GOMAXPROCS %d:\n%s", n, log)
		}
	}
	if len(runs[0]) == 0 {
		t.Fatal("no trace was recorded")
	}
	if d := cmp.Diff(runs[0], runs[1]); d != "" {
		t.Errorf("traces differ between GOMAXPROCS %d and %d (-first +second):\n%s", procs[0], procs[1], d)
	}
}
