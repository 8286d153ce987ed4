package store_test

// The user-action protocol: one user_actions row per (plan key, action ID);
// a replay returns the saved response and applies nothing; another request
// under the same ID is refused; a guard's refusal is recorded in its own
// transaction; a storage error records nothing; AfterCommit effects run only
// after COMMIT.

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const actionA = "5f0c6a3e-2b1d-4e8f-9a7c-0d1e2f3a4b5c"

// savedResponse reads a user_actions row's response, or ok=false.
func (e *env) savedResponse(key, actionID string) (store.Response, bool) {
	e.t.Helper()
	var body string
	err := e.rawDB().QueryRow(`SELECT response FROM user_actions WHERE plan_key = ? AND action_id = ?`, key, actionID).Scan(&body)
	if err != nil {
		return store.Response{}, false
	}
	var r store.Response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		e.t.Fatalf("saved response %q: %v", body, err)
	}
	return r, true
}

func (e *env) actionRows() int64 { return e.rawInt(`SELECT COUNT(*) FROM user_actions`) }

// toNeedsApproval is a user action body with a visible effect.
func toNeedsApproval(key string, calls *int) func(tx *store.Tx) (store.Response, error) {
	return func(tx *store.Tx) (store.Response, error) {
		*calls++
		if err := tx.SetTaskStatus(key, words.StatusNeedsApproval); err != nil {
			return store.Response{}, err
		}
		return store.Response{Message: "sent for approval"}, nil
	}
}

var ignoreReplayed = cmpopts.IgnoreFields(store.Response{}, "Replayed")

func TestUserActionReplay(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	calls := 0
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "approve", Request: map[string]any{"note": "ok", "n": 1}}
	first, err := e.s.UserAction(act, toNeedsApproval(key, &calls))
	if err != nil {
		t.Fatal(err)
	}
	want := store.Response{Outcome: "applied", Message: "sent for approval"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first response (-want +got):\n%s", diff)
	}
	if saved, ok := e.savedResponse(key, actionA); !ok || !cmp.Equal(want, saved, ignoreReplayed) {
		t.Errorf("saved response %+v (found %t), want %+v", saved, ok, want)
	}
	after := e.snap(key)
	if after.Task.Status != words.StatusNeedsApproval {
		t.Fatalf("action not applied: status %s", after.Task.Status)
	}

	// The same request again (map key order does not matter): the saved
	// response, Replayed, nothing applied, fn never called.
	act.Request = map[string]any{"n": 1, "note": "ok"}
	for i := 0; i < 3; i++ {
		again, err := e.s.UserAction(act, toNeedsApproval(key, &calls))
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !again.Replayed {
			t.Errorf("replay %d: Replayed is false", i)
		}
		if diff := cmp.Diff(first, again, ignoreReplayed); diff != "" {
			t.Errorf("replay %d response (-first +replay):\n%s", i, diff)
		}
	}
	if calls != 1 {
		t.Errorf("fn ran %d times, want 1", calls)
	}
	if diff := cmp.Diff(after, e.snap(key)); diff != "" {
		t.Errorf("a replay changed the database (-before +after):\n%s", diff)
	}
}

