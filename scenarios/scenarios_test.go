package scenarios

import (
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestScenarios replays every scenario against the real runner and real
// SQLite in a simulated world.
func TestScenarios(t *testing.T) {
	gts.Run(t, cbts.Params("testdata", cbts.Options{}))
}
