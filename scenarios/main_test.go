package scenarios_test

import (
	"os"
	"testing"

	"github.com/codeboost/codeboost/failpoints"

	"github.com/codeboost/codeboost/cmd/codeboost/cli"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets scenarios `exec codeboost …` as a real process: the test
// binary re-executes itself as the codeboost command, running the very CLI
// the binary runs, on real files, for the cases about two processes, the
// lock, paths and links.
func TestMain(m *testing.M) {
	gts.Main(m, map[string]func(){"codeboost": func() {
		// The bite test's mutant reaches the re-executed process through
		// the test binary's own environment; the codeboost binary never
		// reads this variable.
		if name := os.Getenv("CODEBOOST_TEST_MUTANT"); name != "" {
			fp := failpoints.New()
			if err := fp.Enable(name, "return"); err != nil {
				panic(err)
			}
			cli.Failpoints = fp
		}
		cli.Main()
	}})
}