func TestUserActionIDAlreadyUsed(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	calls := 0
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "approve", Request: map[string]any{"note": "ok"}}
	if _, err := e.s.UserAction(act, toNeedsApproval(key, &calls)); err != nil {
		t.Fatal(err)
	}
	before := e.snap(key)
	rows := e.actionRows()
	for name, other := range map[string]store.Action{
		"another request": {PlanKey: key, ActionID: actionA, Kind: "approve", Request: map[string]any{"note": "changed"}},
		"another kind":    {PlanKey: key, ActionID: actionA, Kind: "reject", Request: map[string]any{"note": "ok"}},
		"no request":      {PlanKey: key, ActionID: actionA, Kind: "approve"},
	} {
		ran := false
		resp, err := e.s.UserAction(other, func(tx *store.Tx) (store.Response, error) {
			ran = true
			return store.Response{}, tx.SetTaskStatus(key, words.StatusNeedsHuman)
		})
		r := wantRefusal(t, err, store.CodeActionIDUsed)
		if r.Message != words.ActionIDAlreadyUsed {
			t.Errorf("%s: message %q, want %q", name, r.Message, words.ActionIDAlreadyUsed)
		}
		if ran {
			t.Errorf("%s: the action ran", name)
		}
		if resp.Replayed {
			t.Errorf("%s: a refused reuse reported as a replay", name)
		}
	}
	if n := e.actionRows(); n != rows {
		t.Errorf("reuse wrote %d user_actions rows", n-rows)
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("a reused action ID changed the database:\n%s", diff)
	}
	// The same ID under another plan key is another action.
	other := e.newTask("")
	if _, err := e.s.UserAction(store.Action{PlanKey: other, ActionID: actionA, Kind: "approve", Request: map[string]any{"note": "changed"}},
		toNeedsApproval(other, &calls)); err != nil {
		t.Errorf("same action ID on another plan key: %v", err)
	}
}

// TestUserActionRefusalRecorded: a guard's refusal is the action's outcome:
// the action's own writes roll back, the refusal is saved in a transaction
// of its own, and a replay answers the same refusal.
func TestUserActionRefusalRecorded(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.snap(key)
	calls := 0
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "close", Request: "merged"}
	body := func(tx *store.Tx) (store.Response, error) {
		calls++
		// A write that succeeds, then a guard that refuses.
		if err := tx.SetTaskStatus(key, words.StatusNeedsApproval); err != nil {
			return store.Response{}, err
		}
		return store.Response{}, tx.SetTaskStatus(key, words.StatusMerged)
	}
	resp, err := e.s.UserAction(act, body)
	r := wantRefusal(t, err, store.CodeIllegal)
	if resp.Outcome != "refused" || resp.Code != store.CodeIllegal || resp.Message != r.Message {
		t.Errorf("refusal response %+v", resp)
	}
	saved, ok := e.savedResponse(key, actionA)
	if !ok {
		t.Fatal("no user_actions row for the refused action")
	}
	if diff := cmp.Diff(store.Response{Outcome: "refused", Code: store.CodeIllegal, Message: r.Message}, saved); diff != "" {
		t.Errorf("saved refusal (-want +got):\n%s", diff)
	}
	after := e.snap(key)
	if after.Task.Status != before.Task.Status || after.Task.StateVersion != before.Task.StateVersion {
		t.Errorf("the refused action's writes survived: status %s, state version %d → %d",
			after.Task.Status, before.Task.StateVersion, after.Task.StateVersion)
	}
	if after.Actions != before.Actions+1 {
		t.Errorf("%d user_actions rows added, want 1", after.Actions-before.Actions)
	}

	// Its replay returns the same refusal and runs nothing.
	again, err := e.s.UserAction(act, body)
	r2 := wantRefusal(t, err, store.CodeIllegal)
	if r2.Message != r.Message {
		t.Errorf("replayed refusal message %q, want %q", r2.Message, r.Message)
	}
	if !again.Replayed || again.Outcome != "refused" {
		t.Errorf("replayed refusal response %+v", again)
	}
	if calls != 1 {
		t.Errorf("fn ran %d times, want 1", calls)
	}
	if diff := cmp.Diff(after, e.snap(key)); diff != "" {
		t.Errorf("the replayed refusal changed the database:\n%s", diff)
	}
}

