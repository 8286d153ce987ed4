package store

import (
	"strings"
	"time"

	"github.com/codeboost/codeboost/words"
)

// Startup recovery's durable half: it reads what a crashed process left and
// finalizes it in one transaction (startup recovery step 3), with the
// requeue claim of step 6 in that same transaction.

// ActiveAttempts lists every pending or running attempt, oldest first:
// rows a crash (or a shutdown whose terminal write failed) left unclean.
func (t *Tx) ActiveAttempts() ([]Attempt, error) {
	return t.attemptsWhere(`state IN ('pending','running')`)
}

// AllAttempts lists every attempt of this database, oldest first.
func (t *Tx) AllAttempts() ([]Attempt, error) { return t.attemptsWhere(`1`) }

// StartingPreparations lists attempts marked "preparation starting" whose
// group ID was never saved: a child may exist that nobody can identify.
func (t *Tx) StartingPreparations() ([]Attempt, error) {
	return t.attemptsWhere(`preparation_started_at IS NOT NULL AND preparation_pgid IS NULL`)
}

// attemptsWhere lists the attempts matching cond, oldest first.
func (t *Tx) attemptsWhere(cond string, args ...any) ([]Attempt, error) {
	rows, err := t.query(`SELECT `+attemptCols+` FROM attempts WHERE `+cond+` ORDER BY created_at, rowid`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ClaimRequeue sets requeue_pending: while it is set, retry and every other
// admission for the task are refused, until I3's requeue or the user's
// "Resume" clears it by compare-and-swap in the admitting transaction.
func (t *Tx) ClaimRequeue(planKey string) error {
	res, err := t.exec(`UPDATE tasks SET requeue_pending = 1 WHERE plan_key = ? AND requeue_pending = 0`, planKey)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	return t.bump(planKey)
}

// ClearPreparationStarting is --release-preparation's durable half: the
// attempt's starting mark is cleared so that the next start passes step 7.
func (t *Tx) ClearPreparationStarting(attemptID string) error {
	a, err := t.Attempt(attemptID)
	if err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE attempts SET preparation_started_at = NULL WHERE id = ? AND preparation_pgid IS NULL`, a.ID); err != nil {
		return err
	}
	return t.bump(a.PlanKey)
}

// Now is the store's clock, for recovery's deadline checks.
func (t *Tx) Now() time.Time { return t.s.now() }

// PreparationGroups lists the non-terminal attempts with a saved
// preparation group (step 2b). A terminal row's preparation has ended: a
// live process awaited every member before the terminal write, and a row
// recovery finalized had its groups stopped by that same recovery's step 2b,
// which runs first. Signalling checks for those old group IDs at every start
// would only meet reused PIDs, and one reused ID whose identity cannot be
// proven would then stop every start.
func (t *Tx) PreparationGroups() ([]Attempt, error) {
	return t.attemptsWhere(`preparation_pgid IS NOT NULL AND state IN ('pending', 'running')`)
}

// RequeueCandidates is step 6's list, in one query: every task that is not
// closed, not human-gated and has no requeue claimed yet, whose latest
// attempt was cancelled with first reason shutdown or failed "Interrupted",
// or whose plan run was cut between two items: the task is running or
// queued under a run (run_review_version set) and its latest attempt is a
// completed plan item, so the process that ran it stopped (crashed, or
// shut down at step 5a) before it admitted the next item or finished the
// run. Without that last term such a task would show running with nothing
// running after the restart. A task with a recorded rebase is listed only
// once step 4 aborted it. Sorted by plan key.
func (t *Tx) RequeueCandidates() ([]string, error) {
	if err := t.s.fp.Err("store/requeue-read"); err != nil {
		return nil, err
	}
	return t.planKeys(`SELECT t.plan_key FROM tasks t JOIN attempts a ON a.id = t.current_attempt_id
		WHERE ((a.state = 'cancelled' AND a.first_reason = 'shutdown') OR (a.state = 'failed' AND a.diagnostic LIKE ? ESCAPE '\')
			OR (a.state = 'completed' AND a.kind IN (?, ?, ?) AND t.run_review_version IS NOT NULL AND t.status IN (?, ?)))
		AND t.status NOT IN (?, ?, ?, ?, ?, ?)
		AND t.requeue_pending = 0
		AND t.rebase_in_progress IS NULL
		ORDER BY t.plan_key`,
		likePrefix(words.Interrupted),
		words.KindExecute, words.KindFix, words.KindRebaseFix, words.StatusRunning, words.StatusQueued,
		words.StatusMerged, words.StatusCancelled, words.StatusNeedsHuman, words.StatusNeedsAmendment,
		words.StatusNeedsApproval, words.StatusPossiblyAlreadyFixed)
}

// RequeueClaims lists every open task whose requeue is claimed, by this
// recovery's step 6 or by an earlier one whose start never opened
// admission (step 7's unknown preparation, step 2d's older objects): each
// waits for I3's requeue or a person's Resume, and the start that opens
// admission hands it on. A claim is listed whatever the task's status, as
// long as it is not closed; the requeue's own checks say whether it can run.
// Sorted by plan key.
func (t *Tx) RequeueClaims() ([]string, error) {
	return t.planKeys(`SELECT plan_key FROM tasks WHERE requeue_pending = 1 AND status NOT IN (?, ?) ORDER BY plan_key`,
		words.StatusMerged, words.StatusCancelled)
}

// planKeys runs a query whose one column is a plan key.
func (t *Tx) planKeys(q string, args ...any) ([]string, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func likePrefix(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s) + "%"
}
