package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// awaitAllocation waits until the first task-storage volume exists on the
// engine: the allocation of the first attempt is under way (it makes the
// volumes first, then seeds them, then the keeper).
func awaitAllocation(t *testing.T, cli *client.Client) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, o := range labelled(t, cli) {
			if strings.HasPrefix(o, "volume ") {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no task storage volume appeared within 60 s")
}

// TestR100CrashDuringAllocation is R100 (review round 30, "Crash during
// async allocation") on a real engine and a real serve process: the
// allocation ID is saved, the allocation starts, serve is killed (kill -9)
// while it runs, and the restart's recovery finds what the allocation made
// by its labels: the handle's attempt and allocation IDs match the row, so
// the storage is removed (never classed as unowned or unmatched, which
// would leave it on the engine for a person) and the attempt is finalized.
// The task is requeued, by this restart or, when the kill landed in the
// preparation window, by the start after the person's release (issue 19:
// that start used to leave the claim stranded). The user's repository is
// unchanged.
func TestR100CrashDuringAllocation(t *testing.T) {
	cli, agent, bin := begin(t)
	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	before := digest(t, repo)
	e := writeConfig(t, dir, repo, agent)

	s := startServe(t, bin, e)
	s.importApproved(t, planDoc, 2)
	s.action(t, "start", "")
	awaitAllocation(t, cli)
	s.kill(t)
	if len(labelled(t, cli)) == 0 {
		t.Fatal("the crash left nothing on the engine: the allocation had not begun")
	}
	s = startServe(t, bin, e)
	// A preparation the crash left with no group ID keeps admission closed
	// for a person's --release-preparation (step 7), and nothing is
	// requeued until the start after the release, which hands on the claim
	// the first restart made; otherwise this restart requeues the task
	// (lane I3). Either way the task is requeued in the end.
	out := s.out.String()
	if strings.Contains(out, "left alone") || strings.Contains(out, "does not match") {
		t.Fatalf("recovery did not match the crashed allocation to its row:\n%s", out)
	}
	if released := releasePreparation(t, s, bin, e); released != nil {
		t.Log("the kill landed in the preparation window: released, and started again")
		s = released
	}
	if !strings.Contains(s.out.String(), "requeued ") {
		t.Fatalf("the task was not requeued:\n%s", s.out.String())
	}
	st := s.status(t)
	if len(st.Attempts) != 2 {
		t.Fatalf("%d attempts after the restart, want 2 (the crashed one, the requeue's): %+v", len(st.Attempts), st.Attempts)
	}
	a := s.waitAttemptID(t, oldestFirst(st.Attempts)[0].ID, "")
	noAttemptObjects(t, cli, a.ID, "recovery of the crashed allocation")
	t.Logf("attempt 1 after the crash: %s %q", a.State, a.Diagnostic)
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after recovering a crashed allocation and a clean shutdown")
	if digest(t, repo) != before {
		t.Fatal("the user's repository changed")
	}
}

// TestR085AllocationIsAbortable is R085 (review round 23, "Storage
// allocation is abortable") on a real engine: a cancel while the
// allocation is waiting on Docker aborts it; the server keeps answering
// GET /api/runner meanwhile; the row ends cancelled; nothing the
// allocation made is left.
func TestR085AllocationIsAbortable(t *testing.T) {
	cli, agent, bin := begin(t)
	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	e := writeConfig(t, dir, repo, agent)

	s := startServe(t, bin, e)
	s.importApproved(t, planDoc, 2)
	s.action(t, "start", "")
	awaitAllocation(t, cli)
	a := s.waitAttempt(t, 1, "pending")
	began := time.Now()
	s.action(t, "cancel", a.ID)
	got := s.waitAttemptID(t, a.ID, "")
	t.Logf("cancel during allocation: %s %q after %v", got.State, got.Diagnostic, time.Since(began).Round(time.Millisecond))
	if got.State != "cancelled" {
		t.Fatalf("attempt 1 ended %s (%s), want cancelled", got.State, got.Diagnostic)
	}
	waitNoObjects(t, cli, "after a cancel during allocation")
	s.stop(t, syscall.SIGTERM)
}