// TestUserActionStorageErrorRecordsNothing: a storage error is not an
// outcome: nothing is saved, so the UI may resend the same action.
func TestUserActionStorageErrorRecordsNothing(t *testing.T) {
	t.Run("failpoint", func(t *testing.T) {
		e := newEnv(t)
		key := e.newTask("")
		before := e.snap(key)
		if err := e.fp.Enable("store/user-action", "1*return"); err != nil {
			t.Fatal(err)
		}
		calls := 0
		act := store.Action{PlanKey: key, ActionID: actionA, Kind: "approve", Request: 1}
		_, err := e.s.UserAction(act, toNeedsApproval(key, &calls))
		if err == nil {
			t.Fatal("UserAction succeeded through its failpoint")
		}
		if _, ok := store.IsRefusal(err); ok {
			t.Fatalf("storage error reported as a refusal: %v", err)
		}
		if diff := cmp.Diff(before, e.snap(key)); diff != "" {
			t.Errorf("a storage error left writes behind:\n%s", diff)
		}
		if _, ok := e.savedResponse(key, actionA); ok {
			t.Errorf("a storage error was recorded")
		}
		// The resend applies.
		resp, err := e.s.UserAction(act, toNeedsApproval(key, &calls))
		if err != nil || resp.Replayed || resp.Outcome != "applied" {
			t.Fatalf("resend: %+v, %v", resp, err)
		}
		if got := e.task(key).Status; got != words.StatusNeedsApproval {
			t.Errorf("resend not applied: %s", got)
		}
	})
	t.Run("failed COMMIT", func(t *testing.T) {
		// The action applied and its response was ready, but COMMIT failed:
		// the caller gets the storage error and no response at all.
		e := newEnv(t)
		key := e.newTask("")
		before := e.snap(key)
		if err := e.fp.Enable("store/commit", "1*return"); err != nil {
			t.Fatal(err)
		}
		calls := 0
		act := store.Action{PlanKey: key, ActionID: actionA, Kind: "approve", Request: 1}
		resp, err := e.s.UserAction(act, toNeedsApproval(key, &calls))
		if err == nil || !strings.Contains(err.Error(), "failpoint store/commit") {
			t.Fatalf("err %v, want the failed COMMIT", err)
		}
		if resp != (store.Response{}) {
			t.Errorf("a failed COMMIT answered %+v as well as its error", resp)
		}
		if diff := cmp.Diff(before, e.snap(key)); diff != "" {
			t.Errorf("a failed COMMIT left writes behind:\n%s", diff)
		}
		resp, err = e.s.UserAction(act, toNeedsApproval(key, &calls))
		if err != nil || resp.Replayed || resp.Outcome != "applied" || calls != 2 {
			t.Fatalf("resend: %+v, %v (fn ran %d times)", resp, err, calls)
		}
	})
	t.Run("plain error", func(t *testing.T) {
		e := newEnv(t)
		key := e.newTask("")
		before := e.snap(key)
		_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "approve"}, func(tx *store.Tx) (store.Response, error) {
			if err := tx.SetTaskStatus(key, words.StatusNeedsApproval); err != nil {
				return store.Response{}, err
			}
			return store.Response{}, errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("err %v, want %v", err, errBoom)
		}
		if diff := cmp.Diff(before, e.snap(key)); diff != "" {
			t.Errorf("an error left writes behind:\n%s", diff)
		}
	})
}

