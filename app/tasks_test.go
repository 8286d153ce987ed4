package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestTasksAreCreatedOnceInReview: "ensureTasks creates each configured
// task the first time the server names it, in review with an empty plan
// at revision 1" from its snapshot ("initial" unless the task names one),
// says so once, and leaves an existing task as it is; a task the Store
// cannot create stops startup with the task's name.
func TestTasksAreCreatedOnceInReview(t *testing.T) {
	_, db, _ := firstStart(t)
	tasks := []app.TaskConfig{
		{Name: "plain", Identity: app.IdentityConfig{RepositoryID: "r", TaskID: "plain", PlanID: "p"}},
		{Name: "snap", Snapshot: "s-7", Identity: app.IdentityConfig{RepositoryID: "r", TaskID: "snap", PlanID: "p"}},
	}
	for run := 1; run <= 2; run++ {
		logs, _, err := runApp(t, app.Options{DB: db, Check: true, Tasks: tasks})
		if err != nil {
			t.Fatalf("start %d: %v\n%s", run, err, logs)
		}
		for _, task := range tasks {
			if said := strings.Contains(logs, "task "+task.Name+" created (in review, no plan yet)"); said != (run == 1) {
				t.Errorf("start %d: says %s was created: %v\n%s", run, task.Name, said, logs)
			}
		}
	}
	st, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct{ task, snapshot string }{{"plain", "initial"}, {"snap", "s-7"}} {
		key := store.Identity{RepositoryID: "r", TaskID: c.task, PlanID: "p"}.Key()
		task, err := st.Task(key)
		if err != nil {
			t.Fatal(err)
		}
		var p store.Plan
		if err := st.View(func(tx *store.Tx) (err error) { p, err = tx.Plan(key); return err }); err != nil {
			t.Fatal(err)
		}
		if task.Status != words.StatusInReview || p.Revision != 1 || p.SnapshotID != c.snapshot {
			t.Errorf("%s: status %q, plan revision %d snapshot %q; want in review, 1, %q", c.task, task.Status, p.Revision, p.SnapshotID, c.snapshot)
		}
	}

	rawExec(t, db, `CREATE TRIGGER refuse BEFORE INSERT ON tasks BEGIN SELECT RAISE(ABORT, 'the disk is full'); END`)
	more := append(tasks, app.TaskConfig{Name: "late", Identity: app.IdentityConfig{RepositoryID: "r", TaskID: "late", PlanID: "p"}})
	logs, err := runBounded(t, app.Options{DB: db, Check: true, Tasks: more})
	if err == nil || !strings.Contains(err.Error(), "task late: ") || !strings.Contains(err.Error(), "the disk is full") {
		t.Fatalf("a task the Store cannot create: %v\n%s", err, logs)
	}
}
