package dtest

import (
	"context"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// The bites prove cases fail against a broken D (Bites, run by each
// harness's test). These tests prove each broken wrapper breaks what it
// says, and only that, against a fake D that obeys the contract, so a bite
// that stops biting points at the suite and not at its wrapper.

// fakeD obeys the contract for the few calls the wrappers touch; the rest
// of dadapter.D is the nil embedded interface (a call would panic).
type fakeD struct {
	dadapter.D
	handle  *fakeHandle
	storage map[string][]string // runner → attempt IDs of its storage
	diff    []byte
}

type fakeHandle struct {
	reason words.StopReason
	fns    []func(dadapter.Settlement)
}

func (d *fakeD) Start(dadapter.InvocationInput) (dadapter.Handle, error) {
	d.handle = &fakeHandle{}
	return d.handle, nil
}

func (h *fakeHandle) OnSettled(fn func(dadapter.Settlement)) { h.fns = append(h.fns, fn) }

func (h *fakeHandle) Cancel(r words.StopReason) {
	if h.reason == "" {
		h.reason = r
	}
}

// settle is the agent stopping: every registered callback once.
func (h *fakeHandle) settle() {
	for _, fn := range h.fns {
		fn(dadapter.Settlement{StopReason: h.reason})
	}
}

type fakeStorage struct {
	dadapter.StorageSeal
	owner dadapter.StorageOwner
}

func (f fakeStorage) Owner() dadapter.StorageOwner { return f.owner }
func (fakeStorage) MetadataBaseline() string       { return "baseline" }
func (fakeStorage) Base() string                   { return "base" }

func (d *fakeD) RecoverLeftovers(_ context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	var r dadapter.RecoveryReport
	for _, id := range d.storage[owner] {
		r.Storage = append(r.Storage, fakeStorage{owner: dadapter.StorageOwner{RunnerOwner: owner, AttemptID: id}})
	}
	done(r, nil)
}

func (d *fakeD) ExportTaskDiff(_ context.Context, _ dadapter.TaskFilesystems, maxBytes int, done func(dadapter.ExportResult, error)) {
	r := dadapter.ExportResult{Diff: d.diff}
	if len(r.Diff) > maxBytes {
		r.Diff, r.Truncated = r.Diff[:maxBytes], true
	}
	done(r, nil)
}

// fakeImpl gives the wrappers the owners they need.
type fakeImpl struct{ Impl }

func (fakeImpl) Owner() string      { return "owner" }
func (fakeImpl) OtherOwner() string { return "other" }

func biteNamed(t *testing.T, name string) bite {
	t.Helper()
	for _, b := range bites {
		if b.name == name {
			return b
		}
	}
	t.Fatalf("no bite %s", name)
	return bite{}
}

// settlements starts an invocation through the bite, applies cancels,
// settles the fake handle and returns what the callback received.
func settlements(t *testing.T, name string, cancels ...words.StopReason) []dadapter.Settlement {
	d := &fakeD{}
	bitten := biteNamed(t, name).wrap(d, fakeImpl{})
	h, err := bitten.Start(dadapter.InvocationInput{})
	if err != nil {
		t.Fatal(err)
	}
	var got []dadapter.Settlement
	h.OnSettled(func(s dadapter.Settlement) { got = append(got, s) })
	for _, r := range cancels {
		h.Cancel(r)
	}
	d.handle.settle()
	return got
}

func TestBiteSecondCancelReplacesTheStopReason(t *testing.T) {
	got := settlements(t, "second-cancel-replaces-the-stop-reason", words.StopCancelled, words.StopShutdown)
	if len(got) != 1 || got[0].StopReason != words.StopShutdown {
		t.Errorf("settlements %+v, want one with the second reason, shutdown", got)
	}
	if got := settlements(t, "second-cancel-replaces-the-stop-reason"); len(got) != 1 || got[0].StopReason != "" {
		t.Errorf("without a Cancel: settlements %+v, want one with no stop reason", got)
	}
}

func TestBiteSettlesTwice(t *testing.T) {
	if got := settlements(t, "settles-twice", words.StopCancelled); len(got) != 2 || got[0].StopReason != words.StopCancelled {
		t.Errorf("settlements %+v, want the first reason twice", got)
	}
}

func TestBiteSettlesAtCancel(t *testing.T) {
	d := &fakeD{}
	h, _ := biteNamed(t, "settles-at-cancel").wrap(d, fakeImpl{}).Start(dadapter.InvocationInput{})
	var got []dadapter.Settlement
	h.OnSettled(func(s dadapter.Settlement) { got = append(got, s) })
	h.Cancel(words.StopCancelled)
	if len(got) != 1 || got[0].StopReason != words.StopCancelled {
		t.Fatalf("at Cancel, before the agent stopped: settlements %+v, want one", got)
	}
	d.handle.settle()
	if len(got) != 1 {
		t.Errorf("after the agent stopped: %d settlements, want still one", len(got))
	}
}

func TestBiteRecoveryReturnsEveryRunnersStorage(t *testing.T) {
	d := &fakeD{storage: map[string][]string{"owner": {"a"}, "other": {"b"}}}
	var got []string
	biteNamed(t, "recovery-returns-every-runners-storage").wrap(d, fakeImpl{}).RecoverLeftovers(context.Background(), "owner",
		func(r dadapter.RecoveryReport, err error) {
			for _, s := range r.Storage {
				got = append(got, s.Owner().RunnerOwner+"/"+s.Owner().AttemptID)
			}
		})
	if len(got) != 2 || got[0] != "owner/a" || got[1] != "other/b" {
		t.Errorf("recovered %v, want owner/a and the other runner's other/b", got)
	}
}

func TestBiteExportIgnoresTheBound(t *testing.T) {
	d := &fakeD{diff: []byte("diff --git a/README.md b/README.md\n")}
	var got dadapter.ExportResult
	biteNamed(t, "export-ignores-the-bound").wrap(d, fakeImpl{}).ExportTaskDiff(context.Background(), fakeStorage{}, 4,
		func(r dadapter.ExportResult, err error) { got = r })
	if got.Truncated || string(got.Diff) != string(d.diff) {
		t.Errorf("bounded at 4: %+v, want the whole diff, not truncated", got)
	}
}

// TestNewIDAndToken: the suite's IDs are the contract's forms, so a
// refusal the suite sees is never owed to its own IDs.
func TestNewIDAndToken(t *testing.T) {
	for range 100 {
		if id := NewID(); !ids.ValidUUID(id) {
			t.Fatalf("NewID() = %q, not a lowercase UUID v4", id)
		}
		if tok := NewToken(); !ids.ValidToken(tok) {
			t.Fatalf("NewToken() = %q, not 32 lowercase hex", tok)
		}
	}
}

// TestParseRemoveCommand reads back exactly what dadapter.RemoveCommand
// prints, and nothing else.
func TestParseRemoveCommand(t *testing.T) {
	for _, k := range []dadapter.ResourceKind{dadapter.KindContainer, dadapter.KindNetwork, dadapter.KindVolume} {
		kind, name, ok := ParseRemoveCommand(dadapter.RemoveCommand(k, "old-"+string(k)))
		if !ok || kind != k || name != "old-"+string(k) {
			t.Errorf("%s: got %s %q %v", k, kind, name, ok)
		}
	}
	for _, cmd := range []string{"", "docker rm old", "docker volume rm -f old", "rm -rf /", "docker network rm"} {
		if k, n, ok := ParseRemoveCommand(cmd); ok {
			t.Errorf("%q read as %s %q", cmd, k, n)
		}
	}
}
