package store_test

// Store guards the mutation sweep (issue 7, item 1) found unguarded by any
// test: the scope of the rebase marker's compare-and-swap, the requeue
// claim's compare-and-swap, the identity check, the frozen terminal row, and
// the exact boundaries of the bounds the Store applies (review keys,
// diagnostics, saved responses, a corrupt owner token's quote).

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// TestAbortRebaseScopedToItsTask: clearing one task's rebase marker by
// compare-and-swap on its attemptId leaves every other task's marker alone,
// even one that names the same attempt ID ("every Store call is scoped by
// that identity", "HTTP and UI contract").
//
// kills: mutant/rebase-abort-unscoped
func TestAbortRebaseScopedToItsTask(t *testing.T) {
	e := newEnv(t)
	k1, k2 := e.newTask(words.StatusQueued), e.newTask(words.StatusQueued)
	a := mergeIDs.UUID()
	for _, k := range []string{k1, k2} {
		e.update(func(tx *store.Tx) error { return tx.SetRebaseInProgress(k, a) })
	}
	other := e.snap(k2)
	var ok bool
	e.update(func(tx *store.Tx) (err error) { ok, err = tx.AbortRebase(k1, a); return err })
	if !ok || e.task(k1).RebaseInProgress != "" {
		t.Fatalf("the marker's own abort did not clear it (cleared %v)", ok)
	}
	if diff := cmp.Diff(other, e.snap(k2)); diff != "" {
		t.Errorf("aborting %s's rebase changed %s (-before +after):\n%s", k1, k2, diff)
	}
	var list []store.Rebase
	e.update(func(tx *store.Tx) (err error) { list, err = tx.RebasesInProgress(); return err })
	if len(list) != 1 || list[0].PlanKey != k2 || list[0].AttemptID != a {
		t.Fatalf("rebases after the abort = %+v, want only %s's", list, k2)
	}
}

// TestClaimRequeueOnce: the requeue claim is a compare-and-swap from false
// to true. A claim of a task already claimed changes nothing, so it does not
// move the state version either ("It goes up by one on every durable change
// to the task or its attempts", "Terms used").
//
// kills: mutant/requeue-claim-not-swapped
func TestClaimRequeueOnce(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	sv := e.task(key).StateVersion
	e.update(func(tx *store.Tx) error { return tx.ClaimRequeue(key) })
	if got := e.task(key); !got.RequeuePending || got.StateVersion != sv+1 {
		t.Fatalf("first claim: requeue pending %v, state version %d → %d; want true and +1", got.RequeuePending, sv, got.StateVersion)
	}
	before := e.snap(key)
	e.update(func(tx *store.Tx) error { return tx.ClaimRequeue(key) })
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("a second claim of a claimed task changed it (-before +after):\n%s", diff)
	}
}

// TestCreateTaskRefusesUnsafeIdentity: every part of a PlanIdentity is a
// safe ID. A part with a slash would make two identities share one plan key
// ("A task is identified by its full PlanIdentity … stored as its
// identityKey (the plan key)", "Terms used"), and "." or ".." is a path, not an
// ID. Each is refused as bad input and nothing is written.
//
// kills: mutant/identity-unchecked
func TestCreateTaskRefusesUnsafeIdentity(t *testing.T) {
	e := newEnv(t)
	good := store.Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}
	for name, id := range map[string]store.Identity{
		"slash in repository": {RepositoryID: "a/b", TaskID: "task", PlanID: "plan"},
		"slash in task":       {RepositoryID: "repo", TaskID: "a/b", PlanID: "plan"},
		"dot task":            {RepositoryID: "repo", TaskID: ".", PlanID: "plan"},
		"dot-dot plan":        {RepositoryID: "repo", TaskID: "task", PlanID: ".."},
		"empty task":          {RepositoryID: "repo", TaskID: "", PlanID: "plan"},
		"too long":            {RepositoryID: "repo", TaskID: strings.Repeat("t", 129), PlanID: "plan"},
		"space":               {RepositoryID: "repo", TaskID: "a b", PlanID: "plan"},
	} {
		t.Run(name, func(t *testing.T) {
			err := e.s.Update(func(tx *store.Tx) error {
				return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"one"}})
			})
			wantRefusal(t, err, store.CodeBadInput)
			if n := e.rawInt(`SELECT (SELECT COUNT(*) FROM plans) + (SELECT COUNT(*) FROM tasks)`); n != 0 {
				t.Fatalf("a refused identity wrote %d plan and task rows", n)
			}
		})
	}
	// The longest safe part is accepted.
	good.TaskID = strings.Repeat("t", 128)
	e.update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: good, SnapshotID: "snap-1", Items: []string{"one"}})
	})
}

