package store_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// gateModel is a reference model of "Start and resume"'s approval gate:
// "Both require an approval for every item at the current plan revision.
// Before an item completes, those approvals must belong to the current
// snapshot. After a completed item, approvals survive only from the
// snapshots that the completed execution prefix actually used (or the
// current snapshot) ... approvals must be later than the latest
// applicable choice. The review UI marks any approval this execution gate
// rejects as stale", and of resume's "It starts at the first item with no
// completed execute attempt at the current revision".
type gateModel struct {
	revision     int
	items        int
	snapshot     string
	approvals    map[gateKey]int // (revision, item, snapshot) → review version
	latestChoice int
	completed    map[int]string // item → snapshot its completed execute attempt used, at the present revision
	started      bool           // an execute attempt at any revision
}

type gateKey struct {
	revision, item int
	snapshot       string
}

func (m *gateModel) approved(item int) bool {
	if m.approvals[gateKey{m.revision, item, m.snapshot}] > m.latestChoice {
		return true
	}
	used, done := m.completed[item]
	return done && m.approvals[gateKey{m.revision, item, used}] > m.latestChoice
}

func (m *gateModel) approvedItems() map[int]bool {
	out := map[int]bool{}
	for i := 1; i <= m.items; i++ {
		out[i] = m.approved(i)
	}
	return out
}

func (m *gateModel) stale() map[int]bool {
	out := map[int]bool{}
	for k := range m.approvals {
		if k.revision == m.revision && !m.approved(k.item) {
			out[k.item] = true
		}
	}
	return out
}

// resume is what ResumePlan answers: a refusal code, or the item it
// admits (0 with finished when every item has completed).
func (m *gateModel) resume() (code, message string, item int, finished bool) {
	if !m.started {
		return store.CodeIllegal, "start it instead", 0, false
	}
	for i := 1; i <= m.items; i++ {
		if !m.approved(i) {
			return store.CodeNotApproved, fmt.Sprintf("item %d of revision %d has no current approval", i, m.revision), 0, false
		}
	}
	for i := 1; i <= m.items; i++ {
		if _, done := m.completed[i]; !done {
			return "", "", i, false
		}
	}
	return "", "", 0, true
}

