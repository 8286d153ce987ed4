package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// strangerStorageD is goD whose recovery hands back task storage labelled
// with attempt IDs that match no row of this database.
type strangerStorageD struct {
	*goD
	attemptIDs []string
}

func (d strangerStorageD) RecoverLeftovers(_ context.Context, _ string, done func(dadapter.RecoveryReport, error)) {
	var r dadapter.RecoveryReport
	for _, id := range d.attemptIDs {
		r.Storage = append(r.Storage, goFS{o: dadapter.StorageOwner{AttemptID: id, AllocationID: "x"}})
	}
	go done(r, nil)
}

// TestRecoveryReportsAForeignAttemptIDBounded: storage D's recovery hands
// back that matches no row is "reported, never exported or removed"
// (RecoveryReport.UnmatchedStorage), and the attempt ID it is reported by
// is a label read off D's objects, not one of this database's IDs: the
// report quotes it bounded, whole up to 64 bytes and cut to its first 64
// with an ellipsis beyond, so a label of any length never floods the
// report or the log.
func TestRecoveryReportsAForeignAttemptIDBounded(t *testing.T) {
	ids := []string{"x", strings.Repeat("a", 63), strings.Repeat("b", 64), strings.Repeat("c", 65), strings.Repeat("d", 4096)}
	want := []string{"x", strings.Repeat("a", 63), strings.Repeat("b", 64), strings.Repeat("c", 64) + "…", strings.Repeat("d", 64) + "…"}
	c, _, _ := productionCoordinator(t, 1, strangerStorageD{&goD{handles: map[string]*goHandle{}}, ids})
	if err := c.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.RecoveryDone()
	r := c.Recovery()
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if !slices.Equal(r.UnmatchedStorage, want) {
		t.Errorf("unmatched storage reported as\n%q\nwant\n%q", r.UnmatchedStorage, want)
	}
}
