//go:build linux

package procgroup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
)

// These tests run real processes (/bin/sh scripts) in real process groups.
// Every group and stray process a test starts is killed in t.Cleanup, and
// only after its identity is proven, so a failing test leaves nothing behind.

const sh = "/bin/sh"

// fast are bounds short enough for tests.
var fast = Options{Grace: 300 * time.Millisecond, AliveBound: 2 * time.Second, StdioBound: 200 * time.Millisecond}

// groupRecorder is an onGroup that records its calls and arranges for the
// group to be killed at cleanup if anything of it is left.
type groupRecorder struct {
	t     *testing.T
	calls []dadapter.ProcessGroup
	// idAtSpawn is CurrentIdentity of the leader, read inside onGroup.
	idAtSpawn string
	idErr     error
	statAt    procStat
}

func newRecorder(t *testing.T) *groupRecorder { return &groupRecorder{t: t} }

func (r *groupRecorder) onGroup(g dadapter.ProcessGroup) {
	r.calls = append(r.calls, g)
	r.idAtSpawn, r.idErr = CurrentIdentity(g.PGID)
	r.statAt, _ = readStat(g.PGID)
	pgid := g.PGID
	r.t.Cleanup(func() { killGroup(pgid) })
}

func (r *groupRecorder) group(t *testing.T) dadapter.ProcessGroup {
	t.Helper()
	if len(r.calls) != 1 {
		t.Fatalf("onGroup called %d times, want 1", len(r.calls))
	}
	return r.calls[0]
}

