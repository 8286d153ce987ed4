package docker

import (
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// TestScriptFailureSaysWhenThereIsNoErrorOutput guards the helper script's
// failure diagnostic: lastLines is "where git says why it failed", and when
// the script exits with an unexpected status without writing anything to
// standard error (or only blank lines), the error must say so, "(no error
// output)", rather than end in a bare "exit status N: " that reads as if the
// reason had been lost. With output, the last three non-empty lines are kept.
// Sweep survivor (seed 20261203): dadapter/docker/containers.go:lastLines:drop-guard:745016c8.
func TestScriptFailureSaysWhenThereIsNoErrorOutput(t *testing.T) {
	s := &storage{owner: dadapter.StorageOwner{AllocationID: "alloc-1"}}
	for _, stderr := range []string{"", "\n \n\t\n"} {
		err := scriptFailure(s, helperOutput{exitCode: 5, stderr: stderr})
		if err == nil {
			t.Fatalf("stderr %q: scriptFailure returned nil for exit status 5", stderr)
		}
		if want := "task storage alloc-1: exit status 5: (no error output)"; err.Error() != want {
			t.Errorf("stderr %q: error %q, want %q", stderr, err, want)
		}
	}
	err := scriptFailure(s, helperOutput{exitCode: 128, stderr: "a\n\nb\nc\n  d  \n"})
	if want := "task storage alloc-1: exit status 128: b / c / d"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