// TestApprovalGateAgainstAModel drives tasks through generated sequences
// of approvals, choices, notes, snapshot changes, executed items (none of
// them committing) and new revisions, and after every step compares the
// Store's ApprovedItems, StaleApprovals, resume and start with gateModel.
// The seed is fixed, so a failure names a sequence that replays.
func TestApprovalGateAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	e := newEnv(t)
	actions := ids.NewSeeded(41)
	for run := 0; run < 40; run++ {
		key := e.newTask("")
		m := &gateModel{revision: 1, items: 2, snapshot: "snap-1", approvals: map[gateKey]int{}, completed: map[int]string{}}
		var log []string
		for step := 0; step < 10; step++ {
			item := 1 + rng.IntN(m.items)
			switch op := rng.IntN(10); {
			case op < 3:
				log = append(log, fmt.Sprintf("approve %d", item))
				var v int
				e.update(func(tx *store.Tx) (err error) { v, err = tx.Approve(key, item); return err })
				m.approvals[gateKey{m.revision, item, m.snapshot}] = v
			case op == 3:
				log = append(log, "choice")
				e.update(func(tx *store.Tx) error {
					return tx.AcceptSegment(key, actions.UUID(), fmt.Sprintf("seg-%d", rng.IntN(2)))
				})
				m.latestChoice = e.reviewVersion(key)
			case op == 4:
				log = append(log, "note")
				e.update(func(tx *store.Tx) error { _, err := tx.ChangeNote(key, actions.UUID(), 1, "careful"); return err })
			case op == 5:
				m.snapshot = fmt.Sprintf("snap-%d", run*100+step)
				log = append(log, "snapshot "+m.snapshot)
				e.update(func(tx *store.Tx) error { return tx.ChangeSnapshot(key, m.snapshot) })
			case op == 6 || op == 7:
				state := words.Completed
				if op == 7 {
					state = words.Failed
				}
				log = append(log, fmt.Sprintf("execute %d %s", item, state))
				e.executeItem(key, item, state)
				m.started = true
				if state == words.Completed {
					m.completed[item] = m.snapshot
				}
			default:
				n := 1 + rng.IntN(3)
				log = append(log, fmt.Sprintf("revision of %d items", n))
				titles := make([]string, n)
				for i := range titles {
					titles[i] = fmt.Sprintf("item %d", i+1)
				}
				e.update(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, m.revision, titles); return err })
				m.revision++
				m.items = n
				m.completed = map[int]string{}
			}
			where := fmt.Sprintf("run %d after %s", run, strings.Join(log, ", "))
			var approved, stale map[int]bool
			e.update(func(tx *store.Tx) (err error) {
				if approved, err = tx.ApprovedItems(key); err != nil {
					return err
				}
				stale, err = tx.StaleApprovals(key)
				return err
			})
			if want := m.approvedItems(); !maps.Equal(approved, want) {
				t.Fatalf("%s: approved %v, want %v", where, approved, want)
			}
			if want := m.stale(); !maps.Equal(stale, want) {
				t.Fatalf("%s: stale %v, want %v", where, stale, want)
			}
			code, message, next, finished := m.resume()
			ps, err := e.resumePlan(key)
			if code != "" {
				if r := wantRefusal(t, err, code); !strings.Contains(r.Message, message) {
					t.Fatalf("%s: resume refused %q, want %q", where, r.Message, message)
				}
			} else if err != nil || ps.Item != next || ps.Finished != finished {
				t.Fatalf("%s: resume = %+v, %v; want item %d finished %v", where, ps, err, next, finished)
			}
			var canStart error
			e.update(func(tx *store.Tx) error { canStart = tx.CanStart(key); return nil })
			switch {
			case m.started:
				// Executed items leave the task running: start is resume's.
				wantRefusal(t, canStart, store.CodeTaskInactive)
			case !m.approvedAll():
				wantRefusal(t, canStart, store.CodeNotApproved)
			case canStart != nil:
				t.Fatalf("%s: start refused: %v", where, canStart)
			}
		}
	}
}

func (m *gateModel) approvedAll() bool {
	for i := 1; i <= m.items; i++ {
		if !m.approved(i) {
			return false
		}
	}
	return true
}

