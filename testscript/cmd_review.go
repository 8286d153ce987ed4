package testscript

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for the review actions that produce feedback events (the
// contract's "Feedback-event contract (for lane J)"), and for reading those
// events and the plan back. Every action runs through Store.UserAction, as an
// event on the loop, so action IDs, replays and refusals behave as in
// production: a replayed action returns its saved response and applies
// nothing, and the same action ID with another request is refused.

func init() {
	register(
		Command{Name: "events", Kind: Assertion, Usage: "events TASK KIND N",
			Summary: "asserts how many feedback events of KIND the task has",
			Example: "events T1 task-closed 1", Run: cmdEvents},
		Command{Name: "reject", Kind: Action, Keys: []Key{K("items", Ints), K("rev", Int), K("action", ActionName)}, Usage: "[!] reject TASK NOTE [items=1,2] [rev=N] [action=NAME]",
			Summary: "\"Reject with feedback\" as a user action: one note with NOTE's text per named item (one note on the whole plan without items=); rev is the expected plan revision (default: the present one, so give it to replay); prints the outcome and the new revision",
			Example: "reject T1 'split the parser change' items=2 action=r1", Run: cmdReject},
		Command{Name: "change-note", Kind: Action, Keys: []Key{K("action", ActionName)}, Usage: "[!] change-note TASK ITEM TEXT [action=NAME]",
			Summary: "a change note on one plan item, as a user action (one change-request event)",
			Example: "change-note T1 1 'keep the old flag' action=n1", Run: cmdChangeNote},
		Command{Name: "assign-segment", Kind: Action, Keys: []Key{K("action", ActionName)}, Usage: "[!] assign-segment TASK KEY ITEM [action=NAME]",
			Summary: "assigns the segment with choice key KEY to plan item ITEM, as a user action (one segment-assign event, superseding the segment's earlier one)",
			Example: "assign-segment T1 seg-a 1 action=as1", Run: cmdAssignSegment},
		Command{Name: "accept-segment", Kind: Action, Keys: []Key{K("action", ActionName)}, Usage: "[!] accept-segment TASK KEY [action=NAME]",
			Summary: "accepts an Ambiguous or Unplanned segment as it is, as a user action (one segment-accept event)",
			Example: "accept-segment T1 seg-b action=ac1", Run: cmdAcceptSegment},
		Command{Name: "guidance", Kind: Action, Keys: []Key{K("action", ActionName)}, Usage: "[!] guidance TASK TEXT [action=NAME]",
			Summary: "sends a needs-human task back with guidance, as a user action (one needs-human-guidance event)",
			Example: "guidance T1 'use the v2 endpoint' action=g1", Run: cmdGuidance},
		Command{Name: "feedback", Kind: Assertion, Usage: "[!] feedback TASK [N]",
			Summary: "lane J's read: Store.FeedbackEvents for the task's full identity; asserts it returns N events and prints one line each (kind, plan key, revision, item, sourceRef, supersedes as an ordinal); refused while the task has no task-closed event",
			Example: "feedback T1 3", Run: cmdFeedback},
		Command{Name: "event", Kind: Assertion, Keys: []Key{K("kind", Text), K("revision", Int), K("snapshot", Name), K("item", IntOrNone), K("source", Text), K("text", Text), K("supersedes", IntOrNone), K("action", Name)}, Usage: "event TASK N [kind=K] [revision=R] [snapshot=S] [item=I|none] [source=REF] [text=T] [supersedes=M|none] [action=NAME]",
			Summary: "asserts fields of the task's N-th feedback event, oldest first and counted within the task; supersedes names the earlier event by its ordinal, action by the script's action name",
			Example: "event T1 2 kind=segment-assign item=2 supersedes=1", Run: cmdEvent},
		Command{Name: "plan", Kind: Assertion, Keys: []Key{K("revision", Int), K("items", Int), K("runagain", OrNone(Ints)), K("notes", Int), K("review", Int)}, Usage: "plan TASK [revision=N] [items=N] [runagain=1,2|none] [notes=N] [review=N]",
			Summary: "asserts the task's plan: its revision, the present revision's item count and run-again items, the number of notes, and the review version",
			Example: "plan T1 revision=2 runagain=2 notes=1", Run: cmdPlan},
	)
}

func cmdEvents(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 3 {
		ts.Fatalf("usage: events TASK KIND N")
	}
	s := get(ts)
	key := s.planKey(ts, a.pos[0])
	var n int
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { n, err = tx.EventCount(key, a.pos[1]); return err }); err != nil {
		s.fatal(ts, "%v", err)
	}
	if strconv.Itoa(n) != a.pos[2] {
		s.fatal(ts, "%s events of %s: %d, want %s", a.pos[1], a.pos[0], n, a.pos[2])
	}
}

