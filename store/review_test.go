package store

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// These tests run the review actions against real SQLite files. Each one
// checks what the caller sees and the durable rows.

var reviewNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func openReviewStore(t *testing.T, fp *failpoints.Set) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "codeboost.db"), Options{
		Now:        func() time.Time { return reviewNow },
		IDs:        ids.NewSeeded(1),
		Failpoints: fp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// actionIDs makes valid, repeatable action IDs for one test.
type actionIDs struct{ src *ids.Seeded }

func newActionIDs() actionIDs    { return actionIDs{ids.NewSeeded(42)} }
func (a actionIDs) next() string { return a.src.UUID() }

func mustCreate(t *testing.T, s *Store, id Identity, status words.TaskStatus, items ...string) string {
	t.Helper()
	if err := s.Update(func(tx *Tx) error {
		return tx.CreateTask(NewTask{Identity: id, SnapshotID: "snap-1", Items: items, Status: status})
	}); err != nil {
		t.Fatal(err)
	}
	return id.Key()
}

func mustUpdate(t *testing.T, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func wantRefusal(t *testing.T, err error, code string) *Refusal {
	t.Helper()
	r, ok := IsRefusal(err)
	if !ok {
		t.Fatalf("got %v, want a refusal %s", err, code)
	}
	if r.Code != code {
		t.Fatalf("refusal code %s (%s), want %s", r.Code, r.Message, code)
	}
	return r
}

func readTask(t *testing.T, s *Store, key string) Task {
	t.Helper()
	task, err := s.Task(key)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func readPlan(t *testing.T, s *Store, key string) (p Plan) {
	t.Helper()
	if err := s.View(func(tx *Tx) (err error) { p, err = tx.Plan(key); return err }); err != nil {
		t.Fatal(err)
	}
	return p
}

func readItems(t *testing.T, s *Store, key string, rev int) (items []PlanItem) {
	t.Helper()
	if err := s.View(func(tx *Tx) (err error) { items, err = tx.PlanItems(key, rev); return err }); err != nil {
		t.Fatal(err)
	}
	return items
}

func readNotes(t *testing.T, s *Store, key string) (notes []Note) {
	t.Helper()
	if err := s.View(func(tx *Tx) (err error) { notes, err = tx.Notes(key); return err }); err != nil {
		t.Fatal(err)
	}
	return notes
}

// rawEvents reads a plan key's events directly, without FeedbackEvents'
// task-closed gate.
func rawEvents(t *testing.T, s *Store, key string) (evs []Event) {
	t.Helper()
	if err := s.View(func(tx *Tx) (err error) {
		evs, err = tx.events(`SELECT id, plan_key, action_id, plan_revision, snapshot_id, item, kind, COALESCE(text, ''),
			source_ref, COALESCE(supersedes, 0), created_at FROM feedback_events WHERE plan_key = ? ORDER BY id`, key)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// rowCounts counts every row a review action may write, for "nothing
// written" checks.
type rowCounts struct {
	Plans, Items, Notes, Choices, Findings, Events, Actions, Tasks int
	StateVersions, Generations                                     int64
}

func countRows(t *testing.T, s *Store) (c rowCounts) {
	t.Helper()
	if err := s.View(func(tx *Tx) error {
		for _, q := range []struct {
			sql string
			dst *int
		}{
			{`SELECT COUNT(*) FROM plans`, &c.Plans},
			{`SELECT COUNT(*) FROM plan_items`, &c.Items},
			{`SELECT COUNT(*) FROM notes`, &c.Notes},
			{`SELECT COUNT(*) FROM choices`, &c.Choices},
			{`SELECT COUNT(*) FROM findings`, &c.Findings},
			{`SELECT COUNT(*) FROM feedback_events`, &c.Events},
			{`SELECT COUNT(*) FROM user_actions`, &c.Actions},
			{`SELECT COUNT(*) FROM tasks`, &c.Tasks},
		} {
			if err := tx.queryRow(q.sql).Scan(q.dst); err != nil {
				return err
			}
		}
		return tx.queryRow(`SELECT COALESCE(SUM(state_version), 0), COALESCE(SUM(context_generation), 0) FROM tasks`).
			Scan(&c.StateVersions, &c.Generations)
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

func intp(i int) *int { return &i }

// R048: reject with feedback creates the next revision, marks the affected
// items to run again and moves the task from in review to queued, with
// exactly one reject event and no task-closed event.
func TestRejectWithFeedbackR048(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one", "two", "three")
	before := readTask(t, s, key)

	reject := aid.next()
	notes := []NoteInput{{Item: intp(1), Text: "one is wrong"}, {Item: intp(3), Text: "three too"}, {Text: "overall: smaller diff"}}
	var rev int
	mustUpdate(t, s, func(tx *Tx) (err error) { rev, err = tx.RejectWithFeedback(key, reject, 1, notes); return err })

	if rev != 2 {
		t.Fatalf("new revision %d, want 2", rev)
	}
	if p := readPlan(t, s, key); p.Revision != 2 || p.SnapshotID != "snap-1" {
		t.Fatalf("plan %+v, want revision 2 on snap-1", p)
	}
	wantNext := []PlanItem{{1, "one", true, nil}, {2, "two", false, nil}, {3, "three", true, nil}}
	if got := readItems(t, s, key, 2); !reflect.DeepEqual(got, wantNext) {
		t.Fatalf("revision 2 items %+v, want %+v", got, wantNext)
	}
	wantOld := []PlanItem{{1, "one", false, nil}, {2, "two", false, nil}, {3, "three", false, nil}}
	if got := readItems(t, s, key, 1); !reflect.DeepEqual(got, wantOld) {
		t.Fatalf("revision 1 items changed: %+v", got)
	}
	after := readTask(t, s, key)
	if after.Status != words.StatusQueued {
		t.Fatalf("status %s, want queued", after.Status)
	}
	if after.StateVersion != before.StateVersion+1 || after.ContextGeneration != before.ContextGeneration+1 {
		t.Fatalf("state version %d→%d, generation %d→%d; want +1 each", before.StateVersion, after.StateVersion,
			before.ContextGeneration, after.ContextGeneration)
	}
	wantNotes := []Note{
		{ID: 1, Revision: 1, Item: intp(1), Text: "one is wrong", CreatedAt: reviewNow},
		{ID: 2, Revision: 1, Item: intp(3), Text: "three too", CreatedAt: reviewNow},
		{ID: 3, Revision: 1, Text: "overall: smaller diff", CreatedAt: reviewNow},
	}
	if got := readNotes(t, s, key); !reflect.DeepEqual(got, wantNotes) {
		t.Fatalf("notes %+v, want %+v", got, wantNotes)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 1 {
		t.Fatalf("%d events, want exactly one reject: %+v", len(evs), evs)
	}
	e := evs[0]
	if e.Kind != words.EventReject || e.ActionID != reject || e.SourceRef != "1,2,3" || e.PlanRevision != 1 ||
		e.SnapshotID != "snap-1" || e.Item != nil || e.Supersedes != 0 ||
		e.Text != "one is wrong\n\nthree too\n\noverall: smaller diff" || !e.CreatedAt.Equal(reviewNow) {
		t.Fatalf("reject event %+v", e)
	}

	// A second round stays with the same task: note IDs continue, the task
	// is still not closed.
	mustUpdate(t, s, func(tx *Tx) error { return tx.SetTaskStatus(key, words.StatusInReview) })
	mustUpdate(t, s, func(tx *Tx) (err error) {
		rev, err = tx.RejectWithFeedback(key, aid.next(), 2, []NoteInput{{Item: intp(2), Text: "now two"}})
		return err
	})
	if rev != 3 {
		t.Fatalf("second rejection made revision %d, want 3", rev)
	}
	if got := readItems(t, s, key, 3); !reflect.DeepEqual(got, []PlanItem{{1, "one", false, nil}, {2, "two", true, nil}, {3, "three", false, nil}}) {
		t.Fatalf("revision 3 items %+v", got)
	}
	if evs := rawEvents(t, s, key); len(evs) != 2 || evs[1].SourceRef != "4" || evs[1].PlanRevision != 2 {
		t.Fatalf("events after the second round: %+v", evs)
	}
	mustUpdate(t, s, func(tx *Tx) error {
		if n, err := tx.EventCount(key, words.EventTaskClosed); err != nil || n != 0 {
			t.Fatalf("task-closed events %d (%v), want 0", n, err)
		}
		return nil
	})
	if st := readTask(t, s, key).Status; st != words.StatusQueued {
		t.Fatalf("status %s, want queued", st)
	}
}

// A rejection through Store.UserAction applies once: a replay returns the
// saved response and adds no revision, note or event.
func TestRejectWithFeedbackReplay(t *testing.T) {
	s := openReviewStore(t, nil)
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one")
	a := Action{PlanKey: key, ActionID: newActionIDs().next(), Kind: words.EventReject,
		Request: map[string]any{"expectedRevision": 1, "notes": []string{"redo"}}}
	run := func() (Response, error) {
		return s.UserAction(a, func(tx *Tx) (Response, error) {
			rev, err := tx.RejectWithFeedback(key, a.ActionID, 1, []NoteInput{{Item: intp(1), Text: "redo"}})
			return Response{Message: "revision " + itoa(int64(rev))}, err
		})
	}
	if r, err := run(); err != nil || r.Replayed || r.Message != "revision 2" {
		t.Fatalf("first: %+v %v", r, err)
	}
	c := countRows(t, s)
	r, err := run()
	if err != nil || !r.Replayed || r.Message != "revision 2" {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if got := countRows(t, s); got != c {
		t.Fatalf("replay wrote rows: %+v → %+v", c, got)
	}
	if p := readPlan(t, s, key); p.Revision != 2 {
		t.Fatalf("revision %d after replay, want 2", p.Revision)
	}
}

func TestRejectWithFeedbackGuards(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	queued := mustCreate(t, s, Identity{"r", "queued", "p"}, words.StatusQueued, "one")
	review := mustCreate(t, s, Identity{"r", "review", "p"}, words.StatusInReview, "one")
	closed := mustCreate(t, s, Identity{"r", "closed", "p"}, words.StatusInReview, "one")
	mustUpdate(t, s, func(tx *Tx) error { _, _, err := tx.CancelTask(closed, aid.next(), true); return err })
	c := countRows(t, s)

	note := []NoteInput{{Item: intp(1), Text: "x"}}
	for _, tc := range []struct {
		name, key, code string
		rev             int
		notes           []NoteInput
	}{
		{"not in review", queued, CodeIllegal, 1, note},
		{"closed", closed, CodeTaskClosed, 1, note},
		{"stale revision", review, CodeStaleVersion, 2, note},
		{"unknown item", review, CodeNotFound, 1, []NoteInput{{Item: intp(9), Text: "x"}}},
		{"no notes", review, CodeBadInput, 1, nil},
		{"empty note", review, CodeBadInput, 1, []NoteInput{{Text: "  "}}},
		{"unknown plan", "r/none/p", CodeNotFound, 1, note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(func(tx *Tx) error { _, err := tx.RejectWithFeedback(tc.key, aid.next(), tc.rev, tc.notes); return err })
			wantRefusal(t, err, tc.code)
			if got := countRows(t, s); got != c {
				t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
			}
		})
	}
}

// TestRejectKeepsTaskOpen: "Reject with feedback" never closes a task; it
// moves it back to queued with no task-closed event.
//
// kills: mutant/reject-closes-task
func TestRejectKeepsTaskOpen(t *testing.T) {
	s := openReviewStore(t, nil)
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one")
	mustUpdate(t, s, func(tx *Tx) error {
		_, err := tx.RejectWithFeedback(key, newActionIDs().next(), 1, []NoteInput{{Item: intp(1), Text: "x"}})
		return err
	})
	if st := readTask(t, s, key).Status; st != words.StatusQueued {
		t.Fatalf("after a rejection the task is %s, want %s", st, words.StatusQueued)
	}
	mustUpdate(t, s, func(tx *Tx) error {
		if n, err := tx.EventCount(key, words.EventTaskClosed); err != nil || n != 0 {
			t.Fatalf("after a rejection %d task-closed events (%v), want 0", n, err)
		}
		return nil
	})
}

func TestChangeNote(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one", "two")
	before := readTask(t, s, key)
	act := aid.next()
	var id int64
	mustUpdate(t, s, func(tx *Tx) (err error) { id, err = tx.ChangeNote(key, act, 2, "rename it"); return err })
	if id != 1 {
		t.Fatalf("note ID %d, want 1", id)
	}
	if got := readNotes(t, s, key); !reflect.DeepEqual(got, []Note{{ID: 1, Revision: 1, Item: intp(2), Text: "rename it", CreatedAt: reviewNow}}) {
		t.Fatalf("notes %+v", got)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 1 || evs[0].Kind != words.EventChangeRequest || evs[0].SourceRef != "1" || evs[0].Item == nil ||
		*evs[0].Item != 2 || evs[0].Text != "rename it" || evs[0].ActionID != act || evs[0].PlanRevision != 1 {
		t.Fatalf("events %+v", evs)
	}
	after := readTask(t, s, key)
	if after.StateVersion != before.StateVersion+1 || after.ContextGeneration != before.ContextGeneration || after.Status != before.Status {
		t.Fatalf("task %+v after a note, before %+v: want state version +1 only", after, before)
	}

	c := countRows(t, s)
	// Reusing an action ID at the Tx level is refused, not silently applied
	// without its event.
	err := s.Update(func(tx *Tx) error { _, err := tx.ChangeNote(key, act, 1, "again"); return err })
	if r := wantRefusal(t, err, CodeActionIDUsed); r.Message != words.ActionIDAlreadyUsed {
		t.Fatalf("message %q", r.Message)
	}
	err = s.Update(func(tx *Tx) error { _, err := tx.ChangeNote(key, aid.next(), 3, "no such item"); return err })
	wantRefusal(t, err, CodeNotFound)
	if got := countRows(t, s); got != c {
		t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
	}
	mustUpdate(t, s, func(tx *Tx) error { _, _, err := tx.CancelTask(key, aid.next(), true); return err })
	c = countRows(t, s)
	err = s.Update(func(tx *Tx) error { _, err := tx.ChangeNote(key, aid.next(), 1, "too late"); return err })
	wantRefusal(t, err, CodeTaskClosed)
	if got := countRows(t, s); got != c {
		t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
	}
}

// assignAction is how a scenario or the server would send "assign a segment"
// through the user-action protocol.
func assignAction(s *Store, key, actionID, choice string, item int) (Response, error) {
	req := struct {
		Choice string `json:"choiceKey"`
		Item   int    `json:"item"`
	}{choice, item}
	return s.UserAction(Action{PlanKey: key, ActionID: actionID, Kind: words.EventSegmentAssign, Request: req},
		func(tx *Tx) (Response, error) { return Response{}, tx.AssignSegment(key, actionID, choice, item) })
}

// R019: a changed choice writes a new event that supersedes the earlier one;
// a replay adds none; the same action ID with another request is refused.
func TestSegmentChoicesR019(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one", "two")
	first, second := aid.next(), aid.next()
	if _, err := assignAction(s, key, first, "seg-a", 1); err != nil {
		t.Fatal(err)
	}
	sv := readTask(t, s, key).StateVersion
	r, err := assignAction(s, key, second, "seg-a", 2)
	if err != nil || r.Replayed || r.Outcome != "applied" {
		t.Fatalf("reassign: %+v %v", r, err)
	}
	task := readTask(t, s, key)
	if task.StateVersion != sv+1 || task.ContextGeneration != 0 {
		t.Fatalf("task %+v: want state version +1 and generation unchanged", task)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(evs), evs)
	}
	if evs[0].Kind != words.EventSegmentAssign || evs[0].SourceRef != "seg-a" || *evs[0].Item != 1 || evs[0].Supersedes != 0 || evs[0].ActionID != first {
		t.Fatalf("first event %+v", evs[0])
	}
	if evs[1].Kind != words.EventSegmentAssign || evs[1].SourceRef != "seg-a" || *evs[1].Item != 2 ||
		evs[1].Supersedes != evs[0].ID || evs[1].ActionID != second || evs[1].PlanRevision != 1 || evs[1].Text != "" {
		t.Fatalf("second event %+v, want it to supersede %d", evs[1], evs[0].ID)
	}
	var choices []Choice
	mustUpdate(t, s, func(tx *Tx) (err error) { choices, err = tx.Choices(key); return err })
	if want := []Choice{{Key: "seg-a", Value: "assign:2", EventID: evs[1].ID, ReviewVersion: 2}}; !reflect.DeepEqual(choices, want) {
		t.Fatalf("choices %+v, want %+v", choices, want)
	}
	if p := readPlan(t, s, key); p.ReviewVersion != 2 || p.Revision != 1 {
		t.Fatalf("plan %+v: want review version 2 at revision 1", p)
	}

	// Replay: same action ID, same request.
	c := countRows(t, s)
	r, err = assignAction(s, key, second, "seg-a", 2)
	if err != nil || !r.Replayed || r.Outcome != "applied" {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if got := countRows(t, s); got != c {
		t.Fatalf("replay wrote rows: %+v → %+v", c, got)
	}
	if p := readPlan(t, s, key); p.ReviewVersion != 2 {
		t.Fatalf("replay moved the review version to %d", p.ReviewVersion)
	}

	// Same action ID, another request.
	_, err = assignAction(s, key, second, "seg-a", 1)
	if r := wantRefusal(t, err, CodeActionIDUsed); r.Message != "Action ID already used" {
		t.Fatalf("message %q", r.Message)
	}
	if got := countRows(t, s); got != c {
		t.Fatalf("refused reuse wrote rows: %+v → %+v", c, got)
	}

	// Accepting the segment supersedes the newest assign; another segment's
	// first choice supersedes nothing.
	accept := aid.next()
	mustUpdate(t, s, func(tx *Tx) error { return tx.AcceptSegment(key, accept, "seg-a") })
	mustUpdate(t, s, func(tx *Tx) error { return tx.AcceptSegment(key, aid.next(), "seg-b") })
	evs = rawEvents(t, s, key)
	if len(evs) != 4 || evs[2].Kind != words.EventSegmentAccept || evs[2].Supersedes != evs[1].ID || evs[2].Item != nil ||
		evs[3].SourceRef != "seg-b" || evs[3].Supersedes != 0 {
		t.Fatalf("events after accepts %+v", evs)
	}
	mustUpdate(t, s, func(tx *Tx) (err error) { choices, err = tx.Choices(key); return err })
	want := []Choice{{"seg-a", "accept", evs[2].ID, 3}, {"seg-b", "accept", evs[3].ID, 4}}
	if !reflect.DeepEqual(choices, want) {
		t.Fatalf("choices %+v, want %+v", choices, want)
	}
}

// TestChangedChoiceSupersedes: a changed choice is a new event that
// supersedes the choice's earlier one.
//
// kills: mutant/choice-no-supersede
func TestChangedChoiceSupersedes(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one", "two")
	if _, err := assignAction(s, key, aid.next(), "seg-a", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := assignAction(s, key, aid.next(), "seg-a", 2); err != nil {
		t.Fatal(err)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 2 || evs[0].Supersedes != 0 || evs[1].Supersedes != evs[0].ID {
		t.Fatalf("the second choice event should supersede the first: %+v", evs)
	}
}

func TestAcceptFinding(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one")
	mustUpdate(t, s, func(tx *Tx) error { return tx.AddFinding(key, "f1", "agent says: null check missing") })
	if n := len(rawEvents(t, s, key)); n != 0 {
		t.Fatalf("AddFinding wrote %d events; agent output never becomes an event", n)
	}
	err := s.Update(func(tx *Tx) error { return tx.AddFinding(key, "f1", "again") })
	wantRefusal(t, err, CodeBadInput)

	before := readTask(t, s, key)
	act := aid.next()
	mustUpdate(t, s, func(tx *Tx) error { return tx.AcceptFinding(key, act, "f1") })
	mustUpdate(t, s, func(tx *Tx) error { return tx.AcceptFinding(key, aid.next(), "f2") })
	var fs []Finding
	mustUpdate(t, s, func(tx *Tx) (err error) { fs, err = tx.Findings(key); return err })
	want := []Finding{{"f1", "agent says: null check missing", FindingAccepted}, {"f2", "", FindingAccepted}}
	if !reflect.DeepEqual(fs, want) {
		t.Fatalf("findings %+v, want %+v", fs, want)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 2 || evs[0].Kind != words.EventFindingAccept || evs[0].SourceRef != "f1" || evs[0].Text != "" ||
		evs[0].ActionID != act || evs[1].SourceRef != "f2" {
		t.Fatalf("events %+v", evs)
	}
	after := readTask(t, s, key)
	if after.StateVersion != before.StateVersion+2 || after.ContextGeneration != before.ContextGeneration {
		t.Fatalf("two acceptances moved state version %d→%d, generation %d→%d", before.StateVersion, after.StateVersion,
			before.ContextGeneration, after.ContextGeneration)
	}
	c := countRows(t, s)
	err = s.Update(func(tx *Tx) error { return tx.AcceptFinding(key, aid.next(), "f1") })
	wantRefusal(t, err, CodeIllegal)
	if got := countRows(t, s); got != c {
		t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
	}
}

func TestNeedsHumanGuidance(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusNeedsHuman, "one")
	queued := mustCreate(t, s, Identity{"r", "q", "p"}, words.StatusQueued, "one")
	before := readTask(t, s, key)
	act := aid.next()
	var id int64
	mustUpdate(t, s, func(tx *Tx) (err error) { id, err = tx.NeedsHumanGuidance(key, act, "use the v2 API"); return err })
	if id != 1 {
		t.Fatalf("note ID %d", id)
	}
	if got := readNotes(t, s, key); !reflect.DeepEqual(got, []Note{{ID: 1, Revision: 1, Text: "use the v2 API", CreatedAt: reviewNow}}) {
		t.Fatalf("notes %+v", got)
	}
	after := readTask(t, s, key)
	if after.Status != words.StatusQueued || after.StateVersion != before.StateVersion+1 || after.ContextGeneration != before.ContextGeneration {
		t.Fatalf("task %+v", after)
	}
	evs := rawEvents(t, s, key)
	if len(evs) != 1 || evs[0].Kind != words.EventNeedsHumanGuidance || evs[0].SourceRef != "1" || evs[0].Item != nil ||
		evs[0].Text != "use the v2 API" || evs[0].ActionID != act {
		t.Fatalf("events %+v", evs)
	}

	c := countRows(t, s)
	for _, k := range []string{key, queued} { // key is queued now too
		err := s.Update(func(tx *Tx) error { _, err := tx.NeedsHumanGuidance(k, aid.next(), "more"); return err })
		wantRefusal(t, err, CodeIllegal)
	}
	if got := countRows(t, s); got != c {
		t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
	}
}

// R015: two identities with the same taskId in different repositories both
// record task-closed at revision 1; FeedbackEvents for each returns only its
// own, and refuses before task-closed exists.
func TestFeedbackEventsScopedR015(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	id1 := Identity{RepositoryID: "r1", TaskID: "t", PlanID: "p"}
	id2 := Identity{RepositoryID: "r2", TaskID: "t", PlanID: "p"}
	k1 := mustCreate(t, s, id1, words.StatusInReview, "one")
	k2 := mustCreate(t, s, id2, words.StatusInReview, "one")
	// Both plans number their notes from 1, so the note IDs collide.
	mustUpdate(t, s, func(tx *Tx) error { _, err := tx.ChangeNote(k1, aid.next(), 1, "r1 note"); return err })
	mustUpdate(t, s, func(tx *Tx) error { _, err := tx.ChangeNote(k2, aid.next(), 1, "r2 note"); return err })

	for _, id := range []Identity{id1, id2} {
		_, err := s.FeedbackEvents(id)
		wantRefusal(t, err, CodeIllegal)
	}

	// The same action ID on both: the event key includes the full plan key.
	cancel := aid.next()
	for _, k := range []string{k1, k2} {
		r, err := s.UserAction(Action{PlanKey: k, ActionID: cancel, Kind: "cancel-task", Request: map[string]string{}},
			func(tx *Tx) (Response, error) {
				outcome, _, err := tx.CancelTask(k, cancel, true)
				return Response{Outcome: outcome}, err
			})
		if err != nil || r.Outcome != CancelTaskClosed {
			t.Fatalf("cancel %s: %+v %v", k, r, err)
		}
	}
	for _, tc := range []struct {
		id   Identity
		note string
	}{{id1, "r1 note"}, {id2, "r2 note"}} {
		evs, err := s.FeedbackEvents(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 {
			t.Fatalf("%s: %d events, want its own 2: %+v", tc.id.Key(), len(evs), evs)
		}
		for _, e := range evs {
			if e.PlanKey != tc.id.Key() || e.PlanRevision != 1 {
				t.Fatalf("%s got event %+v", tc.id.Key(), e)
			}
		}
		if evs[0].Kind != words.EventChangeRequest || evs[0].SourceRef != "1" || evs[0].Text != tc.note {
			t.Fatalf("%s note event %+v", tc.id.Key(), evs[0])
		}
		if evs[1].Kind != words.EventTaskClosed || evs[1].SourceRef != tc.id.Key() || evs[1].ActionID != cancel {
			t.Fatalf("%s task-closed event %+v", tc.id.Key(), evs[1])
		}
	}
}

// TestFeedbackEventsScoped: lane J's read returns only the identity's own
// events, even when another plan's share its task ID and plan ID.
//
// kills: mutant/feedback-unscoped
func TestFeedbackEventsScoped(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	id1 := Identity{RepositoryID: "r1", TaskID: "t", PlanID: "p"}
	k1 := mustCreate(t, s, id1, words.StatusInReview, "one")
	k2 := mustCreate(t, s, Identity{RepositoryID: "r2", TaskID: "t", PlanID: "p"}, words.StatusInReview, "one")
	for _, k := range []string{k1, k2} {
		mustUpdate(t, s, func(tx *Tx) error { _, _, err := tx.CancelTask(k, aid.next(), true); return err })
	}
	evs, err := s.FeedbackEvents(id1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].PlanKey != k1 || evs[0].Kind != words.EventTaskClosed {
		t.Fatalf("%s should read only its own task-closed event, got %+v", k1, evs)
	}
}

// Bad input is refused with a *Refusal and writes nothing, for every action.
func TestReviewBadInput(t *testing.T) {
	s := openReviewStore(t, nil)
	aid := newActionIDs()
	key := mustCreate(t, s, Identity{"r", "t", "p"}, words.StatusInReview, "one")
	human := mustCreate(t, s, Identity{"r", "h", "p"}, words.StatusNeedsHuman, "one")
	good := aid.next()
	long := strings.Repeat("é", MaxFeedbackText+1) // counted in characters, not bytes
	half := strings.Repeat("a", MaxFeedbackText/2)
	c := countRows(t, s)

	for _, tc := range []struct {
		name string
		code string
		fn   func(tx *Tx) error
	}{
		{"reject: action ID not a UUID", CodeBadInput, func(tx *Tx) error {
			_, err := tx.RejectWithFeedback(key, "not-a-uuid", 1, []NoteInput{{Text: "x"}})
			return err
		}},
		{"reject: action ID upper case", CodeBadInput, func(tx *Tx) error {
			_, err := tx.RejectWithFeedback(key, strings.ToUpper(good), 1, []NoteInput{{Text: "x"}})
			return err
		}},
		{"reject: note too long", CodeBadInput, func(tx *Tx) error {
			_, err := tx.RejectWithFeedback(key, good, 1, []NoteInput{{Text: long}})
			return err
		}},
		{"reject: notes too long together", CodeBadInput, func(tx *Tx) error {
			_, err := tx.RejectWithFeedback(key, good, 1, []NoteInput{{Text: half}, {Text: half}})
			return err
		}},
		{"reject: unknown plan", CodeNotFound, func(tx *Tx) error {
			_, err := tx.RejectWithFeedback("r/none/p", good, 1, []NoteInput{{Text: "x"}})
			return err
		}},
		{"change note: bad action ID", CodeBadInput, func(tx *Tx) error { _, err := tx.ChangeNote(key, "", 1, "x"); return err }},
		{"change note: too long", CodeBadInput, func(tx *Tx) error { _, err := tx.ChangeNote(key, good, 1, long); return err }},
		{"change note: not UTF-8", CodeBadInput, func(tx *Tx) error { _, err := tx.ChangeNote(key, good, 1, "\xff"); return err }},
		{"change note: unknown plan", CodeNotFound, func(tx *Tx) error { _, err := tx.ChangeNote("r/none/p", good, 1, "x"); return err }},
		{"assign: bad action ID", CodeBadInput, func(tx *Tx) error { return tx.AssignSegment(key, "x", "seg", 1) }},
		{"assign: empty choice key", CodeBadInput, func(tx *Tx) error { return tx.AssignSegment(key, good, "", 1) }},
		{"assign: unknown item", CodeNotFound, func(tx *Tx) error { return tx.AssignSegment(key, good, "seg", 2) }},
		{"assign: unknown plan", CodeNotFound, func(tx *Tx) error { return tx.AssignSegment("r/none/p", good, "seg", 1) }},
		{"accept segment: bad action ID", CodeBadInput, func(tx *Tx) error { return tx.AcceptSegment(key, "x", "seg") }},
		{"accept segment: unknown plan", CodeNotFound, func(tx *Tx) error { return tx.AcceptSegment("r/none/p", good, "seg") }},
		{"accept finding: bad action ID", CodeBadInput, func(tx *Tx) error { return tx.AcceptFinding(key, "x", "f") }},
		{"accept finding: unknown plan", CodeNotFound, func(tx *Tx) error { return tx.AcceptFinding("r/none/p", good, "f") }},
		{"guidance: bad action ID", CodeBadInput, func(tx *Tx) error { _, err := tx.NeedsHumanGuidance(human, "x", "g"); return err }},
		{"guidance: too long", CodeBadInput, func(tx *Tx) error { _, err := tx.NeedsHumanGuidance(human, good, long); return err }},
		{"guidance: empty", CodeBadInput, func(tx *Tx) error { _, err := tx.NeedsHumanGuidance(human, good, ""); return err }},
		{"guidance: unknown plan", CodeNotFound, func(tx *Tx) error { _, err := tx.NeedsHumanGuidance("r/none/p", good, "g"); return err }},
		{"add finding: unknown plan", CodeNotFound, func(tx *Tx) error { return tx.AddFinding("r/none/p", "f", "x") }},
		{"plan: unknown", CodeNotFound, func(tx *Tx) error { _, err := tx.Plan("r/none/p"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, s.Update(tc.fn), tc.code)
			if got := countRows(t, s); got != c {
				t.Fatalf("refusal wrote rows: %+v → %+v", c, got)
			}
		})
	}

	// Through UserAction an invalid action ID is refused before any
	// transaction: no user_actions row either.
	_, err := s.UserAction(Action{PlanKey: key, ActionID: "nope", Kind: words.EventChangeRequest, Request: "x"},
		func(tx *Tx) (Response, error) { _, err := tx.ChangeNote(key, "nope", 1, "x"); return Response{}, err })
	wantRefusal(t, err, CodeBadInput)
	if got := countRows(t, s); got != c {
		t.Fatalf("refused action wrote rows: %+v → %+v", c, got)
	}

	// Exactly 4000 characters is allowed.
	mustUpdate(t, s, func(tx *Tx) error {
		_, err := tx.ChangeNote(key, good, 1, strings.Repeat("é", MaxFeedbackText))
		return err
	})
}