// TestTerminalRowFieldsFrozen: once an attempt is terminal its row never
// changes ("Terminal rows stay as history", "State holders and owners"; no
// transition leaves a terminal state): the preparation marks, the
// group, the allocation, the baseline and the safety finding are all
// refused, and the row and task stay as they were.
//
// kills: mutant/terminal-row-field-written
func TestTerminalRowFieldsFrozen(t *testing.T) {
	at := time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC)
	for name, write := range map[string]func(tx *store.Tx, id string) error{
		"preparation mark":  func(tx *store.Tx, id string) error { return tx.MarkPreparationStarting(id, at) },
		"preparation group": func(tx *store.Tx, id string) error { return tx.SetPreparationGroup(id, 4242, at, "identity") },
		"allocation":        func(tx *store.Tx, id string) error { return tx.SetAllocation(id, mergeIDs.UUID()) },
		"baseline":          func(tx *store.Tx, id string) error { return tx.SetStorageBaseline(id, "baseline", "base") },
		"safety finding":    func(tx *store.Tx, id string) error { return tx.RecordSafetyFinding(id, "agent committed") },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.running(key, words.KindExecute)
			if err := e.finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "boom"}); err != nil {
				t.Fatal(err)
			}
			before := e.snap(key)
			wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return write(tx, a.ID) }), store.CodeIllegal)
			if diff := cmp.Diff(before, e.snap(key)); diff != "" {
				t.Errorf("a write to a terminal row changed the database (-before +after):\n%s", diff)
			}
		})
	}
}

// TestDiagnosticBound: a diagnostic of exactly MaxDiagnostic bytes is saved
// whole; one byte more is cut to MaxDiagnostic bytes ending in "…".
//
// kills: mutant/diagnostic-bound-moved
func TestDiagnosticBound(t *testing.T) {
	for _, c := range []struct {
		name string
		diag string
		want string
	}{
		{"at the bound", strings.Repeat("d", store.MaxDiagnostic), strings.Repeat("d", store.MaxDiagnostic)},
		{"one byte over", strings.Repeat("d", store.MaxDiagnostic+1), strings.Repeat("d", store.MaxDiagnostic-len("…")) + "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			a := e.running(key, words.KindExecute)
			if err := e.finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: c.diag}); err != nil {
				t.Fatal(err)
			}
			got := e.attempt(a.ID).Diagnostic
			if got != c.want {
				t.Errorf("saved diagnostic of %d bytes (ends %q), want %d bytes (ends %q)",
					len(got), got[max(0, len(got)-8):], len(c.want), c.want[len(c.want)-8:])
			}
			if len(got) > store.MaxDiagnostic {
				t.Errorf("saved diagnostic is %d bytes, over the bound %d", len(got), store.MaxDiagnostic)
			}
		})
	}
}

// responseOfSize is a response whose JSON is exactly n bytes: its message
// mixes '<' (which encoding/json writes as the 6 bytes \u003c) with 'a', so
// that it stays within MaxDiagnostic bytes while its JSON reaches
// MaxResponse.
func responseOfSize(t *testing.T, n int) store.Response {
	t.Helper()
	empty, _ := json.Marshal(store.Response{Outcome: "applied", Message: "x"})
	target := n - (len(empty) - 1)               // bytes the message must take in JSON
	lt := (target - store.MaxDiagnostic + 4) / 5 // the fewest '<' that keep the message within MaxDiagnostic
	plain := target - 6*lt
	if lt < 0 || plain < 0 || lt+plain > store.MaxDiagnostic {
		t.Fatalf("no message of at most %d bytes has a %d-byte JSON response", store.MaxDiagnostic, n)
	}
	r := store.Response{Outcome: "applied", Message: strings.Repeat("<", lt) + strings.Repeat("a", plain)}
	if b, _ := json.Marshal(r); len(b) != n {
		t.Fatalf("response JSON is %d bytes, want %d", len(b), n)
	}
	return r
}

