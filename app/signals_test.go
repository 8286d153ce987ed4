package app_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/dadapter/procgroup"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/internal/testbin"
	"github.com/codeboost/codeboost/store"
)

// Ctrl+C during startup, with real processes: the contract's "A first
// Ctrl+C during startup waits for startup to finish; a second stops the
// process at once, which recovery treats like a crash at the next start".
// Startup is kept busy by a real leftover preparation group that ignores
// SIGTERM: recovery's step 2b proves its identity, sends SIGTERM, waits the
// 5-second grace and sends SIGKILL, and only then goes on.

func TestMain(m *testing.M) { testbin.Main(m) }

// busyStartup prepares a database whose startup recovery must stop a live
// preparation group that ignores SIGTERM, and returns the database path.
func busyStartup(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("waits for a real 5-second SIGTERM grace")
	}
	// Build before HOME changes: go build finds its cache under HOME.
	if _, err := testbin.Codeboost(); err != nil {
		t.Fatal(err)
	}
	dir, db, token := firstStart(t)
	attempt, _, _ := leaveCrashedAttempt(t, db, dir, token)

	child := exec.Command("sh", "-c", `trap "" TERM; exec sleep 60`)
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	go child.Wait() // reap it once killed, as its own parent would
	t.Cleanup(func() { syscall.Kill(-child.Process.Pid, syscall.SIGKILL) })
	var identity string
	for i := 0; i < 100 && identity == ""; i++ { // the shell execs sleep; the identity is the leader's start ticks either way
		identity, _ = procgroup.CurrentIdentity(child.Process.Pid)
		time.Sleep(time.Millisecond)
	}
	st, err := store.Open(db, store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.ShutdownCapability().Update(func(tx *store.Tx) error {
		return tx.SetPreparationGroup(attempt.ID, child.Process.Pid, time.Now(), identity)
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

// startServe starts the real binary and returns it with a reader of its
// combined output lines and a channel closed once it has exited.
func startServe(t *testing.T, args ...string) (*exec.Cmd, *lineReader, <-chan struct{}) {
	t.Helper()
	bin, err := testbin.Codeboost()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := &lineReader{lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
		close(lr.lines)
	}()
	exited := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, lr, exited
}

type lineReader struct {
	lines chan string
	all   bytes.Buffer
}

// until reads lines until one contains want; it fails after 30 s.
func (r *lineReader) until(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("output ended without %q:\n%s", want, r.all.String())
			}
			r.all.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q after 30 s:\n%s", want, r.all.String())
		}
	}
}

// rest drains the output until the process closes it.
func (r *lineReader) rest() string {
	for l := range r.lines {
		r.all.WriteString(l + "\n")
	}
	return r.all.String()
}

func TestFirstCtrlCDuringStartupWaitsForStartup(t *testing.T) {
	db := busyStartup(t)
	cmd, out, exited := startServe(t, "--db", db)
	out.until(t, "recovery: started")
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	all := out.rest()
	<-exited
	if !cmd.ProcessState.Success() {
		t.Fatalf("exit %v\n%s", cmd.ProcessState, all)
	}
	// Startup finished (the group stopped after its grace, every row
	// finalized), and only then did shutdown begin.
	done := strings.Index(all, "recovery: done")
	stopping := strings.Index(all, "codeboost: stopping")
	if done < 0 || stopping < done || !strings.Contains(all, "recovery: finalized") {
		t.Fatalf("startup did not finish before shutdown:\n%s", all)
	}
	if waited := time.Since(start); waited < 3*time.Second {
		t.Errorf("exited after %v, before the group's 5-second grace could end", waited)
	}
}

func TestSecondCtrlCDuringStartupStopsAtOnce(t *testing.T) {
	db := busyStartup(t)
	cmd, out, exited := startServe(t, "--db", db)
	out.until(t, "recovery: started")
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	all := out.rest()
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 130 || strings.Contains(all, "recovery: done") {
		t.Fatalf("want exit 130 before recovery finished, got %d:\n%s", code, all)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("the second Ctrl+C took %v to stop the process", waited)
	}
	// The next start recovers as after a crash: the lock went with the
	// process, and the row is finalized now.
	if logs, err := check(t, db); err != nil || !strings.Contains(logs, "recovery: finalized") {
		t.Fatalf("the next start: %v\n%s", err, logs)
	}
}

// holdingServer is a server whose drain (shutdown step 2) waits until the
// test releases it: without a Docker adapter no job can keep shutdown busy,
// but a slow drain can, as issue 8's server will.
type holdingServer struct{ held, release chan struct{} }

func (s holdingServer) SetStopping() {}
func (s holdingServer) BeginDrain() <-chan struct{} {
	close(s.held)
	drained := make(chan struct{})
	go func() { <-s.release; close(drained) }()
	return drained
}
func (s holdingServer) AbortRequests() {}
func (s holdingServer) RequestsEnded() <-chan struct{} {
	ended := make(chan struct{})
	close(ended)
	return ended
}
func (s holdingServer) Close() {}

// TestSecondSignalDuringShutdownSkipsNothing: after startup, the first
// SIGINT begins shutdown; a second one while shutdown is still under way
// prints "Still stopping agents…" and shutdown goes on to its end (no
// error, the lock released), instead of stopping the process.
func TestSecondSignalDuringShutdownSkipsNothing(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	db := filepath.Join(dir, "codeboost.db")
	ready := filepath.Join(dir, "ready")
	server := holdingServer{held: make(chan struct{}), release: make(chan struct{})}

	var out, errs syncBuffer
	log, _ := app.NewLogger(&out, app.LogText)
	a, err := app.New(app.Options{DB: db, Ready: ready, Log: log, Stderr: &errs, Server: server})
	if err != nil {
		t.Fatal(err)
	}
	done := runUntilReady(t, a, ready, func() string { return out.String() + errs.String() })
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-server.held
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	for i := 0; !strings.Contains(errs.String(), "Still stopping agents…"); i++ {
		if i > 3000 {
			t.Fatalf("no \"Still stopping agents…\" after the second signal:\n%s", errs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(server.release)
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "shutdown: every job ended") {
		t.Errorf("shutdown did not run to its end:\n%s", out.String())
	}
	// The lock went with the finished shutdown: the next start takes it.
	if logs, err := check(t, db); err != nil {
		t.Fatalf("next start: %v\n%s", err, logs)
	}
}
