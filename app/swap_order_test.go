package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/nodocker"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/runner/lock"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Tests for the order of two adjacent steps, where the contract or the
// code's comments require one: each names the swap-steps mutant it kills.

// slowEngine is an engine whose D recovery reports only after delay, as a
// Docker engine listing and removing leftovers does; it counts its Close.
type slowEngine struct {
	nodocker.D
	delay   time.Duration
	closed  *int
	onClose func()
}

func (e slowEngine) CheckImage(context.Context, string) error { return nil }

func (e slowEngine) Close() error {
	*e.closed++
	if e.onClose != nil {
		e.onClose()
	}
	return nil
}

func (e slowEngine) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	go func() {
		time.Sleep(e.delay)
		e.D.RecoverLeftovers(ctx, owner, done)
	}()
}

func startWithSlowEngine(t *testing.T, delay time.Duration, onClose ...func(db string)) (*App, *int) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	closed := new(int)
	db := filepath.Join(t.TempDir(), "codeboost.db")
	var hook func()
	if len(onClose) > 0 {
		hook = func() { onClose[0](db) }
	}
	a, err := New(Options{DB: db, Check: true, Stderr: os.Stderr,
		Runner: RunnerConfig{Agent: AgentConfig{Image: "codeboost-agent:test", CommitLimit: 1 << 20}},
		Engine: func(context.Context, EngineOptions) (Engine, error) {
			return slowEngine{delay: delay, closed: closed, onClose: hook}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a, closed
}

// TestEngineClosedAtStepSeven: step 7 closes the container engine's client
// once every handle has settled, and only then forgets it (closeStore).
//
// Kills app/shutdown.go:App.closeStore:swap-steps:236265c5 (the engine
// forgotten first: its Close is called on nil, a panic), which
// TestLivePlanningSeedsFromTheTasksHead, the one other start with an
// engine, kills too.
func TestEngineClosedAtStepSeven(t *testing.T) {
	a, closed := startWithSlowEngine(t, 0)
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	if *closed != 1 || a.engine != nil {
		t.Errorf("after shutdown the engine was closed %d times (engine %v); want once, and forgotten", *closed, a.engine)
	}
}

// TestRecoveryDurationCoversTheWholeRecovery: recoveryTook is "how long
// startup recovery took", shown as codeboost_recovery_duration_seconds.
// Coordinator.Recover only starts recovery (its first event); D's recovery
// and the phases after it run in later events, and Recovery() waits for
// their end. So the duration can only be measured once Recovery() has
// returned. It was measured before (found by the swap-steps triage), so an
// engine whose recovery takes 300 ms was reported as a recovery of about
// 0 s (711 µs measured); this test failed on that code.
func TestRecoveryDurationCoversTheWholeRecovery(t *testing.T) {
	const delay = 300 * time.Millisecond
	a, _ := startWithSlowEngine(t, delay)
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	if a.recoveryTook < delay {
		t.Errorf("recovery took at least %v (D's recovery alone), but %v was recorded", delay, a.recoveryTook)
	}
}

// TestLockHeldUntilStepSevenEnds: step 8 releases the single-runner lock
// only after step 7 has given everything else back (the loop, the engine's
// client, the Store): until then no other runner can take the database
// (decision 1). The engine's Close, in step 7, finds the lock still held.
//
// Kills app/shutdown.go:App.shutdown:swap-steps:5f601ad6 (the lock
// released before the Store and the engine are closed).
func TestLockHeldUntilStepSevenEnds(t *testing.T) {
	var took []error
	a, closed := startWithSlowEngine(t, 0, func(db string) {
		l, err := lock.Acquire(db, lock.Options{})
		if err == nil {
			l.Release()
		}
		took = append(took, err)
	})
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	if *closed != 1 || len(took) != 1 || !errors.Is(took[0], lock.ErrHeld) {
		t.Errorf("while step 7 closed the engine (%d closes), another runner taking the lock got %v; want %v", *closed, took, lock.ErrHeld)
	}
}

// jobServer is the review server's part in shutdown, recording what it
// finds at each step about the demo task's running job.
type jobServer struct {
	a   *App
	key string

	mu     sync.Mutex
	events []string
}

func (s *jobServer) add(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *jobServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

func (s *jobServer) SetStopping()                { s.add("1 stopping") }
func (s *jobServer) BeginDrain() <-chan struct{} { s.add("2 drain"); return closed() }
func (s *jobServer) AbortRequests() {
	st, err := s.a.runner.Status(s.key)
	s.add(fmt.Sprintf("3 abort requests: job stopped %v", err != nil || st.StopRequested != nil))
}
func (s *jobServer) RequestsEnded() <-chan struct{} { s.add("3 await request work"); return closed() }
func (s *jobServer) Close() {
	select {
	case <-s.a.runner.Drained():
		s.add("6 close: every job ended")
	default:
		s.add("6 close: a job still running")
	}
}

// lineLog is a text log the test reads while the app writes it.
type lineLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestShutdownStopsARunningJobAtStepFourAndAwaitsItBeforeStepSix: with the
// demo agent's attempt running, shutdown stops the job in step 4, after
// step 3 aborted the requests and closed the write gate ("Jobs run on until
// step 4, so that a request drained in step 2 still meets its job as it
// was"), then awaits its end (4, 5) before step 6 closes the server; the
// attempt ends with the first reason shutdown, within the demo's half
// second of SIGTERM grace, not after the run's own 6 to 12 seconds.
//
// Kills app/shutdown.go:App.shutdown:swap-steps:206e1f03 (the job stopped
// before step 3), 0d9c43e5 (its end awaited before it is stopped: the run
// goes on to its own end) and 9f210216 (the server closed before the job
// ended).
func TestShutdownStopsARunningJobAtStepFourAndAwaitsItBeforeStepSix(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "codeboost.db")
	logs := &lineLog{}
	log, err := NewLogger(logs, LogText)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{DB: db, Demo: true, Tasks: DemoTasks(), Log: log, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	key := DemoTasks()[0].identity().Key()
	srv := &jobServer{a: a, key: key}
	a.server = srv
	done := make(chan error, 1)
	go func() { done <- a.Run() }()
	waitUntil := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s\n%s", what, logs)
			}
		}
	}
	waitUntil("startup", 20*time.Second, func() bool { return strings.Contains(logs.String(), "demo: open") })
	st, err := a.runner.Status(key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.runner.Start(context.Background(), runner.ActionRequest{PlanKey: key, ActionID: "00000000-0000-4000-8000-000000000001",
		ExpectedStateVersion: st.Task.StateVersion, ExpectedReviewVersion: st.ReviewVersion})
	if err != nil || resp.AttemptID == "" {
		t.Fatalf("start: %+v %v\n%s", resp, err, logs)
	}
	waitUntil("the attempt to run", 20*time.Second, func() bool {
		st, err := a.runner.Status(key)
		return err == nil && len(st.Attempts) > 0 && st.Attempts[len(st.Attempts)-1].State == words.Running
	})
	began := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("shutdown did not end\n%s", logs)
	}
	took := time.Since(began)
	want := []string{"1 stopping", "2 drain", "3 abort requests: job stopped false", "3 await request work", "6 close: every job ended"}
	if got := srv.seen(); !slices.Equal(got, want) {
		t.Errorf("shutdown's server steps saw\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	st2, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	att, err := st2.Attempt(resp.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	if att.FirstReason != words.ReasonShutdown || took > 5*time.Second {
		t.Errorf("the running attempt ended %s with first reason %q, %v after the signal; want the reason shutdown, within the demo's grace",
			att.State, att.FirstReason, took)
	}
}

// stepServer records which of the server's shutdown steps ran, in order.
type stepServer struct {
	mu    sync.Mutex
	steps []string
}

func (s *stepServer) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step)
}

