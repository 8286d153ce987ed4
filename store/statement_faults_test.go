package store_test

// The statement-fault sweep: every statement of every Store operation is
// made to fail in turn (the store/statement failpoint), and the operation
// must report that storage error, never success and never a refusal, and
// leave the database exactly as it was. A refusal is a definite outcome a
// user action records; a storage error records nothing: "Only outcomes that
// applied nothing for a passing reason are not recorded, so the UI may
// resend them: […] and a storage error." (the contract's "Feedback-event
// contract (for lane J)", actionId).

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

// faultCase is one operation of the sweep's workload.
type faultCase struct {
	name string
	// covers names the exported methods (as "Tx.Approve", "Store.Admit")
	// whose statements the operation runs: TestEveryStatementMethodIsSwept
	// holds every exported method of Store and Tx to some case's covers or
	// to the short list of those that run no statement of their own.
	covers []string
	// setup builds the operation's fixture with no fault armed and
	// returns the operation. It runs once per fault mode, on a fresh
	// store; the operation then runs once per statement.
	setup func(e *env) func() error
	// fixture, set instead of setup, builds the store too: for a fixture
	// helper that opens its own (amendedWithLaterItem and the like).
	fixture func(t *testing.T) (*env, func() error)
	// want is the operation's outcome with no fault: "" for success, or
	// the refusal code it answers (the fixture must reach the path the
	// case is about).
	want string
	// swallowed, when set, is the one refusal a faulted run may still
	// answer, with the database unchanged, and why the contract allows it.
	swallowed, because string
}

// Fault modes: the statement fails at once, or (queries) after its first row.
var faultModes = []struct{ name, value string }{{"at-once", ""}, {"after-first-row", `("step")`}}

// TestEveryStatementErrorPropagates is the statement-fault sweep. For each
// operation and each k = 1, 2, … it fails the k-th statement the operation
// runs, until the operation runs through without reaching a k-th one; that
// last, unfaulted run must give the case's expected outcome.
//
// kills: mutant/retry-check-ignores-read-error mutant/action-check-ignores-read-error
// kills: mutant/reject-ignores-copy-error mutant/cancel-task-ignores-reason-error
// kills: mutant/approval-gate-ignores-rows-error mutant/import-storage-error-as-refusal
func TestEveryStatementErrorPropagates(t *testing.T) {
	for _, c := range faultCases() {
		for _, mode := range faultModes {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				sweepStatements(t, c, mode.value)
			})
		}
	}
}

func sweepStatements(t *testing.T, c faultCase, value string) {
	var e *env
	var op func() error
	if c.fixture != nil {
		e, op = c.fixture(t)
	} else {
		e = newEnv(t)
		op = c.setup(e)
	}
	before := e.dump()
	for k := 1; ; k++ {
		terms := "1*return" + value
		if k > 1 {
			terms = strconv.Itoa(k-1) + "*off->" + terms
		}
		if err := e.fp.Enable("store/statement", terms); err != nil {
			t.Fatal(err)
		}
		err := op()
		reached := e.faultSpent(k)
		e.fp.Disable("store/statement")
		if !reached {
			// The operation ran fewer than k statements: this run had no
			// fault, and its outcome must be the case's.
			if k == 1 {
				t.Fatalf("the operation ran no statement")
			}
			if got := store.RefusalCode(err); got != c.want || (err != nil && got == "") {
				t.Fatalf("with no fault (%d statements): %v, want %s", k-1, err, outcome(c.want))
			}
			t.Logf("%d statements, each failed in turn", k-1)
			return
		}
		after := e.dump()
		diff := cmp.Diff(before, after)
		switch code := store.RefusalCode(err); {
		case code != "" && code == c.swallowed && diff == "":
			// The documented exception: see the case's because.
		case err == nil:
			t.Errorf("statement %d failed, yet the operation reported success", k)
		case code != "":
			t.Errorf("statement %d's storage error came back as the refusal %q (%v): a refusal is a definite outcome, a storage error is not", k, code, err)
		case !strings.Contains(err.Error(), "failpoint store/statement"):
			t.Errorf("statement %d failed, and the operation returned another error: %v", k, err)
		}
		if diff != "" {
			t.Fatalf("statement %d failed (%v), and the database changed:\n%s", k, err, diff)
		}
		if t.Failed() {
			return
		}
	}
}

