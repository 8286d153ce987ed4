// Package testbin builds the production codeboost binary once per test
// process, for tests that must run it as a real OS process (the crash
// sweep's fresh-process sample, the signal tests). It is used by tests
// only; Main removes the build when the tests end.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

const mainPkg = "github.com/codeboost/codeboost/cmd/codeboost"

var (
	mu  sync.Mutex
	dir string
)

var build = sync.OnceValues(func() (string, error) {
	d, err := os.MkdirTemp("", "codeboost-testbin")
	if err != nil {
		return "", err
	}
	mu.Lock()
	dir = d
	mu.Unlock()
	bin := filepath.Join(d, "codeboost")
	// go build finds its cache under HOME: call Codeboost before a test
	// changes HOME, or the build starts from nothing.
	// Under a mutant's test binaries (the bite test, the mutation sweep) the
	// binary is built under the same overlay, so a real process carries the
	// mutant too.
	args := []string{"build", "-o", bin}
	if overlay := os.Getenv("CODEBOOST_TEST_OVERLAY"); overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	// The sweep's coverage run (internal/mutate's CoverPkgEnv) counts what
	// this process enters: it writes its coverage to the GOCOVERDIR the
	// test passes on, beside the test binary's own. The main package must
	// be among those covered, or the binary writes nothing at all.
	if pkgs := os.Getenv("CODEBOOST_TEST_COVERPKG"); pkgs != "" {
		args = append(args, "-cover", "-covermode=set", "-coverpkg="+pkgs+","+mainPkg)
	}
	if out, err := exec.Command("go", append(args, mainPkg)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// Codeboost returns the path of the built binary.
func Codeboost() (string, error) { return build() }

// Main runs the tests, then removes the build.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	mu.Unlock()
	os.Exit(code)
}
