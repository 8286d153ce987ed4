package store_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	_ "modernc.org/sqlite"
)

// TestChangeTokenFollowsEveryCommit: the token changes with every commit of
// this Store and of any other connection, and with nothing else, so a
// status read cached under it is never served after the rows changed.
func TestChangeTokenFollowsEveryCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cb.db")
	st, err := store.Open(path, store.Options{Now: time.Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	token := func() store.ChangeToken {
		tk, err := st.ChangeToken()
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	t0 := token()
	if err := st.View(func(tx *store.Tx) error { _, err := tx.UserActionCount("x"); return err }); err != nil {
		t.Fatal(err)
	}
	if token() != t0 {
		t.Fatalf("a read changed the token")
	}
	id := store.Identity{RepositoryID: "r", TaskID: "t", PlanID: "p"}
	if err := st.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Items: []string{"a"}, Status: words.StatusInReview})
	}); err != nil {
		t.Fatal(err)
	}
	t1 := token()
	if t1 == t0 {
		t.Fatalf("a commit of this Store left the token unchanged")
	}
	if err := st.Update(func(tx *store.Tx) error { return errRollback }); err == nil || token() != t1 {
		t.Fatalf("a rolled-back transaction changed the token")
	}
	other, err := sql.Open("sqlite", store.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`UPDATE tasks SET state_version = state_version + 1`); err != nil {
		t.Fatal(err)
	}
	if token() == t1 {
		t.Fatalf("a commit by another connection left the token unchanged")
	}
}

var errRollback = sqlErr("rolled back")

type sqlErr string

func (e sqlErr) Error() string { return string(e) }
