package app_test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Tests for the order of two adjacent steps that need the real binary (the
// package's external test helpers): see swap_order_test.go for the rest.

// TestSecondCtrlCDuringStartupSaysWhy: the second Ctrl+C during startup
// stops the process at once with exit code 130, and first tells the person
// at the terminal why ("codeboost: stopped during startup"): os.Exit ends
// the process where it is called, so the line must be written before it.
//
// Kills app/signals.go:App.watchSignals:swap-steps:79a1f107 (os.Exit first:
// the line is never written).
func TestSecondCtrlCDuringStartupSaysWhy(t *testing.T) {
	db := busyStartup(t)
	cmd, out, exited := startServe(t, "--db", db)
	out.until(t, "recovery: started")
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	all := out.rest()
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(all, "codeboost: stopped during startup") {
		t.Fatalf("exit %d, want 130 after the line \"codeboost: stopped during startup\":\n%s", code, all)
	}
}
