package store_test

// Rules whose guards no other test reached (the survivors of mutation seed
// 5150): which side of the requeue claim refused an admission, the legal
// states of a merge attempt's end, a cancelled task under a confirmed merge,
// and rows that cannot be read back where a checkpoint, or the requests a
// moved plan invalidates, are read.

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestAdmitRefusalNamesThePendingRequeue: "While it is set, retry and every
// other admission for that task are refused ... Exactly one path clears
// it, by an atomic compare-and-swap from true to false in the same
// transaction that admits the next attempt: I3's requeue, or ... the
// user's explicit 'Resume' action." Both sides of that compare-and-swap
// refuse with requeue-pending, so the refusal's message (Refusal.Message
// is "for people") is what tells them apart: an unclaimed admission while
// recovery listed the task says so and points at resume; a claim with
// nothing pending says there is nothing to claim. Telling the user "no
// requeue is pending" when one is would send them away from the one
// action that continues the task.
func TestAdmitRefusalNamesThePendingRequeue(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name          string
		pending       bool
		claim         bool
		want, notWant string
	}{
		{"unclaimed admission while a requeue is pending", true, false, "resume it instead", "no requeue is pending"},
		{"claim with no requeue pending", false, true, "no requeue is pending", "resume it instead"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := e.newTask(words.StatusRunning)
			if c.pending {
				e.rawExec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ?`, key)
			}
			r := e.admitReq(key, words.KindReview)
			r.ClaimRequeue = c.claim
			e.wantAdmitRefused(r, store.CodeRequeuePending)
			_, err := e.s.Admit(r)
			ref := wantRefusal(t, err, store.CodeRequeuePending)
			if !strings.Contains(ref.Message, c.want) || strings.Contains(ref.Message, c.notWant) {
				t.Fatalf("refusal %q, want one that says %q", ref.Message, c.want)
			}
			if got := e.task(key).RequeuePending; got != c.pending {
				t.Fatalf("requeue_pending = %v after a refused admission, want %v", got, c.pending)
			}
		})
	}
}

// TestEndMergeRefusesAnEndedAttempt: SetMergeState (and EndMerge) records
// "the terminal removed or failed (from submitting or queued)": an attempt
// already merged, removed or failed is refused as illegal, and its row
// (state, reason, requires_fresh_review) and the task stay as they were.
// A merged attempt turned removed would also demand a fresh review of a
// task that is closed, and "a closed status never changes again".
func TestEndMergeRefusesAnEndedAttempt(t *testing.T) {
	e := newEnv(t)
	for _, from := range []string{store.MergeMerged, store.MergeRemoved, store.MergeFailed} {
		for _, to := range []string{store.MergeRemoved, store.MergeFailed} {
			t.Run(from+" to "+to, func(t *testing.T) {
				key := e.newTask(words.StatusInReview)
				id := e.beginMerge(key)
				if from == store.MergeMerged {
					e.update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
				} else {
					e.update(func(tx *store.Tx) error { return tx.EndMerge(id, from, "the first end") })
				}
				row := func() string {
					return e.rawString(`SELECT state || '|' || COALESCE(reason, '') || '|' || requires_fresh_review FROM merge_attempts WHERE id = ?`, id)
				}
				before, status, events := row(), e.task(key).Status, e.closedEvents(key)
				err := e.s.Update(func(tx *store.Tx) error { return tx.EndMerge(id, to, "a second end") })
				wantRefusal(t, err, store.CodeIllegal)
				if after := row(); after != before {
					t.Fatalf("refused end changed the merge attempt: %q → %q", before, after)
				}
				if e.task(key).Status != status || e.closedEvents(key) != events {
					t.Fatalf("refused end changed the task: status %q → %q, task-closed %d → %d",
						status, e.task(key).Status, events, e.closedEvents(key))
				}
			})
		}
	}
}

// TestFinishMergeMergedKeepsACancelledTask: "Closed means merged or
// cancelled ...; a closed status never changes again", and "a closed task
// can never change to merged". A task that is cancelled while its merge
// attempt is still queued (cancel task refuses that, so only another build
// or a hand edit leaves it) refuses the confirmation as task-closed, and
// nothing moves: the attempt stays queued, the task cancelled, no second
// task-closed event.
func TestFinishMergeMergedKeepsACancelledTask(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	id := e.beginMerge(key)
	e.update(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeQueued) })
	e.rawExec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusCancelled, key)
	err := e.s.Update(func(tx *store.Tx) error { return tx.FinishMergeMerged(id) })
	wantRefusal(t, err, store.CodeTaskClosed)
	if st := e.rawString(`SELECT state FROM merge_attempts WHERE id = ?`, id); st != store.MergeQueued {
		t.Fatalf("merge attempt is %q after a refused confirmation, want queued", st)
	}
	if got := e.task(key).Status; got != words.StatusCancelled {
		t.Fatalf("cancelled task became %q", got)
	}
	if n := e.closedEvents(key); n != 0 {
		t.Fatalf("refused confirmation wrote %d task-closed events", n)
	}
}

// TestUnreadableCheckpointIsAnError: LatestCheckpoint is "what GET
// /api/runner shows, read from rows alone"; a checkpoint whose scope paths
// are not JSON (a database another build or a failing disk wrote) is read
// as that error, never as a checkpoint with no scope paths (the scope the
// continuation approval covers would silently be empty), and never as a
// refusal (TestUnreadableRowIsAnError's rule).
func TestUnreadableCheckpointIsAnError(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.running(key, words.KindReview)
	e.rawExec(`INSERT INTO checkpoints (attempt_id, plan_key, revision, item, commit_sha, scope_paths, leaves, created_at)
		VALUES (?, ?, 1, 1, 'c1', 'not JSON', NULL, 0)`, a.ID, key)
	var ok bool
	err := e.s.View(func(tx *store.Tx) (err error) { _, ok, err = tx.LatestCheckpoint(key); return err })
	if err == nil {
		t.Fatalf("an unreadable checkpoint was read without an error (found %v)", ok)
	}
	if code := store.RefusalCode(err); code != "" {
		t.Fatalf("an unreadable checkpoint came back as the refusal %q (%v)", code, err)
	}
}

// TestUnreadableRequestStopsTheMove: invalidatePlanRequests runs "in the
// transaction that moves the plan's revision or snapshot"; a pending
// request whose binding cannot be read back cannot be judged current or
// stale, so the move fails with that error (not a refusal) and rolls back:
// the plan keeps its revision and snapshot and the request row is as it
// was, never invalidated with a cause built from a zero binding.
func TestUnreadableRequestStopsTheMove(t *testing.T) {
	for _, c := range []struct {
		name string
		move func(tx *store.Tx, key string) error
	}{
		{"snapshot change", func(tx *store.Tx, key string) error { return tx.ChangeSnapshot(key, "snap-2") }},
		{"import", func(tx *store.Tx, key string) error {
			_, err := tx.ImportPlan(key, 1, []store.ItemInput{{Title: "only", Spec: []byte(`{"title":"only"}`)}})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			r := e.begin(key, store.ModeSuggestion)
			e.rawExec(`UPDATE plan_requests SET revision = 'first' WHERE id = ?`, r.ID)
			before := e.plan(key)
			err := e.s.Update(func(tx *store.Tx) error { return c.move(tx, key) })
			if err == nil {
				t.Fatal("the plan moved over a request it could not read")
			}
			if code := store.RefusalCode(err); code != "" {
				t.Fatalf("an unreadable request came back as the refusal %q (%v)", code, err)
			}
			if p := e.plan(key); p.Revision != before.Revision || p.SnapshotID != before.SnapshotID {
				t.Fatalf("plan moved to revision %d on %s despite the error", p.Revision, p.SnapshotID)
			}
			if st := e.rawString(`SELECT state || '|' || COALESCE(cause, '') FROM plan_requests WHERE id = ?`, r.ID); st != store.RequestPending+"|" {
				t.Fatalf("unreadable request became %q", st)
			}
		})
	}
}
