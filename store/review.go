package store

// The review actions that produce feedback events (the contract's
// "Feedback-event contract (for lane J)", "Which actions produce feedback").
// Each one is a method on *Tx so that it runs inside Store.UserAction, and
// each writes its event in that same transaction (rule 1: "There is never an
// event without its action, or a feedback-producing action without its
// event"). Every guard runs before the first write, so a refusal leaves
// nothing behind even at the Tx level, and every applied action increases the
// task's state version by exactly one. Only RejectWithFeedback changes what
// an attempt depends on (the plan revision), so only it increases the
// context generation ("Where the current context lives").

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/words"
)

// MaxReviewKey bounds a choice key or finding ID: they become an event's
// sourceRef and are compared, never interpreted.
const MaxReviewKey = 256

// rejectSeparator joins a rejection's note texts into its one event text.
const rejectSeparator = "\n\n"

// NoteInput is one note of a "Reject with feedback": on a plan item, or on
// the whole plan when Item is nil.
type NoteInput struct {
	Item *int
	Text string
}

// Note is a notes row. Its ID is unique only inside its plan key.
type Note struct {
	ID        int64
	Revision  int // the plan revision the note was written against
	Item      *int
	Text      string
	CreatedAt time.Time
	// Question is true for the note a question saved (Ask): it is the
	// question's text, shown with its answer, not a change note.
	Question bool
}

// PlanItem is a plan_items row.
type PlanItem struct {
	Item     int
	Title    string
	RunAgain bool   // a rejection asked for this item to run again
	Spec     []byte // the item's canonical JSON (plan.ParseSpec reads it); nil for an item known by its title alone
}

// Plan is a plans row: the half of the present context that lives on the
// plan, and the review version that choices are stamped with.
type Plan struct {
	Key           string
	Identity      Identity
	Revision      int
	SnapshotID    string
	ReviewVersion int
}

// Choice is a choices row: the newest choice for one segment.
type Choice struct {
	Key           string
	Value         string // "accept" or "assign:<item>"
	EventID       int64  // the event that recorded this choice
	ReviewVersion int
}

// Finding is a findings row (an open problem the review found).
type Finding struct {
	ID     string
	Text   string
	Status string // open or accepted
}

// Choice values and finding statuses.
const (
	ChoiceAccept    = "accept"
	choiceAssign    = "assign:"
	FindingOpen     = "open"
	FindingAccepted = "accepted"
)

