package scenarios

import (
	"sync"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	"github.com/google/go-cmp/cmp"
)

// TestTracesRepeat runs every scenario twice and compares the two traces
// byte for byte, as simulation testers do: the same script must give the
// same trace on every run, under -race and at any GOMAXPROCS.
func TestTracesRepeat(t *testing.T) {
	runs := make([]map[string][]string, 2)
	for i := range runs {
		var mu sync.Mutex
		traces := map[string][]string{}
		runs[i] = traces
		p := cbts.Params("testdata", cbts.Options{Record: func(script string, trace []string) {
			mu.Lock()
			defer mu.Unlock()
			traces[script] = trace
		}})
		if failed, log := runQuietParallel(p); failed {
			t.Fatalf("scenarios failed in run %d:\n%s", i+1, log)
		}
	}
	if len(runs[0]) == 0 {
		t.Fatal("no trace was recorded")
	}
	if d := cmp.Diff(runs[0], runs[1]); d != "" {
		t.Errorf("traces differ between two runs (-first +second):\n%s", d)
	}
}