// reviewAction runs fn as the user action kind on the loop, prints the
// response and checks the error against the command's negation.
func (s *scenario) reviewAction(ts *gts.TestScript, neg bool, a argSet, key, kind string, request any,
	fn func(tx *store.Tx, actionID string) (store.Response, error)) {
	w := s.world(ts)
	actionID := s.action(a)
	var resp store.Response
	var err error
	resp, err = w.Runner.ReviewAction(context.Background(), store.Action{PlanKey: key, ActionID: actionID, Kind: kind, Request: request},
		func(tx *store.Tx) (store.Response, error) { return fn(tx, actionID) })
	printResponse(ts, s, resp)
	s.expect(ts, neg, kind, err)
}

func cmdReject(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: reject TASK NOTE [items=1,2] [rev=N] [action=NAME]")
	}
	key := s.planKey(ts, a.pos[0])
	var notes []store.NoteInput
	if v := a.str("items"); v != "" {
		for _, it := range strings.Split(v, ",") {
			n := atoi(ts, "items", it)
			notes = append(notes, store.NoteInput{Item: &n, Text: a.pos[1]})
		}
	} else {
		notes = []store.NoteInput{{Text: a.pos[1]}}
	}
	rev := 0
	if n, ok := a.num("rev"); ok {
		rev = n
	} else {
		rev = s.plan(ts, key).Revision
	}
	request := struct {
		ExpectedRevision int               `json:"expectedRevision"`
		Notes            []store.NoteInput `json:"notes"`
	}{rev, notes}
	s.reviewAction(ts, neg, a, key, "reject", request, func(tx *store.Tx, actionID string) (store.Response, error) {
		next, err := tx.RejectWithFeedback(key, actionID, rev, notes)
		if err != nil {
			return store.Response{}, err
		}
		return store.Response{Outcome: "applied", Message: fmt.Sprintf("revision %d", next)}, nil
	})
}

func cmdChangeNote(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 3 {
		ts.Fatalf("usage: change-note TASK ITEM TEXT [action=NAME]")
	}
	key := s.planKey(ts, a.pos[0])
	item := atoi(ts, "item", a.pos[1])
	text := a.pos[2]
	request := struct {
		Item int    `json:"item"`
		Text string `json:"text"`
	}{item, text}
	s.reviewAction(ts, neg, a, key, "change-note", request, func(tx *store.Tx, actionID string) (store.Response, error) {
		id, err := tx.ChangeNote(key, actionID, item, text)
		if err != nil {
			return store.Response{}, err
		}
		return store.Response{Outcome: "applied", Message: fmt.Sprintf("note %d", id)}, nil
	})
}

func cmdAssignSegment(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 3 {
		ts.Fatalf("usage: assign-segment TASK KEY ITEM [action=NAME]")
	}
	key := s.planKey(ts, a.pos[0])
	choice, item := a.pos[1], atoi(ts, "item", a.pos[2])
	request := struct {
		ChoiceKey string `json:"choiceKey"`
		Item      int    `json:"item"`
	}{choice, item}
	s.reviewAction(ts, neg, a, key, "assign-segment", request, func(tx *store.Tx, actionID string) (store.Response, error) {
		return store.Response{Outcome: "applied"}, tx.AssignSegment(key, actionID, choice, item)
	})
}

func cmdAcceptSegment(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: accept-segment TASK KEY [action=NAME]")
	}
	key := s.planKey(ts, a.pos[0])
	choice := a.pos[1]
	request := struct {
		ChoiceKey string `json:"choiceKey"`
	}{choice}
	s.reviewAction(ts, neg, a, key, "accept-segment", request, func(tx *store.Tx, actionID string) (store.Response, error) {
		return store.Response{Outcome: "applied"}, tx.AcceptSegment(key, actionID, choice)
	})
}

func cmdGuidance(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: guidance TASK TEXT [action=NAME]")
	}
	key := s.planKey(ts, a.pos[0])
	text := a.pos[1]
	request := struct {
		Text string `json:"text"`
	}{text}
	s.reviewAction(ts, neg, a, key, "needs-human-guidance", request, func(tx *store.Tx, actionID string) (store.Response, error) {
		id, err := tx.NeedsHumanGuidance(key, actionID, text)
		if err != nil {
			return store.Response{}, err
		}
		return store.Response{Outcome: "applied", Message: fmt.Sprintf("note %d", id)}, nil
	})
}

func (s *scenario) plan(ts *gts.TestScript, key string) store.Plan {
	var p store.Plan
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { p, err = tx.Plan(key); return err }); err != nil {
		s.fatal(ts, "%v", err)
	}
	return p
}

