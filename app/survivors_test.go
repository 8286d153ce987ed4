package app_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
)

// Tests for mutants of package app that survived the sweep: each names the
// mutant it kills.

// TestRunRefusesAPathThatChangedAfterTheLock guards decision 1's step 4:
// after the Store opened, "the database path still names the file
// identified and locked in step 1 (same device and inode, a regular file,
// one link). On a mismatch startup exits before admission." A second hard
// link made to the database between step 1 (the file identified and
// locked) and step 4 must stop startup with lock.ErrChanged: nothing is
// recovered or served, and the lock is given back.
//
// To make the change land in that window without timing, the test holds
// a write transaction on the new (still empty, WAL) database: Run's step 1
// and the OS lock do not need it, but the Store's migration (step 3)
// waits on it under its busy timeout. The test links the file once the
// runner-lock file exists (step 2 ran, so step 1 did), and only then lets
// the migration go on; step 4 therefore always runs after the link.
//
// Kills app/app.go:App.Run:ignore-error:75166f97 (verifyPath's error
// ignored: startup runs on with the path naming a hard-linked file).
func TestRunRefusesAPathThatChangedAfterTheLock(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	db := filepath.Join(dir, "codeboost.db")

	// The database exists (WAL, no schema yet) and a write transaction on
	// it holds the migration back.
	raw, err := sql.Open("sqlite", store.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held {
			conn.ExecContext(ctx, "ROLLBACK")
		}
	}()

	out := &syncBuffer{}
	log, _ := app.NewLogger(out, app.LogText)
	a, err := app.New(app.Options{DB: db, Check: true, Log: log, Stderr: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run() }()

	// Step 2 has made the runner-lock file: step 1 identified the file.
	locks := filepath.Join(home, ".codeboost", "locks")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if m, _ := filepath.Glob(filepath.Join(locks, "*.runner-lock")); len(m) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended before it took the lock: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run never took the lock:\n%s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Link(db, filepath.Join(dir, "alias.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	held = false

	err = <-done
	logs := out.String()
	if !errors.Is(err, lock.ErrChanged) || !strings.Contains(err.Error(), "links") {
		t.Fatalf("Run with the database hard-linked after the lock: %v, want %v (a second link)\n%s", err, lock.ErrChanged, logs)
	}
	if strings.Contains(logs, "recovery:") || strings.Contains(logs, "serving ") {
		t.Errorf("startup went on past the path check:\n%s", logs)
	}
	// The lock was given back: with the second link gone, the next
	// starter takes it.
	if err := os.Remove(filepath.Join(dir, "alias.db")); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Acquire(db, lock.Options{})
	if err != nil {
		t.Fatalf("after the refused start the lock is still held: %v", err)
	}
	l.Release()
}

// askFailingEngine is an engine whose D recovery fails for every owner but
// the runner's, so the runner recovers and Ask's recovery (under Ask's own
// owner token) fails.
type askFailingEngine struct {
	quietEngine
	runner string // the runner owner token
}

func (e *askFailingEngine) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	if owner == e.runner {
		e.quietEngine.RecoverLeftovers(ctx, owner, done)
		return
	}
	go done(dadapter.RecoveryReport{}, errors.New("the engine lost its labels"))
}

// TestAsksFailedRecoveryIsLoggedAsAnError guards openAsk's rule "A failure
// is logged and leaves questions closed; the server runs on": when Ask's
// recovery ends in an error (here D's recovery for Ask's owner fails),
// startup goes on to serve and the log has an error record saying the
// questions are closed until a restart, with the error. Ask's own trace of
// the failure is an INFO record; in the JSON log (--log-format json, "for
// a machine") the ERROR record is what a watcher of errors sees.
//
// Kills app/ask.go:App.openAsk:ignore-error:0639074c (OpenErr's error
// ignored: no error record, only Ask's INFO trace).
func TestAsksFailedRecoveryIsLoggedAsAnError(t *testing.T) {
	_, db, token := firstStart(t)
	out := &syncBuffer{}
	log, _ := app.NewLogger(out, app.LogJSON)
	a, err := app.New(app.Options{DB: db, Check: true, Log: log, Stderr: &syncBuffer{},
		Runner: app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:test"}},
		Engine: func(context.Context, app.EngineOptions) (app.Engine, error) {
			return &askFailingEngine{runner: token}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(); err != nil {
		t.Fatalf("Ask's failed recovery stopped startup: %v\n%s", err, out.String())
	}
	var closed, serving, traced bool
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		msg, _ := rec["msg"].(string)
		errText, _ := rec["err"].(string)
		switch {
		case rec["level"] == "ERROR" && strings.Contains(msg, "questions are closed") &&
			strings.Contains(errText, "the engine lost its labels"):
			closed = true
		case strings.HasPrefix(msg, "ask: recovery failed"):
			traced = true
		case strings.HasPrefix(msg, "serving "):
			serving = true
		}
	}
	if !traced || !serving {
		t.Fatalf("want Ask's recovery to fail and startup to serve on:\n%s", out.String())
	}
	if !closed {
		t.Errorf("no ERROR record says the questions are closed, with D's error:\n%s", out.String())
	}
}

// TestReleasePreparationKeepsTheMarkWhenTheDirectoryCannotBeRemoved
// guards --release-preparation's order: the attempt's directory is removed,
// and only then is its starting mark cleared (startup recovery step 7:
// admission stays closed until the preparation is released). A directory
// that cannot be removed is a failed release: the error is returned and
// the mark stays. Here the attempt directory's parent is a file, so
// RemoveAll fails with ENOTDIR even for root (a permission denial would
// not fail for root).
//
// Kills app/release.go:App.releasePreparation:ignore-error:38355bc2
// (RemoveAll's error ignored: the mark is cleared and the release reported
// done).
func TestReleasePreparationKeepsTheMarkWhenTheDirectoryCannotBeRemoved(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc here")
	}
	dir, db, token := firstStart(t)
	id, adir := startingPreparation(t, db, dir, token, true, 0)
	attempts := filepath.Dir(adir)
	if err := os.RemoveAll(attempts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(attempts, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, _, err := runApp(t, app.Options{DB: db, ReleasePreparation: id})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("release with an attempt directory that cannot be removed: %v, want the removal's error\n%s", err, logs)
	}
	if strings.Contains(logs, "released the preparation") {
		t.Errorf("the release was reported done:\n%s", logs)
	}
	if !stillStarting(t, db, id) {
		t.Errorf("the starting mark of %s was cleared though its directory was not removed", id)
	}
}
