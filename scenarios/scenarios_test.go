package scenarios

import (
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestScenarios replays every scenario against the real runner and real
// SQLite in a simulated world. Under the race detector it skips itself:
// TestTracesRepeat replays every scenario there twice (GOMAXPROCS 1 and
// 2) and fails on any scenario that fails, so a third replay would only
// cost a minute of CI.
func TestScenarios(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race, TestTracesRepeat replays every scenario (see raceEnabled)")
	}
	gts.Run(t, cbts.Params("testdata", cbts.Options{}))
}
