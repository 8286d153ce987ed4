package store

import (
	"database/sql"
	"errors"
	"regexp"

	"github.com/codeboost/codeboost/words"
)

// Identity is a task's full PlanIdentity. A bare taskId is never used alone:
// it is unique only inside its repository and plan.
type Identity struct {
	RepositoryID string
	TaskID       string
	PlanID       string
}

var identPart = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Key is the identity's plan key.
func (id Identity) Key() string { return id.RepositoryID + "/" + id.TaskID + "/" + id.PlanID }

func (id Identity) check() error {
	for _, p := range []string{id.RepositoryID, id.TaskID, id.PlanID} {
		if !identPart.MatchString(p) || p == "." || p == ".." {
			return refuse(CodeBadInput, "identity part %q is not a safe ID", p)
		}
	}
	return nil
}

// NewTask is what CreateTask writes.
type NewTask struct {
	Identity   Identity
	SnapshotID string
	Items      []string         // plan item titles at revision 1
	Status     words.TaskStatus // queued or in review; defaults to queued
}

// CreateTask writes a plan at revision 1 and its task.
func (t *Tx) CreateTask(n NewTask) error {
	if err := n.Identity.check(); err != nil {
		return err
	}
	status := n.Status
	if status == "" {
		status = words.StatusQueued
	}
	if !knownStatus(status) {
		return refuse(CodeBadInput, "unknown task status %q", status)
	}
	if n.SnapshotID == "" {
		return refuse(CodeBadInput, "a task needs a snapshot")
	}
	key := n.Identity.Key()
	now := t.nowMS()
	if _, err := t.exec(`INSERT INTO plans (key, repository_id, task_id, plan_id, revision, snapshot_id) VALUES (?, ?, ?, ?, 1, ?)`,
		key, n.Identity.RepositoryID, n.Identity.TaskID, n.Identity.PlanID, n.SnapshotID); err != nil {
		return err
	}
	for i, title := range n.Items {
		if _, err := t.exec(`INSERT INTO plan_items (plan_key, revision, item, title) VALUES (?, 1, ?, ?)`, key, i+1, title); err != nil {
			return err
		}
	}
	_, err := t.exec(`INSERT INTO tasks (plan_key, status, created_at, updated_at) VALUES (?, ?, ?, ?)`, key, status, now, now)
	return err
}

func knownStatus(s words.TaskStatus) bool {
	for _, k := range words.TaskStatuses {
		if k == s {
			return true
		}
	}
	return false
}

// bump increases the task's state version by one: every durable change to
// the task or its attempts does.
func (t *Tx) bump(planKey string) error {
	_, err := t.exec(`UPDATE tasks SET state_version = state_version + 1, updated_at = ? WHERE plan_key = ?`, t.nowMS(), planKey)
	return err
}

// bumpContext increases the context generation and the state version in the
// same transaction: something an attempt depends on changed.
func (t *Tx) bumpContext(planKey string) error {
	_, err := t.exec(`UPDATE tasks SET context_generation = context_generation + 1, state_version = state_version + 1,
		updated_at = ? WHERE plan_key = ?`, t.nowMS(), planKey)
	return err
}

// activeAttempt returns the task's non-terminal attempt ID, or "".
func (t *Tx) activeAttempt(planKey string) (string, error) {
	var id string
	err := t.queryRow(`SELECT id FROM attempts WHERE plan_key = ? AND state IN ('pending','running') LIMIT 1`, planKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// SetTaskStatus moves a task to another status by its own explicit action.
// A closed status never changes; while an attempt is active the task's status
// changes only in that attempt's terminal write, so this is refused.
func (t *Tx) SetTaskStatus(planKey string, status words.TaskStatus) error {
	if !knownStatus(status) {
		return refuse(CodeBadInput, "unknown task status %q", status)
	}
	if _, err := t.openTask(planKey); err != nil {
		return err
	}
	if active, err := t.activeAttempt(planKey); err != nil {
		return err
	} else if active != "" {
		return refuse(CodeActiveAttempt, "task status cannot change while attempt %s is active", active)
	}
	if status == words.StatusMerged || status == words.StatusCancelled {
		return refuse(CodeIllegal, "a task closes only by cancel task or a confirmed merge")
	}
	if _, err := t.exec(`UPDATE tasks SET status = ? WHERE plan_key = ?`, status, planKey); err != nil {
		return err
	}
	return t.bump(planKey)
}