// RejectWithFeedback is "Reject with feedback". Following the design's step 8
// and the contract ("Reject with feedback is not a closed status"), in one
// transaction it creates revision+1 as a copy of the current revision with the
// items named in notes marked run_again, saves one note per input, moves the
// task from in review to queued and inserts exactly one reject event, whose
// sourceRef is the rejection's note IDs. It never closes the task: a task
// closes only when it is merged or cancelled, and reject rounds stay with it
// (L1), so J later distills every round. expectedRevision is the caller's
// compare-and-swap on the plan revision.
func (t *Tx) RejectWithFeedback(planKey, actionID string, expectedRevision int, notes []NoteInput) (newRevision int, err error) {
	if err := checkActionID(actionID); err != nil {
		return 0, err
	}
	if len(notes) == 0 {
		return 0, refuse(CodeBadInput, "reject with feedback needs at least one note")
	}
	texts := make([]string, len(notes))
	for i, n := range notes {
		if err := checkUserText("note", n.Text); err != nil {
			return 0, err
		}
		texts[i] = n.Text
	}
	// The event carries every note's text, and an event's text is at most
	// 4000 characters (the contract's "Fields"), so the whole must fit too.
	joined := strings.Join(texts, rejectSeparator)
	if utf8.RuneCountInString(joined) > MaxFeedbackText {
		return 0, refuse(CodeBadInput, "the rejection's notes are over %d characters together", MaxFeedbackText)
	}
	task, err := t.openTask(planKey)
	if err != nil {
		return 0, err
	}
	// "moves the task from in review to queued": any other status is not a
	// task the user is reviewing.
	if task.Status != words.StatusInReview {
		return 0, refuse(CodeIllegal, "reject with feedback needs a task in review; this one is %s", task.Status)
	}
	if err := t.noActiveAttempt(planKey, task); err != nil {
		return 0, err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return 0, err
	}
	if plan.Revision != expectedRevision {
		return 0, refuse(CodeStaleVersion, "plan is at revision %d, not %d", plan.Revision, expectedRevision)
	}
	runAgain := map[int]bool{}
	for _, n := range notes {
		if n.Item == nil {
			continue
		}
		if err := t.checkItem(planKey, plan.Revision, *n.Item); err != nil {
			return 0, err
		}
		runAgain[*n.Item] = true
	}
	if err := t.checkActionUnused(planKey, actionID); err != nil {
		return 0, err
	}

	// Writes. The notes and the event come first so that they carry the
	// revision the user rejected, not the one the rejection creates.
	refs := make([]string, len(notes))
	for i, n := range notes {
		id, err := t.insertNote(planKey, plan.Revision, n.Item, n.Text)
		if err != nil {
			return 0, err
		}
		refs[i] = strconv.FormatInt(id, 10)
	}
	if _, err := t.insertEventID(Event{PlanKey: planKey, ActionID: actionID, Kind: words.EventReject,
		Text: joined, SourceRef: strings.Join(refs, ",")}); err != nil {
		return 0, err
	}
	next, err := t.copyRevision(planKey, plan.Revision, runAgain)
	if err != nil {
		return 0, err
	}
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, words.StatusQueued, planKey); err != nil {
		return 0, err
	}
	// One bump for the whole action; the plan revision changed, so it is the
	// context generation's bump too.
	return next, t.bumpContext(planKey)
}

// copyRevision writes revision rev+1 as a copy of rev's items, keeping their
// numbers (notes and events refer to items by number) and their specs (the
// work to run again is the same work), with run_again set on exactly the
// items this rejection names, and invalidates the plan's pending and ready
// planning requests. It does not bump: the caller does, once, with
// bumpContext.
func (t *Tx) copyRevision(planKey string, rev int, runAgain map[int]bool) (int, error) {
	next := rev + 1
	if _, err := t.exec(`UPDATE plans SET revision = ? WHERE key = ?`, next, planKey); err != nil {
		return 0, err
	}
	items, err := t.PlanItems(planKey, rev)
	if err != nil {
		return 0, err
	}
	for _, it := range items {
		if _, err := t.exec(`INSERT INTO plan_items (spec, plan_key, revision, item, title, run_again) VALUES (?, ?, ?, ?, ?, ?)`, specText(it.Spec),
			planKey, next, it.Item, it.Title, runAgain[it.Item]); err != nil {
			return 0, err
		}
	}
	return next, t.invalidatePlanRequests(planKey)
}

// ChangeNote is "Change note on a plan item": a note on one item of the
// current revision, with its change-request event (sourceRef: the note ID).
// A note changes nothing an attempt depends on, so only the state version
// moves.
func (t *Tx) ChangeNote(planKey, actionID string, item int, text string) (noteID int64, err error) {
	if err := checkActionID(actionID); err != nil {
		return 0, err
	}
	if err := checkUserText("note", text); err != nil {
		return 0, err
	}
	plan, err := t.openItem(planKey, item)
	if err != nil {
		return 0, err
	}
	if err := t.checkActionUnused(planKey, actionID); err != nil {
		return 0, err
	}
	id, err := t.insertNote(planKey, plan.Revision, &item, text)
	if err != nil {
		return 0, err
	}
	if _, err := t.insertEventID(Event{PlanKey: planKey, ActionID: actionID, Kind: words.EventChangeRequest,
		Item: &item, Text: text, SourceRef: strconv.FormatInt(id, 10)}); err != nil {
		return 0, err
	}
	return id, t.bump(planKey)
}

