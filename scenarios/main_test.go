package scenarios_test

import (
	"os"
	"testing"

	"github.com/codeboost/codeboost/cmd/codeboost/cli"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets scenarios `exec codeboost …` as a real process: the test
// binary re-executes itself as the codeboost command, running the very CLI
// the binary runs, on real files, for the cases about two processes, the
// lock, paths and links. Under the bite test's overlay the re-executed
// process carries the mutant too.
func TestMain(m *testing.M) {
	gts.Main(m, map[string]func(){"codeboost": func() {
		os.Exit(cli.Run(os.Args[1:], cli.Options{}))
	}})
}