// killGroup kills whatever is left of group pgid. Cleanup only.
func killGroup(pgid int) {
	if alive, _ := groupHasLiveMember(pgid); alive {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// killLater kills pid at cleanup if it is still the same process.
func killLater(t *testing.T, pid int) {
	id, err := CurrentIdentity(pid)
	if err != nil {
		return
	}
	t.Cleanup(func() {
		if cur, err := CurrentIdentity(pid); err == nil && cur == id {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// live reports whether pid runs (a zombie does not).
func live(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.live()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	waitFile(t, path)
	for i := 0; ; i++ {
		data, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			return pid
		}
		if i > 500 {
			t.Fatalf("%s holds no pid: %q", path, data)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cancelWhen cancels once path exists and sends the time it did.
func cancelWhen(t *testing.T, path string, cancel context.CancelFunc) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(path); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		at <- time.Now()
		cancel()
	}()
	return at
}

func TestRunSuccess(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	before := time.Now()
	res := Run(context.Background(), sh, []string{"-c", "echo out; echo err >&2; exit 0"}, fast, rec.onGroup)
	if !res.Success() || res.Err != nil {
		t.Fatalf("Success() = false: %+v", res)
	}
	if got := string(res.Stdout); got != "out\n" {
		t.Errorf("stdout = %q", got)
	}
	if got := string(res.Stderr); got != "err\n" {
		t.Errorf("stderr = %q", got)
	}
	g := rec.group(t)
	if g.PGID <= 1 {
		t.Fatalf("PGID = %d", g.PGID)
	}
	if g.StartedAt.Before(before) || g.StartedAt.After(time.Now()) {
		t.Errorf("StartedAt %v outside the call", g.StartedAt)
	}
	if rec.idErr != nil || g.Identity == "" || g.Identity != rec.idAtSpawn {
		t.Errorf("Identity %q, CurrentIdentity at spawn %q (%v)", g.Identity, rec.idAtSpawn, rec.idErr)
	}
	if rec.statAt.pgrp != g.PGID {
		t.Errorf("leader's process group %d, want its own %d", rec.statAt.pgrp, g.PGID)
	}
	boot, _ := os.ReadFile(bootIDPath)
	prefix := strings.TrimSpace(string(boot)) + ":"
	ticks, ok := strings.CutPrefix(g.Identity, prefix)
	if !ok {
		t.Errorf("Identity %q does not start with the boot ID %q", g.Identity, prefix)
	} else if _, err := strconv.ParseUint(ticks, 10, 64); err != nil {
		t.Errorf("Identity %q: start ticks %q: %v", g.Identity, ticks, err)
	}
}

// A command name with spaces and parentheses becomes the kernel's comm
// field; the identity must still parse.
func TestRunIdentityWithParenthesesInCommandName(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "x) (y z")
	if err := os.Symlink("/bin/true", link); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	res := Run(context.Background(), link, nil, fast, rec.onGroup)
	if !res.Success() {
		t.Fatalf("Success() = false: %+v", res)
	}
	g := rec.group(t)
	if rec.idErr != nil || g.Identity != rec.idAtSpawn || g.Identity == "" {
		t.Fatalf("Identity %q, CurrentIdentity %q (%v)", g.Identity, rec.idAtSpawn, rec.idErr)
	}
	if rec.statAt.pgrp != g.PGID {
		t.Errorf("pgrp %d, want %d", rec.statAt.pgrp, g.PGID)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	// Fields 3..22 after a comm with spaces and parentheses.
	line := "4242 (a) b) (c d) S 1 777 777 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 123456789 1000 200 rest\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'S' || st.pgrp != 777 || st.numThreads != 3 || st.startTicks != "123456789" {
		t.Errorf("parsed %+v", st)
	}
	for _, bad := range []string{"", "1 (x S 1 2", "1 (x) S 1 2 3", "1 (x) S 1 nope 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
	// A zombie is not live unless other threads of it still run.
	if (procStat{state: 'Z', numThreads: 1}).live() || !(procStat{state: 'Z', numThreads: 2}).live() || !(procStat{state: 'S', numThreads: 1}).live() {
		t.Error("live() wrong")
	}
}

func TestRunExitCode(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	res := Run(context.Background(), sh, []string{"-c", "echo bad >&2; exit 3"}, fast, rec.onGroup)
	if !res.Started || res.ExitCode != 3 || res.Signaled || res.Aborted || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if res.Success() {
		t.Error("exit 3 is a success")
	}
	if string(res.Stderr) != "bad\n" {
		t.Errorf("stderr %q", res.Stderr)
	}
	rec.group(t)
}

func TestRunAbortStopsWithSIGTERM(t *testing.T) {
	t.Parallel()
	opt := fast
	opt.Grace = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := newRecorder(t)
	var cancelAt time.Time
	res := Run(ctx, "/bin/sleep", []string{"60"}, opt, func(g dadapter.ProcessGroup) {
		rec.onGroup(g)
		go func() {
			time.Sleep(50 * time.Millisecond)
			cancel()
		}()
		cancelAt = time.Now()
	})
	elapsed := time.Since(cancelAt)
	if !res.Started || !res.Aborted || !res.Signaled || res.Err != nil || res.Success() {
		t.Fatalf("result %+v", res)
	}
	if elapsed >= opt.Grace/2 {
		t.Errorf("took %v: SIGTERM should end sleep well before the %v grace", elapsed, opt.Grace)
	}
	if live(rec.group(t).PGID) {
		t.Error("leader still alive")
	}
}

func TestRunDeadlineStopsGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	rec := newRecorder(t)
	start := time.Now()
	res := Run(ctx, sh, []string{"-c", "sleep 60; echo never"}, fast, rec.onGroup)
	if !res.Aborted || res.Success() || res.Err != nil || len(res.Stdout) != 0 {
		t.Fatalf("result %+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if alive, err := groupHasLiveMember(rec.group(t).PGID); alive || err != nil {
		t.Errorf("group left alive (%v)", err)
	}
}

// A group that ignores SIGTERM (the shell and its sleep, which inherits the
// ignored disposition) is killed after Grace.
func TestRunAbortKillsAfterGrace(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := cancelWhen(t, ready, cancel)
	rec := newRecorder(t)
	res := Run(ctx, sh, []string{"-c", "trap '' TERM; touch \"$1\"; sleep 60; echo never", "sh", ready}, fast, rec.onGroup)
	elapsed := time.Since(<-cancelled)
	if !res.Aborted || !res.Signaled || res.Err != nil || res.Success() {
		t.Fatalf("result %+v", res)
	}
	if elapsed < fast.Grace {
		t.Errorf("settled %v after the abort, before the %v grace", elapsed, fast.Grace)
	}
	if elapsed > fast.Grace+2*time.Second {
		t.Errorf("settled %v after the abort", elapsed)
	}
	if alive, err := groupHasLiveMember(rec.group(t).PGID); alive || err != nil {
		t.Errorf("group left alive (%v)", err)
	}
}

// A member left behind by a leader that exited is a leftover: Run stops it
// and returns only once it is gone.
func TestRunAwaitsMemberThatOutlivesLeader(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	rec := newRecorder(t)
	res := Run(context.Background(), sh, []string{"-c", "sleep 60 & echo $! > \"$1\"; exit 0", "sh", pidFile}, fast, rec.onGroup)
	member := readPid(t, pidFile)
	if live(member) {
		t.Errorf("member %d still alive after Run returned", member)
	}
	if res.ExitCode != 0 || res.Err != nil || res.Aborted {
		t.Fatalf("result %+v", res)
	}
	if alive, err := groupHasLiveMember(rec.group(t).PGID); alive || err != nil {
		t.Errorf("group left alive (%v)", err)
	}
}

// The member outlives the leader and ignores SIGTERM; the caller aborts
// while Run awaits it. Run returns only after SIGKILL ended it.
func TestRunAbortAwaitsMemberThatIgnoresTERM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "pid")
	opt := fast
	opt.Grace = 600 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := newRecorder(t)
	go func() {
		// Abort only once the member ignores SIGTERM and the leader
		// has had time to exit.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	script := `(trap '' TERM; touch "$1"; exec sleep 60) & echo $! > "$2"; while [ ! -e "$1" ]; do :; done; exit 0`
	res := Run(ctx, sh, []string{"-c", script, "sh", ready, pidFile}, opt, rec.onGroup)
	elapsed := time.Since(start)
	member := readPid(t, pidFile)
	if live(member) {
		t.Errorf("member %d still alive after Run returned", member)
	}
	if !res.Aborted || res.ExitCode != 0 || res.Err != nil || res.Success() {
		t.Fatalf("result %+v", res)
	}
	if elapsed < opt.Grace {
		t.Errorf("returned after %v, before SIGKILL was due (%v)", elapsed, opt.Grace)
	}
}

// A process that leaves the group (setsid) and keeps stdout open cannot
// hold the call: the pipe is closed after StdioBound, and the call is not a
// success.
func TestRunStdioHeldByProcessOutsideGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "pid")
	rec := newRecorder(t)
	// The leader exits only once the background process has left the
	// group; before that, Run would stop it as a leftover member.
	script := `setsid sh -c 'touch "$1"; exec sleep 5' sh "$1" & echo $! > "$2"; while [ ! -e "$1" ]; do :; done; echo hi; exit 0`
	start := time.Now()
	res := Run(context.Background(), sh, []string{"-c", script, "sh", ready, pidFile}, fast, rec.onGroup)
	elapsed := time.Since(start)
	if pid := readPid(t, pidFile); pid > 0 {
		killLater(t, pid)
	}
	if !errors.Is(res.Err, ErrStdioHeld) {
		t.Fatalf("Err = %v, want ErrStdioHeld", res.Err)
	}
	if res.Success() || !res.Started || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Err.Error(), "ESTDIOHELD") {
		t.Errorf("Err %q lacks the code", res.Err)
	}
	if elapsed < fast.StdioBound || elapsed > fast.StdioBound+3*time.Second {
		t.Errorf("settled after %v, StdioBound %v", elapsed, fast.StdioBound)
	}
	if string(res.Stdout) != "hi\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// The AliveBound holds even when SIGKILL cannot end a member (simulated by
// dropping SIGKILL): the call settles with ErrGroupAlive, never a success.
func TestRunGroupAliveAfterBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "pid")
	opt := Options{Grace: 100 * time.Millisecond, AliveBound: 400 * time.Millisecond, StdioBound: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := cancelWhen(t, pidFile, cancel)
	var kills int
	noKill := func(pid int, sig syscall.Signal) error {
		if sig == syscall.SIGKILL {
			kills++
			return nil
		}
		return syscall.Kill(pid, sig)
	}
	rec := newRecorder(t)
	// The pid file appears (renamed into place) only once the member
	// ignores SIGTERM; the abort waits for it.
	script := `(trap '' TERM; touch "$1"; exec sleep 60) & while [ ! -e "$1" ]; do :; done; echo $! > "$2.tmp"; mv "$2.tmp" "$2"; sleep 60`
	res := run(ctx, sh, []string{"-c", script, "sh", ready, pidFile}, opt, rec.onGroup, noKill)
	elapsed := time.Since(<-cancelled)
	member := readPid(t, pidFile)
	killLater(t, member)
	if !errors.Is(res.Err, ErrGroupAlive) || res.Success() || !res.Aborted {
		t.Fatalf("result %+v", res)
	}
	if kills < 2 {
		t.Errorf("SIGKILL sent %d times, want repeated", kills)
	}
	if !live(member) {
		t.Errorf("member %d died though SIGKILL was dropped", member)
	}
	if elapsed < opt.AliveBound || elapsed > opt.AliveBound+2*time.Second {
		t.Errorf("settled %v after the abort, AliveBound %v", elapsed, opt.AliveBound)
	}
}

func TestRunSpawnFailure(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"/nonexistent/codeboost-binary", "codeboost-no-such-command"} {
		called := false
		res := Run(context.Background(), name, nil, fast, func(dadapter.ProcessGroup) { called = true })
		if res.Started || res.Err == nil || res.Success() || called {
			t.Errorf("%s: result %+v, onGroup called %v", name, res, called)
		}
	}
}

func TestRunContextDoneBeforeSpawn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	res := Run(ctx, "/bin/true", nil, fast, func(dadapter.ProcessGroup) { called = true })
	if res.Started || !res.Aborted || res.Success() || called || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("result %+v, onGroup called %v", res, called)
	}
}