// TestResumeFollowsTheLedger walks resume's head guard and its
// unreconciled-commit refusal over ledgers: "A completed prefix must
// still end at the task's current head; a moved head refuses instead of
// silently skipping earlier items", told by the ledger, not the SHA (a
// head moved and returned is still moved); "Commits from another revision
// without a scope checkpoint remain blocked because their prefix cannot
// yet be reconciled safely; earlier attempts that committed nothing do
// not block". Every task's items are approved at the present revision.
func TestResumeFollowsTheLedger(t *testing.T) {
	external := func(commit string) func(e *env, key string) {
		return func(e *env, key string) {
			e.update(func(tx *store.Tx) error { return tx.RecordHistory(key, "", commit) })
		}
	}
	item := func(n int, commit string) func(e *env, key string) {
		return func(e *env, key string) { e.commitItem(key, n, commit) }
	}
	empty := func(n int, state words.State) func(e *env, key string) {
		return func(e *env, key string) { e.executeItem(key, n, state) }
	}
	fix := func(commit string) func(e *env, key string) {
		return func(e *env, key string) {
			a := e.running(key, words.KindFix)
			if _, err := e.publish(a.ID, []byte(`{"summary":"fixed"}`), commit); err != nil {
				e.t.Fatalf("Publish(fix): %v", err)
			}
		}
	}
	revision := func(e *env, key string) {
		rev := e.plan(key).Revision
		e.update(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, rev, []string{"one", "two"}); return err })
	}
	cases := []struct {
		name  string
		steps []func(e *env, key string)
		code  string
		next  int
	}{
		{name: "item 1's commit is the head", steps: []func(*env, string){item(1, "c1")}, next: 2},
		{name: "items 1 and 2 committed", steps: []func(*env, string){item(1, "c1"), item(2, "c2")}},
		{name: "a commit from elsewhere before the prefix", steps: []func(*env, string){external("c0"), item(1, "c1")}, next: 2},
		{name: "a commit from elsewhere after item 1", steps: []func(*env, string){item(1, "c1"), external("c2")}, code: store.CodeHeadMoved},
		{name: "a head moved and returned", steps: []func(*env, string){item(1, "c1"), external("c2"), external("c1")}, code: store.CodeHeadMoved},
		{name: "a fix attempt's commit after item 1", steps: []func(*env, string){item(1, "c1"), fix("c2")}, code: store.CodeHeadMoved},
		{name: "item 2 committed, then a commit from elsewhere", steps: []func(*env, string){item(1, "c1"), item(2, "c2"), external("c3")}, code: store.CodeHeadMoved},
		{name: "item 1 committed nothing, a commit from elsewhere", steps: []func(*env, string){empty(1, words.Completed), external("c2")}, next: 2},
		{name: "no completed item, a commit from elsewhere", steps: []func(*env, string){empty(1, words.Failed), external("c2")}, next: 1},
		{name: "a commit of revision 1, resumed at revision 2", steps: []func(*env, string){item(1, "c1"), revision}, code: store.CodeUnreconciled},
		{name: "a commit from elsewhere and a failed item of revision 1, resumed at revision 2",
			steps: []func(*env, string){empty(1, words.Failed), external("c1"), revision}, next: 1},
		{name: "an item of revision 1 that committed nothing, resumed at revision 2",
			steps: []func(*env, string){empty(1, words.Completed), revision}, next: 1},
		{name: "revision 2's own commit after revision 1's", steps: []func(*env, string){item(1, "c1"), revision, item(1, "c2")}, code: store.CodeUnreconciled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.newTask("")
			for _, step := range c.steps {
				step(e, key)
			}
			e.approveAll(key)
			before := e.snap(key)
			ps, err := e.resumePlan(key)
			if c.code != "" {
				wantRefusal(t, err, c.code)
				var can error
				e.update(func(tx *store.Tx) error { can = tx.CanResume(key); return nil })
				wantRefusal(t, can, c.code)
			} else if err != nil || ps.Item != c.next || ps.Finished != (c.next == 0) {
				t.Fatalf("resume = %+v, %v; want item %d", ps, err, c.next)
			}
			if got := e.snap(key); !sameRun(got, before) {
				t.Fatalf("resume wrote: %+v, was %+v", got, before)
			}
		})
	}
}

