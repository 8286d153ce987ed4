package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Under the sweep's coverage run the built binary writes its coverage to
// GOCOVERDIR, so that what an end-to-end test's serve process enters
// selects that test (internal/mutate's coverage.go). With the main package
// left out of -coverpkg the binary wrote nothing, and every e2e test
// looked as if it entered no mutated function.
func TestBinaryWritesItsCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the codeboost binary with coverage")
	}
	dir := t.TempDir()
	t.Setenv("CODEBOOST_TEST_COVERPKG", "github.com/codeboost/codeboost/app")
	bin, err := Codeboost()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "help")
	cmd.Env = append(os.Environ(), "GOCOVERDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codeboost help: %v\n%s", err, out)
	}
	meta, _ := filepath.Glob(filepath.Join(dir, "covmeta.*"))
	counters, _ := filepath.Glob(filepath.Join(dir, "covcounters.*"))
	if len(meta) != 1 || len(counters) != 1 {
		t.Errorf("GOCOVERDIR holds %d meta and %d counter files, want 1 and 1", len(meta), len(counters))
	}
}

func TestMain(m *testing.M) { Main(m) }