func TestRunOutputBounded(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	script := `head -c 200000 /dev/zero | tr '\0' o; head -c 200000 /dev/zero | tr '\0' e >&2; printf END >&2`
	res := Run(context.Background(), sh, []string{"-c", script}, fast, rec.onGroup)
	if !res.Success() {
		t.Fatalf("result %+v", res.Err)
	}
	if len(res.Stdout) != OutputLimit || res.Stdout[0] != 'o' {
		t.Errorf("stdout %d bytes", len(res.Stdout))
	}
	if len(res.Stderr) != OutputLimit || !bytes.HasSuffix(res.Stderr, []byte("eeeEND")) {
		t.Errorf("stderr %d bytes, ends %q", len(res.Stderr), res.Stderr[max(0, len(res.Stderr)-8):])
	}
}

// startGroup starts script as a group leader owned by the test, as a
// crashed runner would have left it, and returns it with its identity.
// reapLeader reaps the leader as soon as it exits, as init would after the
// runner's crash.
func startGroup(t *testing.T, script string, reapLeader bool, args ...string) (*exec.Cmd, dadapter.ProcessGroup) {
	t.Helper()
	cmd := exec.Command(sh, append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	id, err := CurrentIdentity(pid)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	if reapLeader {
		go func() { cmd.Wait(); close(waited) }()
	}
	t.Cleanup(func() {
		killGroup(pid)
		if cur, err := CurrentIdentity(pid); err == nil && cur == id {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if reapLeader {
			<-waited
		} else {
			cmd.Wait()
		}
	})
	return cmd, dadapter.ProcessGroup{PGID: pid, StartedAt: time.Now(), Identity: id}
}

func TestStopGroupWrongIdentitySendsNothing(t *testing.T) {
	t.Parallel()
	_, g := startGroup(t, "exec sleep 60", false)
	boot, ticks, _ := strings.Cut(g.Identity, ":")
	n, _ := strconv.ParseUint(ticks, 10, 64)
	for _, wrong := range []string{
		boot + ":" + strconv.FormatUint(n+1, 10),        // PID reuse: another start time
		"00000000-0000-0000-0000-000000000000:" + ticks, // another boot
		"", // never saved
	} {
		bad := g
		bad.Identity = wrong
		err := StopGroup(context.Background(), bad, fast)
		if !errors.Is(err, ErrIdentity) {
			t.Fatalf("identity %q: err = %v, want ErrIdentity", wrong, err)
		}
		if !live(g.PGID) {
			t.Fatalf("identity %q: process was signalled", wrong)
		}
	}
	// The right identity stops it.
	start := time.Now()
	if err := StopGroup(context.Background(), g, fast); err != nil {
		t.Fatalf("StopGroup: %v", err)
	}
	if live(g.PGID) {
		t.Error("still alive")
	}
	if d := time.Since(start); d >= fast.Grace {
		t.Errorf("took %v; SIGTERM should have sufficed", d)
	}
}

func TestStopGroupKillsAfterGrace(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	_, g := startGroup(t, `trap '' TERM; touch "$1"; sleep 60`, false, ready)
	waitFile(t, ready)
	start := time.Now()
	if err := StopGroup(context.Background(), g, fast); err != nil {
		t.Fatalf("StopGroup: %v", err)
	}
	if d := time.Since(start); d < fast.Grace {
		t.Errorf("returned after %v, before the grace %v", d, fast.Grace)
	}
	if alive, err := groupHasLiveMember(g.PGID); alive || err != nil {
		t.Errorf("group left alive (%v)", err)
	}
}

// The leader dies of SIGTERM and is reaped, a member ignoring SIGTERM lives
// on: the number can no longer be proven, so SIGKILL is withheld.
func TestStopGroupLeaderGoneWithholdsSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "pid")
	_, g := startGroup(t, `(trap '' TERM; touch "$1"; exec sleep 60) & echo $! > "$2"; wait`, true, ready, pidFile)
	waitFile(t, ready)
	member := readPid(t, pidFile)
	killLater(t, member)
	err := StopGroup(context.Background(), g, fast)
	if !errors.Is(err, ErrIdentity) {
		t.Fatalf("err = %v, want ErrIdentity", err)
	}
	if !strings.Contains(err.Error(), "SIGKILL not sent") {
		t.Errorf("err %q does not say SIGKILL was withheld", err)
	}
	if !live(member) {
		t.Error("member was killed")
	}
}

