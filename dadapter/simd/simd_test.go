package simd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// recorder is an output sink that records what reaches it, and when it
// closed relative to the settlement callback.
type recorder struct {
	out    strings.Builder
	closes int
}

func (r *recorder) Write(p []byte) (int, error) { return r.out.Write(p) }
func (r *recorder) Close() error                { r.closes++; return nil }

func started(t *testing.T, d *D, sink dadapter.OutputSink) *Handle {
	t.Helper()
	const owner = "0123456789abcdef0123456789abcdef"
	d.AddStorage(dadapter.StorageOwner{RunnerOwner: owner, AttemptID: "A", AllocationID: "alloc-0001"})
	h, err := d.Start(dadapter.InvocationInput{RunnerOwner: owner, AttemptID: "A", Storage: d.storage["A"], Output: sink})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*Handle)
}

func newD() *D { return NewD(func(id string) string { return id }, func(string) {}) }

// TestEmitReachesTheSinkUntilSettled: what the agent writes goes to the
// sink in order; the sink closes once, before the settlement callback runs;
// what comes after reaches no one.
func TestEmitReachesTheSinkUntilSettled(t *testing.T) {
	sink := &recorder{}
	h := started(t, newD(), sink)
	h.Emit([]byte("reading src/parse.go\n"))
	h.Emit([]byte("running go test ./...\n"))
	closedFirst := false
	h.OnSettled(func(dadapter.Settlement) { closedFirst = sink.closes == 1 })
	h.Cancel(words.StopCancelled)
	if err := h.Settle(dadapter.Settlement{ExitCode: 143}); err != nil {
		t.Fatal(err)
	}
	h.Emit([]byte("late\n"))
	if got := sink.out.String(); got != "reading src/parse.go\nrunning go test ./...\n" {
		t.Errorf("sink got %q", got)
	}
	if !closedFirst || sink.closes != 1 {
		t.Errorf("closed before the settlement callback: %v; closes %d", closedFirst, sink.closes)
	}
}

// TestEmitWithoutASink: an invocation started with no sink discards its
// output.
func TestEmitWithoutASink(t *testing.T) {
	h := started(t, newD(), nil)
	h.Emit([]byte("nobody reads this\n"))
	if err := h.Settle(dadapter.Settlement{}); err != nil {
		t.Fatal(err)
	}
}

// TestFailedStartClosesTheSink: D owns the sink from Start on, so a Start
// that throws closes it before returning.
func TestFailedStartClosesTheSink(t *testing.T) {
	d := newD()
	if err := d.SetPolicy(OpStart, Policy{Mode: "fail", Msg: "no image"}); err != nil {
		t.Fatal(err)
	}
	sink := &recorder{}
	if _, err := d.Start(dadapter.InvocationInput{AttemptID: "A", Output: sink}); err == nil {
		t.Fatal("Start succeeded")
	}
	noStorage := &recorder{}
	if _, err := newD().Start(dadapter.InvocationInput{AttemptID: "B", Output: noStorage}); err == nil {
		t.Fatal("Start without storage succeeded")
	}
	if sink.closes != 1 || noStorage.closes != 1 {
		t.Errorf("closes: %d and %d, want 1 each", sink.closes, noStorage.closes)
	}
}

// TestCommitLeaves: the simulated commit's leaves are simTree with the
// script's changes applied, sorted: what is added, modified or changed in
// type is there, what is deleted is not.
func TestCommitLeaves(t *testing.T) {
	d := newD()
	const owner = "0123456789abcdef0123456789abcdef"
	fs := d.AddStorage(dadapter.StorageOwner{RunnerOwner: owner, AttemptID: "A", AllocationID: "alloc-0001"})
	d.SetChanges("A", dadapter.ChangeManifest{Changes: []dadapter.Change{
		{Path: ".gitignore", Kind: dadapter.ChangeDeleted},
		{Path: "README.md", Kind: dadapter.ChangeModified},
		{Path: "src/new.go", Kind: dadapter.ChangeAdded},
		{Path: "a-link", Kind: dadapter.ChangeTypeChanged},
	}})
	var got dadapter.Bundle
	var err error
	d.CommitTaskChanges(context.Background(), fs, func(b dadapter.Bundle, e error) { got, err = b, e })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "a-link", "src/new.go"}; !slices.Equal(got.Leaves, want) || got.LeavesCut {
		t.Errorf("leaves %q, cut %v; want %q, not cut", got.Leaves, got.LeavesCut, want)
	}

	// With nothing scripted the commit's tree is the seed's.
	fsB := d.AddStorage(dadapter.StorageOwner{RunnerOwner: owner, AttemptID: "B", AllocationID: "alloc-0002"})
	d.CommitTaskChanges(context.Background(), fsB, func(b dadapter.Bundle, e error) { got, err = b, e })
	if want := []string{".gitignore", "README.md"}; err != nil || !slices.Equal(got.Leaves, want) {
		t.Errorf("leaves %q (%v); want %q", got.Leaves, err, want)
	}
}
