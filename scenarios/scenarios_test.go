package scenarios

import (
	"os"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestScenarios replays every scenario against the real runner and real
// SQLite in a simulated world. With CODEBOOST_SCENARIOS_SPLIT=1 (make test)
// it runs under -race only: the plain pass's TestTracesRepeat replays every
// scenario twice and fails on any scenario that fails.
func TestScenarios(t *testing.T) {
	if !raceEnabled && os.Getenv(splitEnv) == "1" {
		t.Skip("TestTracesRepeat replays every scenario in the plain pass (" + splitEnv + "=1)")
	}
	gts.Run(t, cbts.Params("testdata", cbts.Options{}))
}

// splitEnv names the switch that splits the scenario replays between a CI
// run's plain and race passes.
const splitEnv = "CODEBOOST_SCENARIOS_SPLIT"
