package runner

import (
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// TestLegacyCommandIsDsOwnWhenItWordsOne: startup recovery's report names,
// for each object with no runner label, the command that removes it: D's
// own wording when it gives one (the engine's exact command), the generic
// one only when it gives none, so that a person is never left without.
// Sweep survivor (seed 271828): runner/recovery.go:legacyCommand:drop-guard:7530496b.
func TestLegacyCommandIsDsOwnWhenItWordsOne(t *testing.T) {
	u := dadapter.Unowned{Kind: "container", Name: "agent-1", Reason: dadapter.NoRunnerLabel, Remove: "docker rm -f --volumes agent-1"}
	if got := legacyCommand(u); got != u.Remove {
		t.Errorf("legacyCommand = %q; want D's own %q", got, u.Remove)
	}
	u.Remove = ""
	if got, want := legacyCommand(u), dadapter.RemoveCommand(u.Kind, u.Name); got != want {
		t.Errorf("legacyCommand with no wording of D's = %q; want the generic %q", got, want)
	}
}
