package store

import (
	"database/sql"
	"errors"
	"time"

	"github.com/codeboost/codeboost/ids"
)

// Questions (Ask): "Questions (runner/questions.ts, QuestionAnswer) …
// pending, complete, failed … Fixed when F moves Ask onto D's contract".
// A question is the user's note and one read-only question attempt of D
// that answers it. Its row moves pending → running → completed | failed,
// never back; a failed row says whether asking again can help
// (retryable: "Server stopped" is). Its lifecycle is not the task's: the
// task's state version moves when the question's note is saved, not with
// the question's own transitions, and a question never holds or frees a
// runner slot.

// Question states.
const (
	QuestionPending   = "pending"
	QuestionRunning   = "running"
	QuestionCompleted = "completed"
	QuestionFailed    = "failed"
)

// MaxAnswer bounds a saved answer; a longer one is cut, marked with "…".
const MaxAnswer = 64 << 10

// Question is a questions row with its note.
type Question struct {
	ID           string
	PlanKey      string
	NoteID       int64
	Item         *int
	Text         string
	State        string
	Answer       string
	Reason       string
	Retryable    bool
	AllocationID string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Terminal reports whether the question has its final row.
func (q Question) Terminal() bool {
	return q.State == QuestionCompleted || q.State == QuestionFailed
}

// AskQuestion saves the question's note (on item, or on the plan when
// item is nil) and its pending row, in the caller's transaction (the
// user action's). The note changes nothing a reviewer approved, so the
// review version stays; the state version moves, as for any note.
func (t *Tx) AskQuestion(planKey, id, allocationID string, item *int, text string) (Question, error) {
	if err := ids.CheckUUID("question ID", id); err != nil {
		return Question{}, refuse(CodeBadInput, "%s", err.Error())
	}
	if err := ids.CheckUUID("allocation ID", allocationID); err != nil {
		return Question{}, refuse(CodeBadInput, "%s", err.Error())
	}
	if err := checkUserText("question", text); err != nil {
		return Question{}, err
	}
	if _, err := t.openTask(planKey); err != nil {
		return Question{}, err
	}
	plan, err := t.Plan(planKey)
	if err != nil {
		return Question{}, err
	}
	if item != nil {
		if err := t.checkItem(planKey, plan.Revision, *item); err != nil {
			return Question{}, err
		}
	}
	noteID, err := t.insertNoteRow(planKey, plan.Revision, item, text)
	if err != nil {
		return Question{}, err
	}
	now := t.nowMS()
	if _, err := t.exec(`INSERT INTO questions (id, plan_key, note_id, state, allocation_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, id, planKey, noteID, QuestionPending, allocationID, now, now); err != nil {
		return Question{}, err
	}
	if err := t.bump(planKey); err != nil {
		return Question{}, err
	}
	return t.Question(id)
}

// StartQuestion is pending → running, when D's start returned a handle.
func (t *Tx) StartQuestion(id string) error {
	return t.moveQuestion(id, []string{QuestionPending}, QuestionRunning, "", "", false)
}

// FinishAnswer is running (or pending, when the running write failed) →
// completed with the agent's answer (cut at
// MaxAnswer). It is the question coordinator's settlement write: after
// shutdown step 3 it goes through the shutdown capability.
func (t *Tx) FinishAnswer(id, answer string) error {
	return t.moveQuestion(id, []string{QuestionPending, QuestionRunning}, QuestionCompleted, cut(answer, MaxAnswer), "", false)
}

// FailQuestion ends a pending or running question failed, with a bounded
// reason and whether asking again can help.
func (t *Tx) FailQuestion(id, reason string, retryable bool) error {
	return t.moveQuestion(id, []string{QuestionPending, QuestionRunning}, QuestionFailed, "", bound(reason), retryable)
}

func (t *Tx) moveQuestion(id string, from []string, to, answer, reason string, retryable bool) error {
	q, err := t.Question(id)
	if err != nil {
		return err
	}
	legal := false
	for _, f := range from {
		legal = legal || q.State == f
	}
	if !legal {
		return refuse(CodeIllegal, "question %s is %s; it cannot become %s", id, q.State, to)
	}
	var ans, why any
	if to == QuestionCompleted {
		ans = answer
	}
	if to == QuestionFailed {
		why = reason
	}
	_, err = t.exec(`UPDATE questions SET state = ?, answer = ?, reason = ?, retryable = ?, updated_at = ? WHERE id = ?`,
		to, ans, why, retryable, t.nowMS(), id)
	return err
}

// FailLeftoverQuestions ends every question an earlier process left
// pending or running: its agent ran in that process's Ask and nothing can
// settle it now. Asking again can help. It returns their IDs.
func (t *Tx) FailLeftoverQuestions(reason string) ([]string, error) {
	rows, err := t.query(`SELECT id FROM questions WHERE state IN (?, ?) ORDER BY created_at, rowid`, QuestionPending, QuestionRunning)
	if err != nil {
		return nil, err
	}
	var left []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		left = append(left, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range left {
		if err := t.FailQuestion(id, reason, true); err != nil {
			return nil, err
		}
	}
	return left, nil
}

const questionColumns = `q.id, q.plan_key, q.note_id, n.item, n.text, q.state, COALESCE(q.answer, ''), COALESCE(q.reason, ''),
	q.retryable, q.allocation_id, q.created_at, q.updated_at`

func scanQuestion(scan func(...any) error) (Question, error) {
	var q Question
	var item sql.NullInt64
	var created, updated int64
	if err := scan(&q.ID, &q.PlanKey, &q.NoteID, &item, &q.Text, &q.State, &q.Answer, &q.Reason,
		&q.Retryable, &q.AllocationID, &created, &updated); err != nil {
		return q, err
	}
	if item.Valid {
		i := int(item.Int64)
		q.Item = &i
	}
	q.CreatedAt, q.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return q, nil
}

// Question reads one question.
func (t *Tx) Question(id string) (Question, error) {
	q, err := scanQuestion(t.queryRow(`SELECT `+questionColumns+` FROM questions q
		JOIN notes n ON n.plan_key = q.plan_key AND n.id = q.note_id WHERE q.id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return q, refuse(CodeNotFound, "no question %s", id)
	}
	return q, err
}

// Questions reads a task's questions, oldest first.
func (t *Tx) Questions(planKey string) ([]Question, error) {
	rows, err := t.query(`SELECT `+questionColumns+` FROM questions q
		JOIN notes n ON n.plan_key = q.plan_key AND n.id = q.note_id
		WHERE q.plan_key = ? ORDER BY q.created_at, q.rowid`, planKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Question
	for rows.Next() {
		q, err := scanQuestion(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
