package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codeboost/codeboost/web"
)

// TestR039V5UpgradeRunsOnDocker is the real-daemon step of R039 (v5
// upgrade) that scenarios/testdata/R039-v5-upgrade.txtar left open: a
// migrated task is admitted and runs in the real process.
//
// Contract, "Proposed storage additions": "Backfill in the same migration
// transaction. Every existing plans row gets one tasks row" (status in
// review, no budget deadline, the referenced code hash from the plan's
// snapshot head), and its follow-up checks: the migrated open task is not
// requeue-pending and its time budget has not expired.
//
// A v5 database (plans, snapshots, merge_attempts; user_version 5) holds
// the configured task's plan at revision 3 on a snapshot whose head is the
// user's HEAD, written as the older build left it. serve migrates it under
// its lock, recovers nothing and opens admission; the review load shows the
// migrated revision and the user's HEAD without recording a move; a plan
// imported over the API becomes revision 4, and start runs its item on
// Docker as an execute attempt that completes as a runner commit. The
// user's repository is byte-for-byte unchanged and no object is left. It
// fails if the backfill leaves the task unstartable (a budget deadline in
// the past, requeue pending, a status other than in review) or the
// migrated row unknown to the configured task.
func TestR039V5UpgradeRunsOnDocker(t *testing.T) {
	cli, agent, bin := begin(t)

	dir := t.TempDir()
	repo := userRepo(t, filepath.Join(dir, "repo"))
	before := digest(t, repo)
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(string(out))

	// The v5 database, as the older build left it.
	db := openDB(t, filepath.Join(dir, "cb.db"))
	for _, q := range []string{
		`CREATE TABLE plans (key TEXT PRIMARY KEY, repository_id TEXT NOT NULL, task_id TEXT NOT NULL, plan_id TEXT NOT NULL, revision INTEGER NOT NULL, snapshot_id TEXT NOT NULL, review_version INTEGER NOT NULL DEFAULT 0, UNIQUE (repository_id, task_id, plan_id))`,
		`CREATE TABLE snapshots (plan_key TEXT NOT NULL REFERENCES plans(key), id TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY (plan_key, id))`,
		`CREATE TABLE merge_attempts (id TEXT PRIMARY KEY, plan_key TEXT NOT NULL REFERENCES plans(key), state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
		`INSERT INTO plans VALUES ('e2e-repo/1/plan', 'e2e-repo', '1', 'plan', 3, 's1', 7)`,
		`INSERT INTO snapshots VALUES ('e2e-repo/1/plan', 's0', 'aaaaaaa'), ('e2e-repo/1/plan', 's1', '` + head + `')`,
		`PRAGMA user_version = 5`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	e := writeConfig(t, dir, repo, agent)
	s := startServe(t, bin, e)
	log := s.out.String()
	for _, never := range []string{"recovery: finalized", "recovery: requeue", "admission stays closed"} {
		if strings.Contains(log, never) {
			t.Errorf("the upgrade's first start says %q:\n%s", never, log)
		}
	}
	if !strings.Contains(log, "recovery: done; runner open") {
		t.Fatalf("admission did not open after the upgrade:\n%s", log)
	}
	if got := tableValue(t, filepath.Join(dir, "cb.db"), "SELECT status || ' ' || referenced_code_hash || ' ' || requeue_pending || ' ' || COALESCE(budget_deadline, 'none') FROM tasks WHERE plan_key = 'e2e-repo/1/plan'"); got != "in review "+head+" 0 none" {
		t.Fatalf("the backfilled task row: %q", got)
	}
	r := s.review(t)
	if r.Revision != 3 || r.Head != head || len(r.History) != 0 {
		t.Fatalf("the migrated task's review: revision %d, head %q, history %+v; want 3, %s, none", r.Revision, r.Head, r.History, head)
	}

	// A new revision of the plan, and the migrated task runs it on Docker.
	s.post(t, "/api/plan/import", web.PlanImport{Task: taskName, ActionID: s.actionID(), ExpectedRevision: r.Revision, Plan: `{
  "format": "codeboost-plan/1",
  "title": "After the upgrade",
  "items": [{"title": "Edit the README", "instructions": "Append a line to README.md."}]
}`})
	s.approveAll(t, 1)
	s.action(t, "start", "")
	a := s.waitAttempt(t, 1, "completed")
	r = s.review(t)
	if r.Revision != 4 || len(r.History) == 0 || r.History[len(r.History)-1].AttemptID != a.ID || r.Head != r.History[len(r.History)-1].Commit {
		t.Fatalf("after the run: revision %d, head %q, history %+v; want revision 4 and attempt %s's commit as the head", r.Revision, r.Head, r.History, a.ID)
	}
	s.stop(t, syscall.SIGTERM)
	waitNoObjects(t, cli, "after the upgraded task's run")
	if digest(t, repo) != before {
		t.Fatal("the user's repository changed")
	}
}

// tableValue is the one value a query of the database file returns.
func tableValue(t *testing.T, path, query string) string {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	var v string
	if err := db.QueryRow(query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}
