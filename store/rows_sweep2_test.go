package store_test

import (
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestHeadIsEmptyUntilCodeIsRecorded guards Task.Head: a task with no code
// recorded (referenced_code_hash's default, store.NoCode) has no head, so
// D takes the repository's HEAD; the column's placeholder "none" must never
// reach D as a commit. Once publication records a commit, Head names it.
//
// Sweep survivor (seed 20261203): store/rows.go:Task.Head:drop-guard:d2d53e1a.
func TestHeadIsEmptyUntilCodeIsRecorded(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	task := e.task(key)
	if task.ReferencedCodeHash != store.NoCode {
		t.Fatalf("a new task's referenced code = %q, want %q", task.ReferencedCodeHash, store.NoCode)
	}
	if got := task.Head(); got != "" {
		t.Errorf("a new task's Head() = %q, want \"\" (no code recorded)", got)
	}

	const commit = "0123456789abcdef0123456789abcdef01234567"
	e.update(func(tx *store.Tx) error { return tx.RecordHistory(key, "", commit) })
	if got := e.task(key).Head(); got != commit {
		t.Errorf("after recording %s, Head() = %q", commit, got)
	}
}
