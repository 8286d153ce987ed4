package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// unownedD is goD whose recovery reports objects D left alone: a legacy
// one (no runner label) and two of this runner's that D does not make or
// whose storage parts disagree.
type unownedD struct{ *goD }

func (unownedD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	go done(dadapter.RecoveryReport{Unowned: []dadapter.Unowned{
		{Kind: dadapter.KindVolume, Name: "old", Reason: dadapter.NoRunnerLabel, Remove: "docker volume rm old"},
		{Kind: dadapter.KindContainer, Name: "odd", Reason: dadapter.UnknownKind, Remove: "docker container rm -f odd"},
		{Kind: dadapter.KindVolume, Name: "half", Reason: dadapter.InconsistentStorage, Remove: "docker volume rm half"},
	}}, nil)
}

// TestRecoveryReportsEveryUnownedObject: the contract's "Unowned
// resources": a legacy object (no runner label) is a command a person
// must run before admission opens; objects of this runner that D does not
// make (unknown-kind) or whose storage parts disagree
// (inconsistent-storage) are not removed either, and are reported with
// D's own command rather than dropped; they do not hold admission closed.
func TestRecoveryReportsEveryUnownedObject(t *testing.T) {
	c, _, _ := productionCoordinator(t, 1, unownedD{&goD{handles: map[string]*goHandle{}}})
	if err := c.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.RecoveryDone()
	r := c.Recovery()
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(r.LegacyCommands) != 1 || r.LegacyCommands[0] != "docker volume rm old" {
		t.Errorf("legacy commands %q, want the legacy volume's", r.LegacyCommands)
	}
	want := []string{"container odd (unknown-kind); remove with: docker container rm -f odd",
		"volume half (inconsistent-storage); remove with: docker volume rm half"}
	if strings.Join(r.UnownedObjects, "\n") != strings.Join(want, "\n") {
		t.Errorf("unowned objects\n%q\nwant\n%q", r.UnownedObjects, want)
	}
	if r.Opened() {
		t.Error("admission opened with a legacy object present")
	}
}
