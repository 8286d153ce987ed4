package runner

import (
	"bytes"
	"syscall"
	"testing"
)

// TestSaveDiagnosticReportsAFailedWrite makes saveDiagnostic's write fail
// part-way (the file size limit stands for a full disk) and checks that
// the save is an error and leaves nothing behind. The contract's "Partial
// output": "exportPartial saves D's bounded diff … as
// <diagnostics>/<attemptId>.diff, owner-only, written through an exclusive
// temporary file. The terminal write stores it as diagnostic_ref. A failed
// export adds "Partial output could not be exported: " (quoted) to the
// diagnostic instead." A diff cut short by a failed write is a failed
// export, never a saved one: a later successful Close must not stand for
// the write that failed.
//
// The size limit is process-wide: the test is not parallel, and the limit
// is lifted as soon as the save returns.
func TestSaveDiagnosticReportsAFailedWrite(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, &goD{})
	const limit = 64 << 10
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if old.Cur <= 2*limit {
		t.Skipf("file size limit already %d", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	name, err := c.saveDiagnostic(c.deps.IDs.UUID(), bytes.Repeat([]byte("+"), 2*limit))
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatalf("restoring the file size limit: %v", rerr)
	}
	if err == nil || name != "" {
		t.Errorf("save past the file size limit = %q, %v; want an error and no name", name, err)
	}
	if got := dirNames(t, c.diagnosticsDir()); len(got) != 0 {
		t.Errorf("diagnostics directory holds %q after the failed save, want nothing", got)
	}
}