// AssignSegment is "Assign a segment": the segment named by choiceKey belongs
// to plan item item. See setChoice.
func (t *Tx) AssignSegment(planKey, actionID, choiceKey string, item int) error {
	return t.setChoice(planKey, actionID, choiceKey, &item)
}

// AcceptSegment is "Accept a segment": an Ambiguous or Unplanned segment is
// accepted as it is. See setChoice.
func (t *Tx) AcceptSegment(planKey, actionID, choiceKey string) error {
	return t.setChoice(planKey, actionID, choiceKey, nil)
}

// setChoice records a segment choice: the choices row takes the new value
// and the next review version, and a new event records it. Events are
// append-only (rule 3): a changed choice never edits the earlier event; its
// new event supersedes the newest earlier segment event with the same
// sourceRef, and J uses the newest event for each sourceRef. A segment's
// assignment is a review choice, not tasks.assignment_id, so the context
// generation stays.
func (t *Tx) setChoice(planKey, actionID, choiceKey string, item *int) error {
	if err := checkActionID(actionID); err != nil {
		return err
	}
	if err := checkReviewKey("choice key", choiceKey); err != nil {
		return err
	}
	if _, err := t.openTask(planKey); err != nil {
		return err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return err
	}
	kind, value := words.EventSegmentAccept, ChoiceAccept
	if item != nil {
		if err := t.checkItem(planKey, plan.Revision, *item); err != nil {
			return err
		}
		kind, value = words.EventSegmentAssign, choiceAssign+strconv.Itoa(*item)
	}
	if err := t.checkActionUnused(planKey, actionID); err != nil {
		return err
	}
	var prev int64
	err = t.queryRow(`SELECT id FROM feedback_events WHERE plan_key = ? AND source_ref = ? AND kind IN (?, ?)
		ORDER BY id DESC LIMIT 1`, planKey, choiceKey, words.EventSegmentAssign, words.EventSegmentAccept).Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	eventID, err := t.insertEventID(Event{PlanKey: planKey, ActionID: actionID, Kind: kind, Item: item,
		SourceRef: choiceKey, Supersedes: prev})
	if err != nil {
		return err
	}
	version, err := t.bumpReview(planKey)
	if err != nil {
		return err
	}
	if _, err := t.exec(`INSERT INTO choices (plan_key, choice_key, value, event_id, review_version) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (plan_key, choice_key) DO UPDATE SET value = excluded.value, event_id = excluded.event_id,
		review_version = excluded.review_version`, planKey, choiceKey, value, eventID, version); err != nil {
		return err
	}
	return t.bump(planKey)
}

// AcceptFinding is "Accept an open problem": the finding becomes accepted
// and a finding-accept event records it (sourceRef: the finding ID). The
// event carries no text: a finding's text is agent output, which never
// becomes an event. A finding the store has not seen is inserted with empty
// text. Accepting an accepted finding is refused: it would change nothing.
func (t *Tx) AcceptFinding(planKey, actionID, findingID string) error {
	if err := checkActionID(actionID); err != nil {
		return err
	}
	if err := checkReviewKey("finding ID", findingID); err != nil {
		return err
	}
	if _, err := t.openTask(planKey); err != nil {
		return err
	}
	var status string
	err := t.queryRow(`SELECT status FROM findings WHERE plan_key = ? AND finding_id = ?`, planKey, findingID).Scan(&status)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if status == FindingAccepted {
		return refuse(CodeIllegal, "finding %s is already accepted", findingID)
	}
	if err := t.checkActionUnused(planKey, actionID); err != nil {
		return err
	}
	if _, err := t.exec(`INSERT INTO findings (plan_key, finding_id, text, status) VALUES (?, ?, '', ?)
		ON CONFLICT (plan_key, finding_id) DO UPDATE SET status = excluded.status`, planKey, findingID, FindingAccepted); err != nil {
		return err
	}
	if _, err := t.insertEventID(Event{PlanKey: planKey, ActionID: actionID, Kind: words.EventFindingAccept,
		SourceRef: findingID}); err != nil {
		return err
	}
	return t.bump(planKey)
}

