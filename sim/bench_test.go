package sim

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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
	version, attempt := lifecycle(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		v := version()
		b.StartTimer()
		attempt(b, v)
	}
}

// BenchmarkLifecyclePaired alternates one attempt through the coordinator
// and one attempt's raw contract writes (BenchmarkRawContractWrites), so
// that a machine whose speed drifts over the run (a shared one: other
// jobs, frequency scaling) weighs on both alike; its coordinator/raw
// metric is the ratio to quote.
//
//	go test ./sim -run '^$' -bench LifecyclePaired -benchtime 300x -count 8 | tee new.txt; benchstat new.txt
func BenchmarkLifecyclePaired(b *testing.B) {
	version, attempt := lifecycle(b)
	raw := rawContractWrites(b)
	var coordinator, writes time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := version()
		t0 := time.Now()
		attempt(b, v)
		t1 := time.Now()
		raw(b, i)
		coordinator, writes = coordinator+t1.Sub(t0), writes+time.Since(t1)
	}
	b.ReportMetric(float64(coordinator.Nanoseconds())/float64(b.N), "coordinator-ns/op")
	b.ReportMetric(float64(writes.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(coordinator)/float64(writes), "coordinator/raw")
}

// lifecycle is a world with one task, and attempt, which drives one
// read-only attempt of it through the coordinator, admit → running →
// completed, on the simulated D and a real SQLite file, given the task's
// state version. version reads it: the caller's read, left out of the
// timing, as it is not the runner's work.
func lifecycle(b *testing.B) (version func() int64, attempt func(b *testing.B, v int64)) {
	w, err := NewWorld(b.TempDir(), Config{Seed: 3}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		a, _ := w.Store.Attempts(store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}.Key())
		if len(a) > 0 && a[len(a)-1].State != words.Completed {
			b.Errorf("last attempt %s", a[len(a)-1].State)
		}
		w.Close()
	})
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"one"}})
	}); err != nil {
		b.Fatal(err)
	}
	key := id.Key()
	out := dadapter.Settlement{Output: []byte(`{"ok":true}`)}
	version = func() int64 {
		task, err := w.Store.Task(key)
		if err != nil {
			b.Fatal(err)
		}
		return task.StateVersion
	}
	return version, func(b *testing.B, v int64) {
		attemptID, err := w.Runner.Admit(context.Background(), runner.AdmitRequest{PlanKey: key, Kind: words.KindReview, ExpectedStateVersion: v})
		if err != nil {
			b.Fatal(err)
		}
		w.D.Handle(attemptID).Settle(out)
		w.Loop.Drain()
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
	raw := rawContractWrites(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw(b, i)
	}
}

// rawContractWrites is BenchmarkRawContractWrites's one attempt, the i-th.
func rawContractWrites(b *testing.B) func(b *testing.B, i int) {
	db := rawBenchDB(b)
	return func(b *testing.B, i int) {
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