// TestPlanRunStatusRules walks the statuses start, resume and the item
// executor's check accept: "start": "a task in review or queued, with no
// execute attempt at its current plan revision"; "resume continues a task
// that is running or queued and has started running"; the item executor
// stops a run whose task is no longer running or queued, and one whose
// items lost their approval; "When every item has completed, resume
// finishes the run". Start on a queued task writes nothing; only an in
// review task moves to queued.
func TestPlanRunStatusRules(t *testing.T) {
	e := newEnv(t)

	queued := e.newTask("")
	e.approveAll(queued)
	sv := e.task(queued).StateVersion
	if ps, err := e.startPlan(queued); err != nil || ps.Item != 1 || ps.ExpectedStateVersion != sv || e.task(queued).StateVersion != sv {
		t.Fatalf("start of a queued task = %+v, %v; state version %d, want item 1 at %d, nothing written", ps, err, e.task(queued).StateVersion, sv)
	}
	rv := e.reviewVersion(queued)
	err := e.s.Update(func(tx *store.Tx) error { _, err := tx.StartPlan(queued, sv-1, rv); return err })
	wantRefusal(t, err, store.CodeStaleVersion)

	// Every item completed: resume finishes, the executor's check finishes
	// the run; then the task is in review, which neither resume nor the
	// executor runs, and start refuses the revision that already ran.
	done := e.newTask("")
	e.approveAll(done)
	rv = e.reviewVersion(done)
	e.executeItem(done, 1, words.Completed)
	e.executeItem(done, 2, words.Completed)
	if ps, err := e.resumePlan(done); err != nil || !ps.Finished || ps.Item != 0 {
		t.Fatalf("resume with every item completed = %+v, %v; want finished", ps, err)
	}
	var finished bool
	e.update(func(tx *store.Tx) (err error) { _, finished, err = tx.NextPlanItem(done, rv); return err })
	if !finished || e.task(done).Status != words.StatusInReview {
		t.Fatalf("the executor's check with every item completed: finished %v, status %s", finished, e.task(done).Status)
	}
	_, err = e.resumePlan(done)
	wantRefusal(t, err, store.CodeTaskInactive)
	err = e.s.Update(func(tx *store.Tx) error { _, _, err := tx.NextPlanItem(done, rv); return err })
	wantRefusal(t, err, store.CodeTaskInactive)
	before := e.snap(done)
	_, err = e.startPlan(done)
	if r := wantRefusal(t, err, store.CodeIllegal); !strings.Contains(r.Message, "has already started running") {
		t.Fatalf("start of a revision that ran: %q", r.Message)
	}
	if got := e.snap(done); !sameRun(got, before) {
		t.Fatalf("the refused start wrote: %+v, was %+v", got.Task, before.Task)
	}

	// A choice saved while the run is under way leaves item 2's approval
	// stale: the executor's check, at the review version the choice made,
	// refuses it rather than admitting item 2.
	mid := e.newTask("")
	e.approveAll(mid)
	e.executeItem(mid, 1, words.Completed)
	e.update(func(tx *store.Tx) error { return tx.AcceptSegment(mid, ids.NewSeeded(9).UUID(), "seg-1") })
	e.update(func(tx *store.Tx) error { _, err := tx.Approve(mid, 1); return err })
	rv = e.reviewVersion(mid)
	err = e.s.Update(func(tx *store.Tx) error { _, _, err := tx.NextPlanItem(mid, rv); return err })
	if r := wantRefusal(t, err, store.CodeNotApproved); r.Message != "item 2 of revision 1 has no current approval" {
		t.Fatalf("the executor's check: %q, want item 2 named", r.Message)
	}
	e.update(func(tx *store.Tx) error { _, err := tx.Approve(mid, 2); return err })
	var next store.PlanStart
	rv = e.reviewVersion(mid)
	e.update(func(tx *store.Tx) (err error) { next, finished, err = tx.NextPlanItem(mid, rv); return err })
	if finished || next.Item != 2 || next.ExpectedStateVersion != e.task(mid).StateVersion {
		t.Fatalf("the executor's check after reapproval = %+v finished %v, want item 2 at the task's state version", next, finished)
	}
}

// sameRun says a check that writes nothing left the task's status, state
// version, attempts and ledger as they were.
func sameRun(a, b snapshot) bool {
	return a.Task.Status == b.Task.Status && a.Task.StateVersion == b.Task.StateVersion &&
		len(a.Attempts) == len(b.Attempts) && slices.Equal(a.History, b.History)
}

// TestStartRefusesARevisionWithNoItems: start admits "the first item";
// a revision with no item has none, and start says so instead of
// admitting an item 0.
func TestStartRefusesARevisionWithNoItems(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.update(func(tx *store.Tx) error { _, err := tx.ImportRevision(key, 1, nil); return err })
	_, err := e.startPlan(key)
	if r := wantRefusal(t, err, store.CodeIllegal); r.Message != "revision 2 has no items" {
		t.Fatalf("start of an empty revision: %q", r.Message)
	}
}