// NeedsHumanGuidance is "Guidance when sending a needs-human task back": a
// note on the whole plan, the task from needs human back to queued, and a
// needs-human-guidance event (sourceRef: the note ID). Only needs human
// takes guidance; the other human-gated statuses have actions of their own.
func (t *Tx) NeedsHumanGuidance(planKey, actionID, text string) (noteID int64, err error) {
	if err := checkActionID(actionID); err != nil {
		return 0, err
	}
	if err := checkUserText("guidance", text); err != nil {
		return 0, err
	}
	if err := t.CheckGuidance(planKey); err != nil {
		return 0, err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return 0, err
	}
	if err := t.checkActionUnused(planKey, actionID); err != nil {
		return 0, err
	}
	id, err := t.insertNote(planKey, plan.Revision, nil, text)
	if err != nil {
		return 0, err
	}
	// The person resolved the gate: an owed finding is owed no longer.
	if _, err := t.exec(`UPDATE tasks SET status = ?, owed_finding = NULL, owed_attempt = NULL WHERE plan_key = ?`, words.StatusQueued, planKey); err != nil {
		return 0, err
	}
	if _, err := t.insertEventID(Event{PlanKey: planKey, ActionID: actionID, Kind: words.EventNeedsHumanGuidance,
		Text: text, SourceRef: strconv.FormatInt(id, 10)}); err != nil {
		return 0, err
	}
	return id, t.bump(planKey)
}

// CheckGuidance is guidance's guards on the task, writing nothing: it is
// open, needs human, and has no active attempt. GET /api/runner's
// guidance offer is it.
func (t *Tx) CheckGuidance(planKey string) error {
	task, err := t.openTask(planKey)
	if err != nil {
		return err
	}
	if task.Status != words.StatusNeedsHuman {
		return refuse(CodeIllegal, "guidance sends back a task that needs human; this one is %s", task.Status)
	}
	return t.noActiveAttempt(planKey, task)
}

// AddFinding records an open problem the review found. It is agent output,
// not feedback, so it produces no event (and takes no action ID); tests and
// scenarios use it to create problems to accept.
func (t *Tx) AddFinding(planKey, findingID, text string) error {
	if err := checkReviewKey("finding ID", findingID); err != nil {
		return err
	}
	if !utf8.ValidString(text) {
		return refuse(CodeBadInput, "finding text is not UTF-8")
	}
	if _, err := t.openTask(planKey); err != nil {
		return err
	}
	var n int
	if err := t.queryRow(`SELECT COUNT(*) FROM findings WHERE plan_key = ? AND finding_id = ?`, planKey, findingID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return refuse(CodeBadInput, "finding %s already exists", findingID)
	}
	if _, err := t.exec(`INSERT INTO findings (plan_key, finding_id, text, status) VALUES (?, ?, ?, ?)`,
		planKey, findingID, bound(text), FindingOpen); err != nil {
		return err
	}
	return t.bump(planKey)
}

// Readers.

// Plan reads the plan's revision, snapshot and review version.
func (t *Tx) Plan(planKey string) (Plan, error) {
	p := Plan{Key: planKey}
	err := t.queryRow(`SELECT repository_id, task_id, plan_id, revision, snapshot_id, review_version FROM plans WHERE key = ?`, planKey).
		Scan(&p.Identity.RepositoryID, &p.Identity.TaskID, &p.Identity.PlanID, &p.Revision, &p.SnapshotID, &p.ReviewVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return p, refuse(CodeNotFound, "no plan %q", planKey)
	}
	return p, err
}