// An unreaped (zombie) leader still proves the number, so the member that
// ignored SIGTERM gets SIGKILL.
func TestStopGroupZombieLeaderStillProves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "pid")
	_, g := startGroup(t, `(trap '' TERM; touch "$1"; exec sleep 60) & echo $! > "$2"; wait`, false, ready, pidFile)
	waitFile(t, ready)
	member := readPid(t, pidFile)
	killLater(t, member)
	if err := StopGroup(context.Background(), g, fast); err != nil {
		t.Fatalf("StopGroup: %v", err)
	}
	if live(member) {
		t.Error("member alive")
	}
}

func TestStopGroupNothingAlive(t *testing.T) {
	t.Parallel()
	// A zombie leader alone is not alive.
	cmd, g := startGroup(t, "exit 0", false)
	for i := 0; live(g.PGID); i++ {
		if i > 500 {
			t.Fatal("leader never exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := StopGroup(context.Background(), g, fast); err != nil {
		t.Errorf("zombie-only group: %v", err)
	}
	// A reaped group is gone; even a wrong identity is fine, since
	// nothing is signalled.
	cmd.Wait()
	g.Identity = "wrong"
	if err := StopGroup(context.Background(), g, fast); err != nil {
		t.Errorf("reaped group: %v", err)
	}
}

func TestStopGroupRefusesSpecialGroups(t *testing.T) {
	t.Parallel()
	own := syscall.Getpgrp()
	id, _ := CurrentIdentity(own)
	for _, pgid := range []int{0, 1, -5, own} {
		err := StopGroup(context.Background(), dadapter.ProcessGroup{PGID: pgid, Identity: id}, fast)
		if !errors.Is(err, ErrIdentity) {
			t.Errorf("pgid %d: err = %v, want ErrIdentity", pgid, err)
		}
	}
}