// TestUserActionRefusalRecordFails: when the transaction that records a
// guard's refusal fails, the caller gets that storage error, never the
// refusal, because nothing was recorded: the effect that rides on the
// refusal (a spent budget's move to needs human) did not happen either. The
// resend is not a replay: it runs the guards again and records the refusal
// and the move in one transaction; its replay then applies nothing.
//
// kills: mutant/refusal-returned-unrecorded
func TestUserActionRefusalRecordFails(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindReview)
	if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(3 * time.Hour) // the budget is spent; the task is idle and running
	req := e.admitReq(key, words.KindReview)
	calls := 0
	retry := func(tx *store.Tx) (store.Response, error) {
		calls++
		a, err := tx.Admit(req)
		if err != nil {
			return store.Response{}, err
		}
		return store.Response{Outcome: "admitted", AttemptID: a.ID}, nil
	}
	act := store.Action{PlanKey: key, ActionID: actionA, Kind: "retry", Request: req.ExpectedStateVersion}
	before := e.snap(key)

	// The action itself rolls back (refused); only the refusal's own
	// transaction reaches COMMIT, and it fails.
	if err := e.fp.Enable("store/commit", "1*return"); err != nil {
		t.Fatal(err)
	}
	resp, err := e.s.UserAction(act, retry)
	if r, ok := store.IsRefusal(err); ok {
		t.Fatalf("the caller got a refusal that was never recorded: %s (%s)", r.Code, r.Message)
	}
	if err == nil || !strings.Contains(err.Error(), "failpoint store/commit") {
		t.Fatalf("err %v, want the failed COMMIT", err)
	}
	if resp != (store.Response{}) {
		t.Errorf("an unrecorded refusal answered %+v", resp)
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("an unrecorded refusal changed the database (-before +after):\n%s", diff)
	}
	if _, ok := e.savedResponse(key, actionA); ok {
		t.Errorf("the refusal was recorded although its transaction failed")
	}

	// The resend runs the guards again: refused, recorded, and moved.
	resp, err = e.s.UserAction(act, retry)
	wantRefusal(t, err, store.CodeBudgetSpent)
	if calls != 2 || resp.Replayed || resp.Outcome != "refused" || resp.Code != store.CodeBudgetSpent {
		t.Fatalf("resend: %+v (fn ran %d times), want a fresh refusal", resp, calls)
	}
	if saved, ok := e.savedResponse(key, actionA); !ok || saved.Code != store.CodeBudgetSpent {
		t.Errorf("recorded response %+v (%t), want the budget refusal", saved, ok)
	}
	after := e.snap(key)
	if after.Task.Status != words.StatusNeedsHuman || after.Task.StateVersion != before.Task.StateVersion+1 {
		t.Errorf("after the recorded refusal the task is %s at state version %d, want needs human at %d",
			after.Task.Status, after.Task.StateVersion, before.Task.StateVersion+1)
	}

	// Its replay returns the saved refusal and applies nothing.
	resp, err = e.s.UserAction(act, retry)
	wantRefusal(t, err, store.CodeBudgetSpent)
	if calls != 2 || !resp.Replayed {
		t.Errorf("replay: %+v (fn ran %d times)", resp, calls)
	}
	if diff := cmp.Diff(after, e.snap(key)); diff != "" {
		t.Errorf("the replay changed the database (-before +after):\n%s", diff)
	}
}

// TestUserActionAfterCommit: effects registered with AfterCommit run only
// after COMMIT succeeded, and never on rollback, a refusal, a failed COMMIT
// or a replay.
func TestUserActionAfterCommit(t *testing.T) {
	t.Run("commit", func(t *testing.T) {
		e := newEnv(t)
		key := e.newTask("")
		ran := 0
		var statusSeen string
		resp, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "stop"}, func(tx *store.Tx) (store.Response, error) {
			if err := tx.SetTaskStatus(key, words.StatusNeedsApproval); err != nil {
				return store.Response{}, err
			}
			tx.AfterCommit(func() {
				ran++
				// Another connection sees only committed data.
				statusSeen = e.rawString(`SELECT status FROM tasks WHERE plan_key = ?`, key)
			})
			if ran != 0 {
				t.Errorf("AfterCommit ran inside the transaction")
			}
			return store.Response{}, nil
		})
		if err != nil || resp.Outcome != "applied" {
			t.Fatalf("UserAction: %+v, %v", resp, err)
		}
		if ran != 1 {
			t.Errorf("AfterCommit ran %d times, want 1", ran)
		}
		if statusSeen != string(words.StatusNeedsApproval) {
			t.Errorf("AfterCommit ran before the commit was visible (saw status %q)", statusSeen)
		}
		// A replay does not run the effect again.
		if _, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "stop"}, func(tx *store.Tx) (store.Response, error) {
			tx.AfterCommit(func() { ran++ })
			return store.Response{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if ran != 1 {
			t.Errorf("a replay ran AfterCommit (%d runs)", ran)
		}
	})

	dropped := []struct {
		name  string
		setup func(e *env)
		end   func(tx *store.Tx, key string) error
	}{
		{"refusal", nil, func(tx *store.Tx, key string) error { return tx.SetTaskStatus(key, words.StatusMerged) }},
		{"error", nil, func(tx *store.Tx, key string) error { return errBoom }},
		{"failed user-action write", func(e *env) {
			if err := e.fp.Enable("store/user-action", "1*return"); err != nil {
				e.t.Fatal(err)
			}
		}, func(tx *store.Tx, key string) error { return nil }},
		{"failed COMMIT", func(e *env) {
			if err := e.fp.Enable("store/commit", "1*return"); err != nil {
				e.t.Fatal(err)
			}
		}, func(tx *store.Tx, key string) error { return nil }},
	}
	for _, c := range dropped {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			if c.setup != nil {
				c.setup(e)
			}
			before := e.snap(key)
			ran := 0
			_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "stop"}, func(tx *store.Tx) (store.Response, error) {
				if err := tx.SetTaskStatus(key, words.StatusNeedsApproval); err != nil {
					return store.Response{}, err
				}
				tx.AfterCommit(func() { ran++ })
				return store.Response{}, c.end(tx, key)
			})
			if err == nil {
				t.Fatal("UserAction succeeded")
			}
			if ran != 0 {
				t.Errorf("AfterCommit ran %d times after a rollback", ran)
			}
			after := e.snap(key)
			if after.Task.Status != before.Task.Status || after.Task.StateVersion != before.Task.StateVersion {
				t.Errorf("rolled-back writes survived: %+v", after.Task)
			}
			_, recorded := e.savedResponse(key, actionA)
			if wantRecorded := c.name == "refusal"; recorded != wantRecorded {
				t.Errorf("user_actions row recorded: %t, want %t", recorded, wantRecorded)
			}
		})
	}
}