// ItemOf is the plan item an attempt works on, at the plan revision its
// context captured; ok is false for an attempt without an item (or an
// item that revision lacks).
func (t *Tx) ItemOf(a Attempt) (it PlanItem, ok bool, err error) {
	if a.Item == nil {
		return it, false, nil
	}
	items, err := t.PlanItems(a.PlanKey, a.Context.PlanRevision)
	if err != nil {
		return it, false, err
	}
	for _, it := range items {
		if it.Item == *a.Item {
			return it, true, nil
		}
	}
	return it, false, nil
}

// PlanItems lists one revision's items in item order.
func (t *Tx) PlanItems(planKey string, revision int) ([]PlanItem, error) {
	rows, err := t.query(`SELECT item, title, run_again, spec FROM plan_items WHERE plan_key = ? AND revision = ? ORDER BY item`, planKey, revision)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PlanItem
	for rows.Next() {
		var it PlanItem
		if err := rows.Scan(&it.Item, &it.Title, &it.RunAgain, &it.Spec); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// Notes lists the plan's notes, oldest first.
func (t *Tx) Notes(planKey string) ([]Note, error) {
	rows, err := t.query(`SELECT n.id, n.revision, n.item, n.text, n.created_at,
		EXISTS (SELECT 1 FROM questions q WHERE q.plan_key = n.plan_key AND q.note_id = n.id)
		FROM notes n WHERE n.plan_key = ? ORDER BY n.id`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		var item sql.NullInt64
		var created int64
		if err := rows.Scan(&n.ID, &n.Revision, &item, &n.Text, &created, &n.Question); err != nil {
			return nil, err
		}
		n.Item = intPtr(item)
		n.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, n)
	}
	return out, rows.Err()
}

// Choices lists the plan's segment choices by key.
func (t *Tx) Choices(planKey string) ([]Choice, error) {
	rows, err := t.query(`SELECT choice_key, value, COALESCE(event_id, 0), review_version FROM choices WHERE plan_key = ? ORDER BY choice_key`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Choice
	for rows.Next() {
		var c Choice
		if err := rows.Scan(&c.Key, &c.Value, &c.EventID, &c.ReviewVersion); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Findings lists the plan's findings by ID.
func (t *Tx) Findings(planKey string) ([]Finding, error) {
	rows, err := t.query(`SELECT finding_id, text, status FROM findings WHERE plan_key = ? ORDER BY finding_id`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Finding
	for rows.Next() {
		var f Finding
		if err := rows.Scan(&f.ID, &f.Text, &f.Status); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Guards and helpers.

// checkActionID refuses an action ID that is not a lowercase UUID v4. The
// server checks it before any transaction; the Tx methods check again so
// that no caller can key an event by anything else.
func checkActionID(actionID string) error {
	if err := ids.CheckUUID("action ID", actionID); err != nil {
		return refuse(CodeBadInput, "%s", err.Error())
	}
	return nil
}

// checkUserText refuses empty text, text that is not UTF-8 and text over the
// event limit: the text becomes the event's, which holds at most 4000
// characters of user text.
func checkUserText(what, text string) error {
	if !utf8.ValidString(text) {
		return refuse(CodeBadInput, "%s text is not UTF-8", what)
	}
	if strings.TrimSpace(text) == "" {
		return refuse(CodeBadInput, "%s text is empty", what)
	}
	if utf8.RuneCountInString(text) > MaxFeedbackText {
		return refuse(CodeBadInput, "%s text is over %d characters", what, MaxFeedbackText)
	}
	return nil
}

func checkReviewKey(what, key string) error {
	if key == "" || !utf8.ValidString(key) || utf8.RuneCountInString(key) > MaxReviewKey {
		return refuse(CodeBadInput, "%s must be 1 to %d characters of UTF-8", what, MaxReviewKey)
	}
	return nil
}

// openTask reads a task that may still take feedback: a closed task never
// changes again, and J distills its feedback once it has closed.
func (t *Tx) openTask(planKey string) (Task, error) {
	task, err := t.Task(planKey)
	if err != nil {
		return task, err
	}
	if words.Closed(task.Status) {
		return task, refuse(CodeTaskClosed, "task is %s and never changes again", task.Status)
	}
	return task, nil
}

// noActiveAttempt guards a status change made by the user: while an attempt
// is active the task's status changes only in that attempt's terminal write,
// and a pending cancel task decides the task's end.
func (t *Tx) noActiveAttempt(planKey string, task Task) error {
	if task.CancelRequested != "" {
		return refuse(CodeCancelPending, "cancel task is pending")
	}
	active, err := t.activeAttempt(planKey)
	if err != nil {
		return err
	}
	if active != "" {
		return refuse(CodeActiveAttempt, "task status cannot change while attempt %s is active", active)
	}
	return nil
}

// openItem reads the plan of an open task whose current revision has item.
func (t *Tx) openItem(planKey string, item int) (Plan, error) {
	if _, err := t.openTask(planKey); err != nil {
		return Plan{}, err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return plan, err
	}
	return plan, t.checkItem(planKey, plan.Revision, item)
}

// checkItem refuses an item the given revision does not have.
func (t *Tx) checkItem(planKey string, revision, item int) error {
	var n int
	if err := t.queryRow(`SELECT COUNT(*) FROM plan_items WHERE plan_key = ? AND revision = ? AND item = ?`,
		planKey, revision, item).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return refuse(CodeNotFound, "plan revision %d has no item %d", revision, item)
	}
	return nil
}

// checkActionUnused refuses an action ID this plan key has already used. Each
// user action has one user_actions row and produces at most one event (rule
// 4); Store.UserAction answers a replay before the action runs, so an ID seen
// here belongs to another action, and applying it would write an action whose
// event ON CONFLICT DO NOTHING silently drops.
func (t *Tx) checkActionUnused(planKey, actionID string) error {
	var n int
	if err := t.queryRow(`SELECT (SELECT COUNT(*) FROM user_actions WHERE plan_key = ?1 AND action_id = ?2)
		+ (SELECT COUNT(*) FROM feedback_events WHERE plan_key = ?1 AND action_id = ?2)`, planKey, actionID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return refuse(CodeActionIDUsed, "%s", words.ActionIDAlreadyUsed)
	}
	return nil
}

// insertNote saves a note. Note IDs are numbered per plan key (max + 1): they
// are only unique inside their plan identity, which is why every event key
// includes the full plan key.
func (t *Tx) insertNote(planKey string, revision int, item *int, text string) (int64, error) {
	id, err := t.insertNoteRow(planKey, revision, item, text)
	if err != nil {
		return 0, err
	}
	_, err = t.bumpReview(planKey) // a note saved while a plan run is under way stops it before its next item
	return id, err
}

// insertNoteRow is insertNote without its review version bump: a
// question's note (questions.go) asks about the plan and changes nothing
// a reviewer approved.
func (t *Tx) insertNoteRow(planKey string, revision int, item *int, text string) (int64, error) {
	var id int64
	if err := t.queryRow(`SELECT COALESCE(MAX(id), 0) + 1 FROM notes WHERE plan_key = ?`, planKey).Scan(&id); err != nil {
		return 0, err
	}
	var it any
	if item != nil {
		it = *item
	}
	if _, err := t.exec(`INSERT INTO notes (plan_key, id, revision, item, text, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		planKey, id, revision, it, text, t.nowMS()); err != nil {
		return 0, err
	}
	return id, nil
}

// insertEventID inserts e and returns its ID. checkActionUnused has already
// made sure that no event holds e's key, so the row read back is e's.
func (t *Tx) insertEventID(e Event) (int64, error) {
	if err := t.insertEvent(e); err != nil {
		return 0, err
	}
	var id int64
	err := t.queryRow(`SELECT id FROM feedback_events WHERE plan_key = ? AND kind = ? AND action_id = ?`,
		e.PlanKey, e.Kind, e.ActionID).Scan(&id)
	return id, err
}
