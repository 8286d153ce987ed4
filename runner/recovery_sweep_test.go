package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// noLeftoversD is goD whose recovery finds nothing of its own left.
type noLeftoversD struct{ *goD }

func (noLeftoversD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{}, nil)
}

// TestRecoveryStopsWhenStagingCannotBeRead: step 4 removes this runner's
// leftover staging directories; when their directory cannot be listed
// (here a file stands where it should be), recovery stops with that error
// and admission stays closed, rather than opening over leftovers it could
// not look at. Sweep survivor (seed 5150):
// runner/recovery.go:Coordinator.finalize:ignore-error:27e14fcf.
func TestRecoveryStopsWhenStagingCannotBeRead(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, noLeftoversD{&goD{handles: map[string]*goHandle{}}})
	dir := filepath.Join(c.cfg.Root, c.cfg.Owner)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "staging"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.RecoveryDone()
	r := c.Recovery()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "staging") {
		t.Fatalf("recovery error %v, want the staging directory's", r.Err)
	}
	if r.Opened() {
		t.Error("admission opened though the staging directory could not be read")
	}
}

// With the staging directory readable the same recovery opens admission,
// so the error above is the staging directory's alone.
func TestRecoveryOpensWithNothingLeft(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, noLeftoversD{&goD{handles: map[string]*goHandle{}}})
	if err := c.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.RecoveryDone()
	if r := c.Recovery(); r.Err != nil || !r.Opened() {
		t.Fatalf("recovery over nothing: error %v, opened %v", r.Err, r.Opened())
	}
}