func itemStr(item *int) string {
	if item == nil {
		return "none"
	}
	return strconv.Itoa(*item)
}

// ordinal names an event ID by its place in evs (1-based), or "none".
func ordinal(evs []store.Event, id int64) string {
	if id == 0 {
		return "none"
	}
	for i, e := range evs {
		if e.ID == id {
			return strconv.Itoa(i + 1)
		}
	}
	return "id " + strconv.FormatInt(id, 10)
}

func cmdFeedback(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 1 || len(a.pos) > 2 {
		ts.Fatalf("usage: feedback TASK [N]")
	}
	s := get(ts)
	id := s.plan(ts, s.planKey(ts, a.pos[0])).Identity
	evs, err := s.world(ts).Store.FeedbackEvents(id)
	for i, e := range evs {
		fmt.Fprintf(ts.Stdout(), "event %d: kind=%s plan=%s revision=%d item=%s source=%s supersedes=%s\n",
			i+1, e.Kind, e.PlanKey, e.PlanRevision, itemStr(e.Item), e.SourceRef, ordinal(evs, e.Supersedes))
	}
	s.expect(ts, neg, "feedback", err)
	if err == nil && len(a.pos) == 2 && strconv.Itoa(len(evs)) != a.pos[1] {
		s.fatal(ts, "feedbackEvents(%s) returned %d events, want %s", id.Key(), len(evs), a.pos[1])
	}
}

// taskEvents reads every feedback event of one task, oldest first, through a
// read-only connection of its own: an assertion, not lane J's read, so it is
// not held back until the task closes.
func (s *scenario) taskEvents(ts *gts.TestScript, key string) []store.Event {
	db, err := sql.Open("sqlite", "file:"+s.world(ts).DBPath+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.fatal(ts, "events: %v", err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, action_id, plan_revision, snapshot_id, item, kind, COALESCE(text, ''), source_ref,
		COALESCE(supersedes, 0) FROM feedback_events WHERE plan_key = ? ORDER BY id`, key)
	if err != nil {
		s.fatal(ts, "events: %v", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e := store.Event{PlanKey: key}
		var item sql.NullInt64
		if err := rows.Scan(&e.ID, &e.ActionID, &e.PlanRevision, &e.SnapshotID, &item, &e.Kind, &e.Text, &e.SourceRef, &e.Supersedes); err != nil {
			s.fatal(ts, "events: %v", err)
		}
		if item.Valid {
			n := int(item.Int64)
			e.Item = &n
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		s.fatal(ts, "events: %v", err)
	}
	return out
}

func cmdEvent(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: event TASK N k=v...")
	}
	evs := s.taskEvents(ts, s.planKey(ts, a.pos[0]))
	n := atoi(ts, "N", a.pos[1])
	if n < 1 || n > len(evs) {
		s.fatal(ts, "%s has %d feedback events; there is no event %d", a.pos[0], len(evs), n)
	}
	e := evs[n-1]
	want := map[string]string{}
	for k, v := range a.given() {
		want[k] = v
	}
	if v, ok := want["action"]; ok {
		want["action"] = actionID(v)
	}
	got := map[string]string{"kind": e.Kind, "revision": strconv.Itoa(e.PlanRevision), "snapshot": e.SnapshotID,
		"item": itemStr(e.Item), "source": e.SourceRef, "text": e.Text, "supersedes": ordinal(evs, e.Supersedes),
		"action": e.ActionID}
	s.compare(ts, fmt.Sprintf("event %s %d", a.pos[0], n), want, got)
}

func cmdPlan(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plan TASK k=v...")
	}
	key := s.planKey(ts, a.pos[0])
	var p store.Plan
	var items []store.PlanItem
	var notes []store.Note
	err := s.world(ts).Store.View(func(tx *store.Tx) (err error) {
		if p, err = tx.Plan(key); err != nil {
			return err
		}
		if items, err = tx.PlanItems(key, p.Revision); err != nil {
			return err
		}
		notes, err = tx.Notes(key)
		return err
	})
	if err != nil {
		s.fatal(ts, "%v", err)
	}
	var again []string
	for _, it := range items {
		if it.RunAgain {
			again = append(again, strconv.Itoa(it.Item))
		}
	}
	got := map[string]string{"revision": strconv.Itoa(p.Revision), "items": strconv.Itoa(len(items)),
		"runagain": noneOr(strings.Join(again, ",")), "notes": strconv.Itoa(len(notes)),
		"review": strconv.Itoa(p.ReviewVersion)}
	s.compare(ts, "plan "+a.pos[0], a.given(), got)
}
