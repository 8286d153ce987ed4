package store_test

// Opening the database and the write gate (shutdown step 3).

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	"github.com/google/go-cmp/cmp"
)

func TestWriteGate(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	capability := e.s.ShutdownCapability()
	a := e.running(key, words.KindReview)
	e.s.CloseWriteGate()
	before := e.snap(key)

	ran := false
	if err := e.s.Update(func(tx *store.Tx) error { ran = true; return nil }); !errors.Is(err, store.ErrShuttingDown) {
		t.Errorf("Update after CloseWriteGate: %v, want ErrShuttingDown", err)
	}
	if ran {
		t.Errorf("Update ran its function behind a closed gate")
	}
	if _, err := e.s.Admit(e.admitReq(key, words.KindReview)); !errors.Is(err, store.ErrShuttingDown) {
		t.Errorf("Admit after CloseWriteGate: %v, want ErrShuttingDown", err)
	}
	_, err := e.s.UserAction(store.Action{PlanKey: key, ActionID: actionA, Kind: "stop"}, func(tx *store.Tx) (store.Response, error) {
		ran = true
		return store.Response{}, nil
	})
	if !errors.Is(err, store.ErrShuttingDown) {
		t.Errorf("UserAction after CloseWriteGate: %v, want ErrShuttingDown", err)
	}
	if ran {
		t.Errorf("UserAction ran behind a closed gate")
	}
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("writes behind the closed gate changed the database:\n%s", diff)
	}

	// Reads never wait behind the gate.
	if got := e.task(key); got.StateVersion != before.Task.StateVersion {
		t.Errorf("read after the gate: %+v", got)
	}

	// The capability's writes pass.
	if err := capability.Update(func(tx *store.Tx) error {
		if err := tx.RecordFirstReason(a.ID, words.ReasonShutdown, ""); err != nil {
			return err
		}
		return tx.Finish(a.ID, store.Terminal{State: words.Cancelled, Diagnostic: words.StoppedByShutdown})
	}); err != nil {
		t.Fatalf("capability Update: %v", err)
	}
	if got := e.attempt(a.ID); got.State != words.Cancelled || got.FirstReason != words.ReasonShutdown {
		t.Errorf("capability write not saved: %s %s", got.State, got.FirstReason)
	}
	// The plain Update stays closed after a capability write.
	if err := e.s.Update(func(tx *store.Tx) error { return nil }); !errors.Is(err, store.ErrShuttingDown) {
		t.Errorf("Update after a capability write: %v", err)
	}
	var zero store.Capability
	if err := zero.Update(func(tx *store.Tx) error { return nil }); err == nil {
		t.Errorf("a zero Capability wrote")
	}
}

func TestShutdownCapabilityOnce(t *testing.T) {
	e := newEnv(t)
	e.s.ShutdownCapability()
	defer func() {
		if recover() == nil {
			t.Errorf("a second ShutdownCapability call did not panic")
		}
	}()
	e.s.ShutdownCapability()
}

