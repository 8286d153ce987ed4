package sim

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// settleCase is one point of the full product the oracle covers.
type settleCase struct {
	first     string // "", cancelled, shutdown, stale, time-limit
	stop      string // D's stop reason
	result    string // valid (exit 0, JSON), invalid (exit 0, not JSON), error (exit 1)
	current   bool
	cancelReq bool
	closed    bool
}

func (c settleCase) String() string {
	return fmt.Sprintf("first=%q stop=%q result=%s current=%v cancel_requested=%v closed=%v",
		c.first, c.stop, c.result, c.current, c.cancelReq, c.closed)
}

// want is what the oracle expects: the attempt's terminal state and
// diagnostic, and the task's status.
type want struct {
	state, diag, task string
}

// oracle is written from the contract's rule 2 ("The terminal state comes
// from the first reason") and the legal-transitions table, independently of
// the runner's decideTerminal: first reason first; shutdown yields to D's
// own timeout, output-limit or capture-failure; with no first reason a non-current
// context comes before every D stop reason; a failed row needs a current
// context (otherwise stale); completed needs the compare-and-swap (task
// running, no pending cancel), and the completion guard ends it cancelled
// when the task left running. Task: a closed status never changes; a pending
// cancel task closes it; otherwise the time limit sends it to needs human.
func oracle(c settleCase) want {
	const staleCause = "assignment other replaced unassigned"
	const recordedCause = "plan revision 2 replaced 1"
	dOwn := c.stop == "timeout" || c.stop == "output-limit" || c.stop == "capture-failure"
	dDiag := map[string]string{"timeout": "Timed out after 30 minutes", "output-limit": "D: output-limit", "capture-failure": "D: capture-failure"}
	var w want
	first := c.first
	if first == "" && c.cancelReq {
		// Cancel task records first reason cancelled in the same
		// transaction as cancel_requested; a pending cancel that another
		// writer left without one is read as that reason.
		first = "cancelled"
	}
	c.first = first
	switch {
	case c.first == "cancelled":
		w = want{state: "cancelled", diag: "Cancelled by the user"}
	case c.first == "shutdown" && dOwn && c.current:
		w = want{state: "failed", diag: dDiag[c.stop]}
	case c.first == "shutdown" && dOwn:
		w = want{state: "stale", diag: staleCause}
	case c.first == "shutdown":
		w = want{state: "cancelled", diag: "Stopped by shutdown"}
	case c.first == "stale":
		w = want{state: "stale", diag: recordedCause}
	case c.first == "time-limit":
		w = want{state: "cancelled", diag: "Task time limit reached"}
	case !c.current:
		w = want{state: "stale", diag: staleCause}
	case dOwn:
		w = want{state: "failed", diag: dDiag[c.stop]}
	case c.stop != "":
		w = want{state: "failed", diag: "D stopped the invocation: " + c.stop}
	case c.result == "error":
		w = want{state: "failed", diag: "exit code 1: provider error"}
	case c.result == "invalid":
		w = want{state: "failed", diag: "output did not pass validation: not json"}
	case c.closed:
		w = want{state: "cancelled", diag: "The task left the running state before the result was saved."}
	default:
		w = want{state: "completed", diag: ""}
	}
	switch {
	case c.closed:
		w.task = "merged"
	case c.cancelReq:
		w.task = "cancelled"
	case c.first == "time-limit":
		w.task = "needs human"
	default:
		w.task = "running"
	}
	return w
}

func allSettleCases() []settleCase {
	var out []settleCase
	for _, first := range []string{"", "cancelled", "shutdown", "stale", "time-limit"} {
		for _, stop := range []string{"", "cancelled", "shutdown", "timeout", "output-limit", "capture-failure"} {
			for _, result := range []string{"valid", "invalid", "error"} {
				for _, current := range []bool{true, false} {
					for _, cancelReq := range []bool{false, true} {
						for _, closed := range []bool{false, true} {
							out = append(out, settleCase{first, stop, result, current, cancelReq, closed})
						}
					}
				}
			}
		}
	}
	return out
}

// TestSettlementOracle drives the coordinator through every combination of
// first reason, D's stop reason, result validity, context currency, pending
// cancel task and closed task, on a real SQLite file, and compares the
// terminal row and the task's status with the oracle, and that every slot
// is freed afterwards.
//
// kills: mutant/no-first-reason-wins mutant/no-stale-precedence mutant/shutdown-beats-d-reason
// kills: mutant/error-ignores-context mutant/lose-memory-reason
// kills: mutant/time-limit-beats-cancel
func TestSettlementOracle(t *testing.T) {
	for _, m := range runOracle(t, allSettleCases()) {
		t.Error(m)
	}
	t.Logf("%d combinations checked", len(allSettleCases()))
}

// runOracle returns one line per mismatch.
func runOracle(t *testing.T, cases []settleCase) (mismatches []string) {
	w, err := NewWorld(t.TempDir(), Config{Seed: 7, Slots: len(cases) + 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	raw, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i, c := range cases {
		id := store.Identity{RepositoryID: "r", TaskID: fmt.Sprintf("t%d", i), PlanID: "p"}
		key := id.Key()
		if err := w.Store.Update(func(tx *store.Tx) error {
			return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}})
		}); err != nil {
			t.Fatal(err)
		}
		attemptID, err := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: key, Kind: words.KindReview})
		if err != nil {
			t.Fatalf("%v: admit: %v", c, err)
		}
		// Durable facts the coordinator has not been told of, as another
		// transaction (or an earlier process) would leave them.
		err = w.Store.Update(func(tx *store.Tx) error {
			if c.first != "" {
				cause := ""
				if c.first == "stale" {
					cause = "plan revision 2 replaced 1"
				}
				if err := tx.RecordFirstReason(attemptID, words.Reason(c.first), cause); err != nil {
					return err
				}
			}
			if !c.current {
				if err := tx.Reassign(key, "other"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%v: setup: %v", c, err)
		}
		if c.cancelReq || c.closed {
			if err := rawExec(raw, key, c); err != nil {
				t.Fatalf("%v: raw: %v", c, err)
			}
		}
		s := dadapter.Settlement{StopReason: words.StopReason(c.stop)}
		switch c.result {
		case "valid":
			s.Output = []byte(`{"ok":true}`)
		case "invalid":
			s.Output = []byte("not json")
		case "error":
			s.ExitCode, s.Output = 1, []byte("provider error")
		}
		if c.stop != "" {
			s.Diagnostic = "D: " + c.stop
		}
		if err := w.D.Handle(attemptID).Settle(s); err != nil {
			t.Fatal(err)
		}
		w.Loop.Drain()
		a, err := w.Store.Attempt(attemptID)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := w.Store.Task(key)
		got := want{state: string(a.State), diag: a.Diagnostic, task: string(task.Status)}
		if exp := oracle(c); got != exp {
			mismatches = append(mismatches, fmt.Sprintf("%v:\n  got  %+v\n  want %+v", c, got, exp))
		}
		var closedEvents int
		w.Store.View(func(tx *store.Tx) (err error) {
			closedEvents, err = tx.EventCount(key, words.EventTaskClosed)
			return err
		})
		if wantEvents := map[bool]int{true: 1, false: 0}[c.cancelReq && !c.closed]; closedEvents != wantEvents {
			mismatches = append(mismatches, fmt.Sprintf("%v: %d task-closed events, want %d", c, closedEvents, wantEvents))
		}
	}
	if w.Runner.SlotsUsed() != 0 {
		mismatches = append(mismatches, fmt.Sprintf("%d slots still held", w.Runner.SlotsUsed()))
	}
	return mismatches
}