func (s *stepServer) SetStopping()                   { s.add("SetStopping") }
func (s *stepServer) BeginDrain() <-chan struct{}    { s.add("Drain"); return closed() }
func (s *stepServer) AbortRequests()                 { s.add("AbortRequests") }
func (s *stepServer) RequestsEnded() <-chan struct{} { s.add("AwaitRequestWork"); return closed() }
func (s *stepServer) Close()                         { s.add("Close") }

// TestFailedStartupStopsItsServerBeforeClosingIt: a startup that fails
// after the review server listened (here: the ready file cannot be
// written) stops the server as shutdown does, SetStopping (step 1) before
// Close (step 6). The order matters for web.Server: Close finds no
// http.Server while the goroutine that calls Serve has not run yet, and
// only the stopping flag set before it makes that late Serve return at
// once instead of serving on after the failed start (web's
// TestServeAfterShutdownReturnsAtOnce).
//
// Kills app/serve.go:App.stopServer:swap-steps:29b56557 (Close first: a
// Serve that starts between the two serves on).
func TestFailedStartupStopsItsServerBeforeClosingIt(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	a, err := New(Options{DB: filepath.Join(dir, "codeboost.db"), Check: true, Stderr: io.Discard,
		Ready: filepath.Join(dir, "no-such-dir", "ready")})
	if err != nil {
		t.Fatal(err)
	}
	srv := &stepServer{}
	a.server, a.url = srv, "http://127.0.0.1:1/" // as startServer leaves them once it listens
	if err := a.Run(); err == nil {
		t.Fatal("startup with an unwritable ready file succeeded")
	}
	if want := []string{"SetStopping", "Close"}; !slices.Equal(srv.steps, want) {
		t.Errorf("the failed startup ran the server's steps %v, want %v", srv.steps, want)
	}
}