func TestOpenPragmas(t *testing.T) {
	e := newEnv(t)
	if mode := e.rawString(`PRAGMA journal_mode`); mode != "wal" {
		t.Errorf("journal_mode %q, want wal", mode)
	}
	if v := e.rawInt(`PRAGMA user_version`); v != 11 {
		t.Errorf("user_version %d, want 11", v)
	}
	// Foreign keys are on in the Store's own connection: a ledger entry for
	// a plan that does not exist is refused by the schema.
	err := e.s.Update(func(tx *store.Tx) error { return tx.RecordHistory("repo/ghost/plan", "", "c0ffee") })
	if err == nil {
		t.Errorf("a history row for a missing plan was written: foreign keys are off")
	} else if !strings.Contains(strings.ToLower(err.Error()), "foreign key") {
		t.Errorf("want a foreign key error, got %v", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM history`); n != 0 {
		t.Errorf("%d history rows", n)
	}
}

func TestOpenUnknownSchemaVersion(t *testing.T) {
	for _, v := range []int{4, 12, 99} { // 5 to 10 are migrated: migrate_test.go, migrate_v6_test.go
		path := filepath.Join(t.TempDir(), "future.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE other (x); PRAGMA user_version = ` + strconv.Itoa(v)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
		if err == nil {
			s.Close()
			t.Errorf("user_version %d: Open succeeded", v)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "schema version "+strconv.Itoa(v)) || !strings.Contains(msg, "not supported") {
			t.Errorf("user_version %d: error %q does not name the version and say it is not supported", v, msg)
		}
		// The file is left as it was.
		db, _ = sql.Open("sqlite", "file:"+path)
		var got int
		if err := db.QueryRow(`PRAGMA user_version`).Scan(&got); err != nil || got != v {
			t.Errorf("user_version %d became %d (%v)", v, got, err)
		}
		var tables int
		db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tasks'`).Scan(&tables)
		if tables != 0 {
			t.Errorf("user_version %d: Open created the schema anyway", v)
		}
		db.Close()
	}
}

func TestOpenRequiresClockAndIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if _, err := store.Open(path, store.Options{IDs: ids.NewSeeded(1)}); err == nil {
		t.Errorf("Open without a clock succeeded")
	}
	if _, err := store.Open(path, store.Options{Now: newClock().Now}); err == nil {
		t.Errorf("Open without an ID source succeeded")
	}
}

// TestReopenKeepsData: a second Open of the same file migrates nothing and
// sees what the first wrote; a closed store refuses calls.
func TestReopenKeepsData(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	a := e.admit(key, words.KindReview)
	before := e.snap(key)
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Update(func(tx *store.Tx) error { return nil }); err == nil {
		t.Errorf("Update on a closed store succeeded")
	}
	s2, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	e.s = s2
	if diff := cmp.Diff(before, e.snap(key)); diff != "" {
		t.Errorf("reopened database differs:\n%s", diff)
	}
	if got := e.attempt(a.ID).State; got != words.Pending {
		t.Errorf("state %s", got)
	}
}

// A v6 database created before the approvals table and the active-attempt
// index were added gains both when it is opened, and keeps its rows.
func TestOpenCompletesAnEarlierV6Schema(t *testing.T) {
	e := newEnv(t)
	key := e.newTask("")
	e.s.Close()
	e.rawExec(`DROP TABLE approvals`)
	e.rawExec(`DROP INDEX attempts_active`)
	s, err := store.Open(e.path, store.Options{Now: e.clock.Now, IDs: ids.NewSeeded(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(func(tx *store.Tx) error { _, err := tx.Approve(key, 1); return err }); err != nil {
		t.Fatalf("Approve on the completed schema: %v", err)
	}
	if n := e.rawInt(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'attempts_active'`); n != 1 {
		t.Errorf("attempts_active index: %d", n)
	}
}

// TestOpenNewDatabaseWhoseWriteLockIsHeld: another process holds the write
// lock of a new (version 0) database past the busy timeout, so creating
// the schema cannot begin. Open returns that error, and the file stays a
// version-0 database with no table, for a later Open to create.
func TestOpenNewDatabaseWhoseWriteLockIsHeld(t *testing.T) {
	t.Parallel() // it waits out the busy timeout (5 s)
	path := filepath.Join(t.TempDir(), "codeboost.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err == nil {
		s.Close()
		t.Fatal("Open created the schema under another process's write lock")
	}
	if !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "busy") {
		t.Errorf("Open: %v, want the busy database's error", err)
	}
	if _, err := raw.Exec(`ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var version, tables int
	raw.QueryRow(`PRAGMA user_version`).Scan(&version)
	raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master`).Scan(&tables)
	if version != 0 || tables != 0 {
		t.Fatalf("a failed Open left version %d and %d tables", version, tables)
	}
	s, err = store.Open(path, store.Options{Now: newClock().Now, IDs: ids.NewSeeded(1)})
	if err != nil {
		t.Fatalf("Open once the lock is released: %v", err)
	}
	s.Close()
}