func outcome(code string) string {
	if code == "" {
		return "success"
	}
	return "the refusal " + code
}

// faultSpent reports whether the fault armed for the k-th statement fired.
// The terms are (k-1)*off->1*return: once the k-th statement ran, the chain
// is spent and no later evaluation fires; if it did not run, at most k-1
// passed-over evaluations remain, so one of the next k fires.
func (e *env) faultSpent(k int) bool {
	for i := 0; i < k; i++ {
		if e.fp.Fire("store/statement") {
			return false
		}
	}
	return true
}

// dump is every row of every table and the schema version, read on a
// connection of its own.
func (e *env) dump() []string {
	e.t.Helper()
	db := e.rawDB()
	var out []string
	tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		names = append(names, n)
	}
	tables.Close()
	for _, n := range names {
		rows, err := db.Query(`SELECT * FROM "` + n + `" ORDER BY rowid`)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			line := n
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				line += fmt.Sprintf(" %s=%v", cols[i], v)
			}
			out = append(out, line)
		}
		if err := rows.Err(); err != nil {
			e.t.Fatal(err)
		}
		rows.Close()
	}
	out = append(out, fmt.Sprintf("user_version=%d", e.rawInt(`PRAGMA user_version`)))
	return out
}

// Fixture helpers.

var faultIDs = ids.NewSeeded(7)

// inTx runs fn in a write transaction.
func (e *env) inTx(fn func(tx *store.Tx) error) func() error {
	return func() error { return e.s.Update(fn) }
}

// inView runs fn in a read transaction.
func (e *env) inView(fn func(tx *store.Tx) error) func() error {
	return func() error { return e.s.View(fn) }
}

// userAction runs fn as one user action (its replay check and its saved
// response included) with a fixed action ID.
func (e *env) userAction(key, kind string, fn func(tx *store.Tx, actionID string) error) func() error {
	actionID := faultIDs.UUID()
	return func() error {
		_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionID, Kind: kind, Request: kind},
			func(tx *store.Tx) (store.Response, error) { return store.Response{}, fn(tx, actionID) })
		return err
	}
}

// inReview is a task in review with a note, a choice and a finding: the
// review readers and actions meet a row of each.
func (e *env) inReview() string {
	e.t.Helper()
	key := e.newTask(words.StatusInReview)
	one := 1
	e.update(func(tx *store.Tx) error {
		if _, err := tx.ChangeNote(key, faultIDs.UUID(), one, "first note"); err != nil {
			return err
		}
		if err := tx.AssignSegment(key, faultIDs.UUID(), "segment-1", one); err != nil {
			return err
		}
		return tx.AddFinding(key, "finding-1", "an open problem")
	})
	return key
}

// failedReview is a running task whose last attempt (a review) failed.
func (e *env) failedReview() (string, store.Attempt) {
	e.t.Helper()
	key := e.newTask("")
	a := e.running(key, words.KindReview)
	if err := e.finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "boom"}); err != nil {
		e.t.Fatal(err)
	}
	return key, e.attempt(a.ID)
}

// interrupted is a task whose last attempt was cancelled by shutdown: the
// requeue list holds it.
func (e *env) interrupted() string {
	e.t.Helper()
	key := e.newTask("")
	a := e.running(key, words.KindReview)
	e.update(func(tx *store.Tx) error {
		if err := tx.RecordFirstReason(a.ID, words.ReasonShutdown, ""); err != nil {
			return err
		}
		return tx.Finish(a.ID, store.Terminal{State: words.Cancelled, FirstReason: words.ReasonShutdown})
	})
	return key
}

