package store

import (
	"database/sql"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/codeboost/codeboost/words"
)

// MaxFeedbackText bounds the user text an event carries.
const MaxFeedbackText = 4000

// Event is one feedback event: one piece of feedback the user wrote or
// chose, append-only, unique on (plan key, kind, action ID).
type Event struct {
	ID           int64
	PlanKey      string
	ActionID     string
	PlanRevision int
	SnapshotID   string
	Item         *int
	Kind         string
	Text         string // user text only, or ""
	SourceRef    string
	Supersedes   int64 // 0 for none
	CreatedAt    time.Time
}

// insertEvent appends an event stamped with the plan's present revision and
// snapshot. It is called only inside the transaction of the action (or the
// confirmed outcome) that caused it.
func (t *Tx) insertEvent(e Event) error {
	if utf8.RuneCountInString(e.Text) > MaxFeedbackText {
		return refuse(CodeBadInput, "feedback text is over %d characters", MaxFeedbackText)
	}
	if err := t.queryRow(`SELECT revision, snapshot_id FROM plans WHERE key = ?`, e.PlanKey).Scan(&e.PlanRevision, &e.SnapshotID); err != nil {
		return err
	}
	var item, supersedes any
	if e.Item != nil {
		item = *e.Item
	}
	if e.Supersedes != 0 {
		supersedes = e.Supersedes
	}
	res, err := t.exec(`INSERT INTO feedback_events (plan_key, action_id, plan_revision, snapshot_id, item, kind, text, source_ref, supersedes, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (plan_key, kind, action_id) DO NOTHING`,
		e.PlanKey, e.ActionID, e.PlanRevision, e.SnapshotID, item, e.Kind, nullStr(e.Text), e.SourceRef, supersedes, t.nowMS())
	if err != nil {
		return err
	}
	_ = res
	return nil
}

// FeedbackEvents returns the events of one identity, oldest first, and only
// after its task-closed event exists (lane J's read). It scopes every row by
// the full plan key, never by a bare task ID.
func (s *Store) FeedbackEvents(id Identity) ([]Event, error) {
	var out []Event
	err := s.View(func(tx *Tx) error {
		key := id.Key()
		var closed int
		if err := tx.queryRow(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = ?`, key, words.EventTaskClosed).Scan(&closed); err != nil {
			return err
		}
		if closed == 0 {
			return refuse(CodeIllegal, "feedback events of %s are read only after its task-closed event", key)
		}
		evs, err := tx.events(`SELECT id, plan_key, action_id, plan_revision, snapshot_id, item, kind, COALESCE(text, ''), source_ref, COALESCE(supersedes, 0), created_at
			FROM feedback_events WHERE plan_key = ? ORDER BY id`, key)
		out = evs
		return err
	})
	return out, err
}

func (t *Tx) events(q string, args ...any) ([]Event, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var item sql.NullInt64
		var created int64
		if err := rows.Scan(&e.ID, &e.PlanKey, &e.ActionID, &e.PlanRevision, &e.SnapshotID, &item, &e.Kind, &e.Text, &e.SourceRef, &e.Supersedes, &created); err != nil {
			return nil, err
		}
		e.Item = intPtr(item)
		e.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// EventCount counts a task's events of one kind (for checks and scenarios).
func (t *Tx) EventCount(planKey, kind string) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM feedback_events WHERE plan_key = ? AND kind = ?`, planKey, kind).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}
