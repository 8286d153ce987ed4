package sim

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// BenchmarkAttemptLifecycle drives one attempt admit → running → completed
// through the coordinator on the simulated D and a real SQLite file.
// BenchmarkRawTransactions does the same three SQLite transactions raw, on
// the same pragmas, as the baseline the note reports the ratio against.
func BenchmarkAttemptLifecycle(b *testing.B) {
	w, err := NewWorld(b.TempDir(), Config{Seed: 3}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}})
	}); err != nil {
		b.Fatal(err)
	}
	key := id.Key()
	out := dadapter.Settlement{Output: []byte(`{"ok":true}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer() // the caller's view of the state version is not the runner's work
		task, _ := w.Store.Task(key)
		b.StartTimer()
		attemptID, err := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: key, Kind: words.KindReview, ExpectedStateVersion: task.StateVersion})
		if err != nil {
			b.Fatal(err)
		}
		w.D.Handle(attemptID).Settle(out)
		w.Loop.Drain()
	}
	b.StopTimer()
	a, _ := w.Store.Attempts(key)
	if a[len(a)-1].State != words.Completed {
		b.Fatalf("last attempt %s", a[len(a)-1].State)
	}
}

// BenchmarkRawContractWrites is a second baseline: the durable writes the
// contract requires for one read-only attempt, each its own transaction as
// the contract orders them, done raw: admission; the "preparation starting"
// mark and the saved group around the storage helper; the storage baseline
// with the clone's mark (one transaction, as the runner writes them); the
// clone's group; pending → running; publication; the terminal write. Against it, the ratio is the coordinator's own cost
// (guards, rereads, events) over writes it may not skip.
func BenchmarkRawContractWrites(b *testing.B) {
	db := rawBenchDB(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("a%d", i)
		tx := func(stmts ...string) { rawTx(b, db, stmts...) }
		tx(`INSERT INTO attempts VALUES ('`+id+`', 'r/t/p', 'pending', '{}', NULL)`,
			`UPDATE tasks SET state_version = state_version + 1, current_attempt_id = '`+id+`'`)
		for _, set := range []string{`context = 'mark'`, `context = 'group'`, `context = 'baseline+mark'`, `context = 'group'`} {
			tx(`UPDATE attempts SET `+set+` WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
		}
		tx(`UPDATE attempts SET state = 'running' WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
		tx(`UPDATE attempts SET result = '{"ok":true}' WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
		tx(`UPDATE attempts SET state = 'completed' WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
	}
}

func rawBenchDB(b *testing.B) *sql.DB {
	db, err := sql.Open("sqlite", store.DSN(filepath.Join(b.TempDir(), "raw.db")))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE tasks (plan_key TEXT PRIMARY KEY, state_version INTEGER, current_attempt_id TEXT);
		CREATE TABLE attempts (id TEXT PRIMARY KEY, plan_key TEXT, state TEXT, context TEXT, result BLOB);
		INSERT INTO tasks VALUES ('r/t/p', 0, NULL);`); err != nil {
		b.Fatal(err)
	}
	return db
}

func rawTx(b *testing.B, db *sql.DB, stmts ...string) {
	t, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := t.Exec(s); err != nil {
			b.Fatal(err)
		}
	}
	if err := t.Commit(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkRawTransactions(b *testing.B) {
	db := rawBenchDB(b)
	tx := func(stmts ...string) { rawTx(b, db, stmts...) }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("a%d", i)
		tx(`INSERT INTO attempts VALUES ('`+id+`', 'r/t/p', 'pending', '{}', NULL)`,
			`UPDATE tasks SET state_version = state_version + 1, current_attempt_id = '`+id+`'`)
		tx(`UPDATE attempts SET state = 'running' WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
		tx(`UPDATE attempts SET state = 'completed', result = '{"ok":true}' WHERE id = '`+id+`'`, `UPDATE tasks SET state_version = state_version + 1`)
	}
}
