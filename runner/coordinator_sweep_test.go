package runner

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// TestNewRefusesAStoreWithoutItsCapability: settlement writes pass the
// Store's closed write gate only with its shutdown capability, so a
// coordinator built without it would settle nothing once shutdown closes
// the gate; New refuses it up front, with every other part present.
// Sweep survivor (seed 7): runner/coordinator.go:New:drop-guard:a121c512.
func TestNewRefusesAStoreWithoutItsCapability(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loop := NewGoroutineLoop()
	defer loop.Stop()
	cfg := Config{Root: dir, Owner: ids.Random{}.Token(), Slots: 1}
	deps := Deps{Store: st, D: &goD{}, Clock: NewRealClock(), Loop: loop, IDs: ids.Random{}}
	if _, err := New(cfg, deps); err == nil || !strings.Contains(err.Error(), "shutdown capability is required") {
		t.Fatalf("New without the capability = %v, want a refusal naming it", err)
	}
	deps.Capability = st.ShutdownCapability()
	if _, err := New(cfg, deps); err != nil {
		t.Fatalf("New with every part: %v", err)
	}
}
