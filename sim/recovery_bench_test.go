package sim

import (
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRecovery10k measures startup recovery of 10,000 leftover attempt
// rows (issue 3's goal: under 2 s): a crash left one running attempt on
// each of 10,000 tasks; a restart finalizes them all in one transaction,
// hands the interrupted ones to I3 and opens admission.
func BenchmarkRecovery10k(b *testing.B) {
	const n = 10000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := crashedWith(b, n)
		b.StartTimer()
		start := time.Now()
		if err := w.Restart(); err != nil {
			b.Fatal(err)
		}
		r := w.Runner.Recovery()
		elapsed := time.Since(start)
		b.StopTimer()
		if r.Err != nil || len(r.Finalized) != n || !r.Opened() {
			b.Fatalf("recovery: err=%v finalized=%d opened=%v", r.Err, len(r.Finalized), r.Opened())
		}
		b.ReportMetric(elapsed.Seconds(), "s/recovery")
		w.Close()
	}
}

// crashedWith is a world whose runner was killed with n running attempts.
func crashedWith(b *testing.B, n int) *World {
	w, err := NewWorld(b.TempDir(), Config{Seed: 9}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := plantLeftovers(w, n); err != nil {
		b.Fatal(err)
	}
	w.Crash()
	return w
}

// plantLeftovers writes n tasks, each with one running attempt, straight
// into the database file, as a crashed runner would have left them.
func plantLeftovers(w *World, n int) error {
	db, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := w.Clock.Now().UnixMilli()
	ctx := `{"snapshotId":"s1","planId":"p","planRevision":1,"assignmentId":"unassigned","referencedCodeHash":"none","contextGeneration":0}`
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("r/t%05d/p", i)
		id := w.IDs.UUID()
		if _, err := tx.Exec(`INSERT INTO plans (key, repository_id, task_id, plan_id, revision, snapshot_id) VALUES (?, 'r', ?, 'p', 1, 's1')`, key, fmt.Sprintf("t%05d", i)); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO tasks (plan_key, status, state_version, created_at, updated_at, current_attempt_id) VALUES (?, 'running', 2, ?, ?, ?)`, key, now, now, id); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO attempts (id, plan_key, kind, phase, state, context, deadline, allocation_id, created_at, started_at)
			VALUES (?, ?, 'review', 'review', 'running', ?, ?, ?, ?, ?)`, id, key, ctx, now+int64(30*time.Minute/time.Millisecond), w.IDs.UUID(), now, now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkRecovery10kRawBaseline is the same outcome written by hand: on
// the same 10,000 planted rows, one raw SQLite transaction fails every
// running attempt "Interrupted" and sets requeue_pending on its task, with
// none of recovery's reads, guards, per-row checks, feedback or directory
// work. The ratio of the two is what the coordinator's recovery costs over
// the bare writes.
func BenchmarkRecovery10kRawBaseline(b *testing.B) {
	const n = 10000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := crashedWith(b, n)
		db, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		now := w.Clock.Now().UnixMilli()
		res, err := tx.Exec(`UPDATE attempts SET state = 'failed', diagnostic = 'Interrupted: codeboost stopped while this was running', settled_at = ? WHERE state IN ('pending', 'running')`, now)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE tasks SET requeue_pending = 1, state_version = state_version + 1 WHERE plan_key IN (SELECT plan_key FROM attempts WHERE state = 'failed')`); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if got, _ := res.RowsAffected(); got != n {
			b.Fatalf("finalized %d rows, want %d", got, n)
		}
		b.ReportMetric(elapsed.Seconds(), "s/recovery")
		db.Close()
	}
}