// TestAfterCommitOutsideUserAction: the same rule for a plain Update, and a
// nil Tx (no transaction) runs the effect at once.
func TestAfterCommitOutsideUserAction(t *testing.T) {
	e := newEnv(t)
	ran := 0
	var nilTx *store.Tx
	nilTx.AfterCommit(func() { ran++ })
	if ran != 1 {
		t.Errorf("AfterCommit on a nil Tx ran %d times, want 1 (at once)", ran)
	}
	ran = 0
	e.update(func(tx *store.Tx) error {
		tx.AfterCommit(func() { ran++ })
		tx.AfterCommit(func() { ran += 10 })
		return nil
	})
	if ran != 11 {
		t.Errorf("after commit: %d, want both effects once", ran)
	}
	ran = 0
	if err := e.fp.Enable("store/commit", "1*return"); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Update(func(tx *store.Tx) error { tx.AfterCommit(func() { ran++ }); return nil }); err == nil {
		t.Error("Update succeeded through a failed COMMIT")
	}
	if err := e.s.Update(func(tx *store.Tx) error { tx.AfterCommit(func() { ran++ }); return errBoom }); !errors.Is(err, errBoom) {
		t.Errorf("err %v", err)
	}
	if ran != 0 {
		t.Errorf("AfterCommit ran %d times after rollbacks", ran)
	}
}

func TestUserActionInvalidActionID(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	before := e.snap(key)
	for name, id := range map[string]string{
		"empty":          "",
		"10 KB":          strings.Repeat("a", 10<<10),
		"not a UUID":     "not-a-uuid",
		"uppercase UUID": strings.ToUpper(actionA),
		"version 1":      "5f0c6a3e-2b1d-1e8f-9a7c-0d1e2f3a4b5c",
		"bad variant":    "5f0c6a3e-2b1d-4e8f-ca7c-0d1e2f3a4b5c",
		"braced":         "{" + actionA + "}",
		"trailing space": actionA + " ",
		"path":           "../../" + actionA[6:],
	} {
		ran := false
		_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: id, Kind: "approve"}, func(tx *store.Tx) (store.Response, error) {
			ran = true
			return store.Response{}, tx.SetTaskStatus(key, words.StatusNeedsApproval)
		})
		r := wantRefusal(t, err, store.CodeBadInput)
		if len(r.Message) > 200 {
			t.Errorf("%s: refusal message is %d bytes; it must be bounded", name, len(r.Message))
		}
		if ran {
			t.Errorf("%s: the action ran", name)
		}
	}
	if n := e.actionRows(); n != 0 {
		t.Errorf("%d user_actions rows for invalid IDs", n)
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("invalid action IDs changed the database:\n%s", diff)
	}
}