// TestTextLogPrefixesAttributesAddedUnderAGroup: attributes added with
// With after WithGroup are the group's, written group.key like a record's
// own attributes under the group: WithAttrs prefixes each key before it
// keeps the attribute.
//
// Kills app/log.go:textHandler.WithAttrs:swap-steps:9e59ae56 (the key
// prefixed on the loop's copy after the attribute was kept).
func TestTextLogPrefixesAttributesAddedUnderAGroup(t *testing.T) {
	var b strings.Builder
	log, err := NewLogger(&b, LogText)
	if err != nil {
		t.Fatal(err)
	}
	log.WithGroup("d").With("op", "clone").Info("pulled", "n", 3)
	if want := "codeboost: pulled d.op=clone d.n=3\n"; b.String() != want {
		t.Errorf("text log %q, want %q", b.String(), want)
	}
}

// turnServer records whether step 1's server half ran on the loop every
// coordinator shares.
type turnServer struct {
	stepServer
	a      *App
	onLoop bool
}

func (s *turnServer) SetStopping() {
	s.onLoop = s.a.loop.(*runner.GoroutineLoop).OnLoop()
	s.stepServer.SetStopping()
}

// TestStepOneIsOneTurn: shutdown step 1 sets the server's stopping flag
// and closes the runner's admission "in the same synchronous turn": the
// server's half runs inside the very loop event that closes admission, so
// no admission on the loop can fall between the two.
func TestStepOneIsOneTurn(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	srv := &turnServer{}
	a, err := New(Options{DB: filepath.Join(t.TempDir(), "codeboost.db"), Check: true, Stderr: io.Discard, Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	srv.a = a
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	if !srv.onLoop {
		t.Error("the server's stopping flag was set outside the loop event that closed the runner's admission")
	}
	if len(srv.steps) == 0 || srv.steps[0] != "SetStopping" {
		t.Errorf("the server's steps %v, want SetStopping first", srv.steps)
	}
}