// midRun is a queued task whose plan run completed item 1, both items
// approved: the next item is 2.
func (e *env) midRun() string {
	e.t.Helper()
	key := e.newTask(words.StatusInReview)
	e.approveAll(key)
	if _, err := e.startPlan(key); err != nil {
		e.t.Fatal(err)
	}
	e.executeItem(key, 1, words.Completed)
	return key
}

func faultCases() []faultCase {
	one, two := 1, 2
	return append([]faultCase{
		// Admission and its checks.
		{name: "admit", covers: []string{"Store.Admit", "Tx.Admit"}, setup: func(e *env) func() error {
			key := e.newTask("")
			e.admit(key, words.KindReview) // a previous attempt and a started budget
			a := e.attempt(e.task(key).CurrentAttemptID)
			e.update(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
			if err := e.finish(a.ID, store.Terminal{State: words.Failed}); err != nil {
				e.t.Fatal(err)
			}
			r := e.admitReq(key, words.KindReview)
			r.Captured = &a.Context
			r.AllocationID = faultIDs.UUID()
			return func() error { _, err := e.s.Admit(r); return err }
		}},
		{name: "admit refused, budget spent", covers: []string{"Store.Admit", "Store.AdmissionRefused"}, want: store.CodeBudgetSpent,
			swallowed: store.CodeBudgetSpent,
			because: `the refusal comes from the admission's own transaction, which nothing failed; the move to needs human ` +
				`is Store.AdmissionRefused's separate transaction, which has no caller to report to and leaves the database as it ` +
				`was when it fails: the next admission meets the same spent budget and moves the task then ("Only then is the ` +
				`first item admitted: admission refuses a spent task budget, which also moves an idle running or queued task to needs human")`,
			setup: func(e *env) func() error {
				key, _ := e.failedReview()
				e.clock.Advance(3 * time.Hour)
				r := e.admitReq(key, words.KindReview)
				return func() error { _, err := e.s.Admit(r); return err }
			}},
		{name: "user action refused, budget spent", covers: []string{"Store.UserAction"}, want: store.CodeBudgetSpent, setup: func(e *env) func() error {
			key, _ := e.failedReview()
			e.clock.Advance(3 * time.Hour)
			r := e.admitReq(key, words.KindReview)
			return e.userAction(key, "retry", func(tx *store.Tx, _ string) error { _, err := tx.Admit(r); return err })
		}},
		{name: "user action replayed", covers: []string{"Store.UserAction"}, setup: func(e *env) func() error {
			key := e.newTask("")
			op := e.userAction(key, "note", func(tx *store.Tx, actionID string) error {
				_, err := tx.ChangeNote(key, actionID, 1, "a note")
				return err
			})
			if err := op(); err != nil {
				e.t.Fatal(err)
			}
			return op
		}},
		{name: "check retry", covers: []string{"Tx.CheckRetry"}, setup: func(e *env) func() error {
			key, a := e.failedReview()
			sv := e.task(key).StateVersion
			return e.inTx(func(tx *store.Tx) error { _, err := tx.CheckRetry(key, a.ID, sv); return err })
		}},
		{name: "check run again", covers: []string{"Tx.CheckRunAgain"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := e.running(key, words.KindReview)
			e.update(func(tx *store.Tx) error { return tx.Reassign(key, "someone-else") })
			if err := e.finish(a.ID, store.Terminal{State: words.Stale}); err != nil {
				e.t.Fatal(err)
			}
			sv := e.task(key).StateVersion
			return e.inTx(func(tx *store.Tx) error { _, err := tx.CheckRunAgain(key, a.ID, sv); return err })
		}},

		// Transitions and the attempt row's fields.
		{name: "mark running", covers: []string{"Tx.MarkRunning"}, setup: func(e *env) func() error {
			a := e.admit(e.newTask(""), words.KindReview)
			return e.inTx(func(tx *store.Tx) error { return tx.MarkRunning(a.ID) })
		}},
		{name: "record first reason", covers: []string{"Tx.RecordFirstReason"}, setup: func(e *env) func() error {
			a := e.running(e.newTask(""), words.KindReview)
			return e.inTx(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonStale, "plan moved") })
		}},
		{name: "finish, time limit", covers: []string{"Tx.Finish"}, setup: func(e *env) func() error {
			a := e.running(e.newTask(""), words.KindReview)
			e.update(func(tx *store.Tx) error { return tx.RecordFirstReason(a.ID, words.ReasonTimeLimit, "") })
			exit := 1
			return e.inTx(func(tx *store.Tx) error {
				return tx.Finish(a.ID, store.Terminal{State: words.Cancelled, FirstReason: words.ReasonTimeLimit, ExitCode: &exit,
					Diagnostic: "stopped", DiagnosticRef: a.ID + ".diff"})
			})
		}},
		{name: "finish with a pending cancel task", covers: []string{"Tx.Finish"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := e.running(key, words.KindReview)
			e.update(func(tx *store.Tx) error { _, _, err := tx.CancelTask(key, faultIDs.UUID(), true); return err })
			return e.inTx(func(tx *store.Tx) error {
				return tx.Finish(a.ID, store.Terminal{State: words.Cancelled, FirstReason: words.ReasonCancelled})
			})
		}},
		{name: "publish with a commit", covers: []string{"Tx.Publish"}, setup: func(e *env) func() error {
			a := e.running(e.newTask(""), words.KindExecute)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.Publish(a.ID, []byte(`{"ok":true}`), "c0ffee", 0); return err })
		}},
		{name: "publish with a safety finding", covers: []string{"Tx.Publish"}, setup: func(e *env) func() error {
			a := e.running(e.newTask(""), words.KindReview)
			e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "wrote outside its scope") })
			return e.inTx(func(tx *store.Tx) error { _, err := tx.Publish(a.ID, nil, "", 0); return err })
		}},
		{name: "publish, completion guard", covers: []string{"Tx.Publish"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := e.running(key, words.KindReview)
			e.rawExec(`UPDATE tasks SET status = 'queued' WHERE plan_key = ?`, key)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.Publish(a.ID, nil, "", 0); return err })
		}},
		{name: "publish, completion guard with a safety finding", covers: []string{"Tx.Publish"}, setup: func(e *env) func() error {
			key := e.newTask("")
			a := e.running(key, words.KindReview)
			e.update(func(tx *store.Tx) error { return tx.RecordSafetyFinding(a.ID, "wrote outside its scope") })
			e.rawExec(`UPDATE tasks SET status = 'queued' WHERE plan_key = ?`, key)
			return e.inTx(func(tx *store.Tx) error { _, err := tx.Publish(a.ID, nil, "", 0); return err })
		}},
		{name: "attempt fields", covers: []string{"Tx.SetAllocation", "Tx.SetStorageBaseline", "Tx.MarkPreparationStarting", "Tx.ClearPreparationStarting", "Tx.SetPreparationGroup", "Tx.RecordSafetyFinding"}, setup: func(e *env) func() error {
			a := e.admit(e.newTask(""), words.KindReview)
			at := e.clock.Now()
			return e.inTx(func(tx *store.Tx) error {
				for _, f := range []func() error{
					func() error { return tx.SetAllocation(a.ID, faultIDs.UUID()) },
					func() error { return tx.SetStorageBaseline(a.ID, "baseline", "base") },
					func() error { return tx.MarkPreparationStarting(a.ID, at) },
					func() error { return tx.ClearPreparationStarting(a.ID) },
					func() error { return tx.SetPreparationGroup(a.ID, 4242, at, "identity") },
					func() error { return tx.RecordSafetyFinding(a.ID, "finding") },
				} {
					if err := f(); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		{name: "create task", covers: []string{"Tx.CreateTask"}, setup: func(e *env) func() error {
			id := store.Identity{RepositoryID: "repo", TaskID: "new", PlanID: "plan"}
			return e.inTx(func(tx *store.Tx) error {
				return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "snap", Items: []string{"a", "b"}})
			})
		}},
		{name: "set task status", covers: []string{"Tx.SetTaskStatus"}, setup: func(e *env) func() error {
			key := e.newTask("")
			return e.inTx(func(tx *store.Tx) error { return tx.SetTaskStatus(key, words.StatusNeedsApproval) })
		}},

		// What an attempt depends on.
		{name: "import revision", covers: []string{"Tx.ApplySuggestion"}, setup: func(e *env) func() error {
			key := e.newTask("")
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ApplySuggestion(key, 1, []string{"a", "b", "c"}); return err })
		}},
		{name: "import plan", covers: []string{"Tx.ImportPlan"}, setup: func(e *env) func() error {
			key := e.newTask("")
			items := planItems(e.t, "a", "b", "c")
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ImportPlan(key, 1, items); return err })
		}},
		{name: "snapshot, assignment, ledger", covers: []string{"Tx.ChangeSnapshot", "Tx.Reassign", "Tx.RecordHistory"}, setup: func(e *env) func() error {
			key := e.newTask("")
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.ChangeSnapshot(key, "snap-2"); err != nil {
					return err
				}
				if err := tx.Reassign(key, "someone"); err != nil {
					return err
				}
				return tx.RecordHistory(key, "", "abc123")
			})
		}},

		// Review actions, each inside a user action as the server runs them.
		{name: "reject with feedback", covers: []string{"Tx.RejectWithFeedback"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "reject", func(tx *store.Tx, actionID string) error {
				_, err := tx.RejectWithFeedback(key, actionID, 1, []store.NoteInput{{Item: &one, Text: "again"}, {Text: "whole plan"}})
				return err
			})
		}},
		{name: "change note", covers: []string{"Tx.ChangeNote"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "note", func(tx *store.Tx, actionID string) error {
				_, err := tx.ChangeNote(key, actionID, 2, "a note")
				return err
			})
		}},
		{name: "assign a segment again", covers: []string{"Tx.AssignSegment"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "assign", func(tx *store.Tx, actionID string) error {
				return tx.AssignSegment(key, actionID, "segment-1", two)
			})
		}},
		{name: "accept a segment", covers: []string{"Tx.AcceptSegment"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "accept", func(tx *store.Tx, actionID string) error {
				return tx.AcceptSegment(key, actionID, "segment-2")
			})
		}},
		{name: "accept a finding", covers: []string{"Tx.AcceptFinding"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "finding", func(tx *store.Tx, actionID string) error {
				return tx.AcceptFinding(key, actionID, "finding-1")
			})
		}},
		{name: "accept an unseen finding", covers: []string{"Tx.AcceptFinding"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "finding", func(tx *store.Tx, actionID string) error {
				return tx.AcceptFinding(key, actionID, "finding-2")
			})
		}},
		{name: "guidance", covers: []string{"Tx.NeedsHumanGuidance"}, setup: func(e *env) func() error {
			key := e.newTask(words.StatusNeedsHuman)
			return e.userAction(key, "guidance", func(tx *store.Tx, actionID string) error {
				_, err := tx.NeedsHumanGuidance(key, actionID, "try the other file")
				return err
			})
		}},
		{name: "check guidance", covers: []string{"Tx.CheckGuidance"}, setup: func(e *env) func() error {
			key := e.newTask(words.StatusNeedsHuman)
			return e.inTx(func(tx *store.Tx) error { return tx.CheckGuidance(key) })
		}},
		{name: "check cancel task", covers: []string{"Tx.CheckCancelTask"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.inTx(func(tx *store.Tx) error { return tx.CheckCancelTask(key) })
		}},
		{name: "check merge", covers: []string{"Tx.CheckMerge"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.approveAll(key)
			return e.inTx(func(tx *store.Tx) error { return tx.CheckMerge(key) })
		}},
		{name: "add finding", covers: []string{"Tx.AddFinding"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.inTx(func(tx *store.Tx) error { return tx.AddFinding(key, "finding-2", "another problem") })
		}},
		{name: "cancel task, idle", covers: []string{"Tx.CancelTask"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.userAction(key, "cancel-task", func(tx *store.Tx, actionID string) error {
				_, _, err := tx.CancelTask(key, actionID, true)
				return err
			})
		}},
		{name: "cancel task, attempt running", covers: []string{"Tx.CancelTask"}, setup: func(e *env) func() error {
			key := e.newTask("")
			e.running(key, words.KindReview)
			return e.userAction(key, "cancel-task", func(tx *store.Tx, actionID string) error {
				_, _, err := tx.CancelTask(key, actionID, true)
				return err
			})
		}},
		{name: "clear a diagnostic ref", covers: []string{"Tx.DiagnosticRefs", "Tx.ClearDiagnosticRef"}, setup: func(e *env) func() error {
			a := e.running(e.newTask(""), words.KindExecute)
			if err := e.finish(a.ID, store.Terminal{State: words.Failed, Diagnostic: "boom", DiagnosticRef: a.ID + ".diff"}); err != nil {
				e.t.Fatal(err)
			}
			return e.inTx(func(tx *store.Tx) error {
				refs, err := tx.DiagnosticRefs()
				if err != nil {
					return err
				}
				return tx.ClearDiagnosticRef(refs[a.ID+".diff"])
			})
		}},

		// Merges and rebases.
		{name: "merge attempt", covers: []string{"Tx.BeginMergeAttempt", "Tx.SetMergeState", "Tx.FinishMergeMerged"}, setup: func(e *env) func() error {
			key := e.inReview()
			id := faultIDs.UUID()
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.BeginMergeAttempt(key, id); err != nil {
					return err
				}
				if err := tx.SetMergeState(id, store.MergeQueued); err != nil {
					return err
				}
				return tx.FinishMergeMerged(id)
			})
		}},
		{name: "merge failed", covers: []string{"Tx.SetMergeState"}, setup: func(e *env) func() error {
			key := e.inReview()
			id := faultIDs.UUID()
			e.update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, id) })
			return e.inTx(func(tx *store.Tx) error { return tx.SetMergeState(id, store.MergeFailed) })
		}},
		{name: "reconcile merged", covers: []string{"Tx.ReconcileMerged"}, setup: func(e *env) func() error {
			for i := 0; i < 2; i++ {
				key := e.inReview()
				id := faultIDs.UUID()
				e.update(func(tx *store.Tx) error { return tx.BeginMergeAttempt(key, id) })
				e.rawExec(`UPDATE merge_attempts SET state = 'merged' WHERE id = ?`, id)
			}
			return e.inTx(func(tx *store.Tx) error { _, err := tx.ReconcileMerged(); return err })
		}},
		{name: "rebase marker", covers: []string{"Tx.SetRebaseInProgress", "Tx.RebasesInProgress", "Tx.AbortRebase"}, setup: func(e *env) func() error {
			key := e.newTask("")
			other := e.newTask("")
			id := faultIDs.UUID()
			e.update(func(tx *store.Tx) error { return tx.SetRebaseInProgress(other, faultIDs.UUID()) })
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.SetRebaseInProgress(key, id); err != nil {
					return err
				}
				if _, err := tx.RebasesInProgress(); err != nil {
					return err
				}
				_, err := tx.AbortRebase(key, id)
				return err
			})
		}},

		// Plan runs.
		{name: "approve", covers: []string{"Tx.Approve"}, setup: func(e *env) func() error {
			key := e.inReview()
			return e.inTx(func(tx *store.Tx) error { _, err := tx.Approve(key, 1); return err })
		}},
		{name: "start", covers: []string{"Tx.CanStart", "Tx.StartPlan"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.approveAll(key)
			sv, rv := e.task(key).StateVersion, e.reviewVersion(key)
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.CanStart(key); err != nil {
					return err
				}
				_, err := tx.StartPlan(key, sv, rv)
				return err
			})
		}},
		{name: "resume", covers: []string{"Tx.CanResume", "Tx.ResumePlan"}, setup: func(e *env) func() error {
			key := e.midRun()
			sv, rv := e.task(key).StateVersion, e.reviewVersion(key)
			return e.inTx(func(tx *store.Tx) error {
				if err := tx.CanResume(key); err != nil {
					return err
				}
				_, err := tx.ResumePlan(key, sv, rv)
				return err
			})
		}},
		{name: "next plan item", covers: []string{"Tx.NextPlanItem"}, setup: func(e *env) func() error {
			key := e.midRun()
			rv := e.reviewVersion(key)
			return e.inTx(func(tx *store.Tx) error { _, _, err := tx.NextPlanItem(key, rv); return err })
		}},
		{name: "plan run finished", covers: []string{"Tx.NextPlanItem"}, setup: func(e *env) func() error {
			key := e.midRun()
			e.executeItem(key, 2, words.Completed)
			rv := e.reviewVersion(key)
			return e.inTx(func(tx *store.Tx) error { _, _, err := tx.NextPlanItem(key, rv); return err })
		}},

		// Recovery and the owner token.
		{name: "recovery reads and requeue claim", covers: []string{"Tx.ActiveAttempts", "Tx.AllAttempts", "Tx.StartingPreparations", "Tx.PreparationGroups", "Tx.RequeueCandidates", "Tx.ClaimRequeue"}, setup: func(e *env) func() error {
			e.interrupted()
			e.interrupted()
			a := e.running(e.newTask(""), words.KindReview)
			e.update(func(tx *store.Tx) error { return tx.MarkPreparationStarting(a.ID, e.clock.Now()) })
			return e.inTx(func(tx *store.Tx) error {
				for _, read := range []func() ([]store.Attempt, error){tx.ActiveAttempts, tx.AllAttempts, tx.StartingPreparations, tx.PreparationGroups} {
					if _, err := read(); err != nil {
						return err
					}
				}
				keys, err := tx.RequeueCandidates()
				if err != nil {
					return err
				}
				for _, k := range keys {
					if err := tx.ClaimRequeue(k); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		ownerTokenCase("RunnerOwnerToken", (*store.Tx).RunnerOwnerToken),

		// Readers.
		{name: "review readers", covers: []string{"Tx.Plan", "Tx.PlanItems", "Tx.Notes", "Tx.Choices", "Tx.Findings", "Tx.History", "Tx.EventCount", "Tx.UserActionCount"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.update(func(tx *store.Tx) error { return tx.RecordHistory(key, "", "abc123") })
			return e.inView(func(tx *store.Tx) error {
				for _, read := range []func() error{
					func() error { _, err := tx.Plan(key); return err },
					func() error { _, err := tx.PlanItems(key, 1); return err },
					func() error { _, err := tx.Notes(key); return err },
					func() error { _, err := tx.Choices(key); return err },
					func() error { _, err := tx.Findings(key); return err },
					func() error { _, err := tx.History(key); return err },
					func() error { _, err := tx.EventCount(key, words.EventChangeRequest); return err },
					func() error { _, err := tx.UserActionCount(key); return err },
				} {
					if err := read(); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		{name: "attempt readers", covers: []string{"Store.Task", "Store.Attempt", "Store.Attempts", "Store.PresentContext"}, setup: func(e *env) func() error {
			key, a := e.failedReview()
			return func() error {
				for _, read := range []func() error{
					func() error { _, err := e.s.Task(key); return err },
					func() error { _, err := e.s.Attempt(a.ID); return err },
					func() error { _, err := e.s.Attempts(key); return err },
					func() error { _, err := e.s.PresentContext(key); return err },
				} {
					if err := read(); err != nil {
						return err
					}
				}
				return nil
			}
		}},
		{name: "feedback events", covers: []string{"Store.FeedbackEvents"}, setup: func(e *env) func() error {
			key := e.inReview()
			e.update(func(tx *store.Tx) error { _, _, err := tx.CancelTask(key, faultIDs.UUID(), true); return err })
			parts := strings.Split(key, "/")
			id := store.Identity{RepositoryID: parts[0], TaskID: parts[1], PlanID: parts[2]}
			return func() error { _, err := e.s.FeedbackEvents(id); return err }
		}},
	}, moreFaultCases()...)
}