// TestSavedResponseBound: a user action's saved response of exactly
// MaxResponse bytes is kept whole, so its replay answers the same message
// ("A replayed actionId returns the saved outcome", "HTTP and UI contract"); only a
// larger one is replaced by the short notice.
//
// kills: mutant/response-bound-moved
func TestSavedResponseBound(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
		kept bool
	}{
		{"at the bound", store.MaxResponse, true},
		{"one byte over", store.MaxResponse + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			resp := responseOfSize(t, c.size)
			act := store.Action{PlanKey: key, ActionID: actionA, Kind: "note", Request: "x"}
			if _, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) { return resp, nil }); err != nil {
				t.Fatal(err)
			}
			again, err := e.s.UserAction(act, func(tx *store.Tx) (store.Response, error) {
				t.Fatal("a replay ran the action again")
				return store.Response{}, nil
			})
			if err != nil || !again.Replayed {
				t.Fatalf("replay: %+v, %v", again, err)
			}
			want := resp.Message
			if !c.kept {
				want = "(response too large to keep)"
			}
			if again.Message != want {
				t.Errorf("replayed message of %d bytes (%.20q…), want %d bytes (%.20q…)", len(again.Message), again.Message, len(want), want)
			}
		})
	}
}

// TestReviewKeyLength: a choice key or finding ID is 1 to MaxReviewKey
// characters, counted in characters, not bytes: exactly MaxReviewKey is
// accepted, one more is refused.
//
// kills: mutant/review-key-bound-moved
func TestReviewKeyLength(t *testing.T) {
	e := newEnv(t)
	key := e.newTask(words.StatusInReview)
	atBound := strings.Repeat("é", store.MaxReviewKey)
	over := atBound + "é"
	if utf8.RuneCountInString(atBound) != store.MaxReviewKey {
		t.Fatal("bad fixture")
	}
	for name, write := range map[string]func(tx *store.Tx, k string) error{
		"choice key": func(tx *store.Tx, k string) error { return tx.AcceptSegment(key, mergeIDs.UUID(), k) },
		"finding ID": func(tx *store.Tx, k string) error { return tx.AddFinding(key, k, "text") },
	} {
		t.Run(name, func(t *testing.T) {
			wantRefusal(t, e.s.Update(func(tx *store.Tx) error { return write(tx, over) }), store.CodeBadInput)
			if err := e.s.Update(func(tx *store.Tx) error { return write(tx, atBound) }); err != nil {
				t.Errorf("a %s of exactly %d characters: %v", name, store.MaxReviewKey, err)
			}
		})
	}
}

// TestRunnerOwnerTokenCorruptQuotedBounded: startup's error for a corrupt
// stored token quotes the value, cut after 64 bytes: a 64-byte value is
// quoted whole, a longer one is cut and marked with "…".
//
// kills: mutant/owner-token-quote-bound-moved
func TestRunnerOwnerTokenCorruptQuotedBounded(t *testing.T) {
	for _, c := range []struct {
		value, quoted string
	}{
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), strings.Repeat("a", 64) + "…"},
	} {
		t.Run(fmt.Sprint(len(c.value)), func(t *testing.T) {
			e := newEnv(t)
			dev, ino := ownerFileID(t, e.path)
			mustOwnerToken(t, e.s, dev, ino, nil)
			e.rawExec(`UPDATE app_settings SET value = ? WHERE key = 'runner_owner_token'`, c.value)
			_, err := ownerToken(t, e.s, dev, ino, noNewToken(t))
			if !errors.Is(err, store.ErrBadOwnerToken) {
				t.Fatalf("RunnerOwnerToken: %v; want ErrBadOwnerToken", err)
			}
			if want := fmt.Sprintf("%q", c.quoted); !strings.HasSuffix(err.Error(), ": "+want) {
				t.Errorf("error %q does not end by quoting %s", err, want)
			}
		})
	}
}

// TestCreateTaskRefusesAnUnknownStatus: a new task starts queued or in
// review; any other status (a typo, a status the contract does not have)
// is refused as bad input before anything is written, and the refusal
// names it.
func TestCreateTaskRefusesAnUnknownStatus(t *testing.T) {
	e := newEnv(t)
	id := store.Identity{RepositoryID: "repo", TaskID: "task", PlanID: "plan"}
	err := e.s.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap-1", Items: []string{"one"}, Status: "in-reveiw"})
	})
	if r := wantRefusal(t, err, store.CodeBadInput); !strings.Contains(r.Message, `"in-reveiw"`) {
		t.Fatalf("refusal %q does not name the status", r.Message)
	}
	if n := e.rawInt(`SELECT (SELECT COUNT(*) FROM plans) + (SELECT COUNT(*) FROM tasks)`); n != 0 {
		t.Fatalf("a refused status wrote %d plan and task rows", n)
	}
}
