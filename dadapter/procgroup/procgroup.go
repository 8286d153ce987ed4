// Package procgroup runs one preparation subprocess (a git or docker call) as
// the leader of a new process group, and stops the whole group, not just the
// leader, when the call is aborted. It implements the contract's abortable
// preparation helpers: on abort or at the deadline the group gets SIGTERM,
// then SIGKILL after a grace period, and the call settles only after the
// leader and every other member have exited, within two bounds (EGROUPALIVE,
// ESTDIOHELD). StopGroup is startup recovery's step 2b: it stops a group left
// by a crashed runner, proving the group's saved kernel identity before each
// signal.
//
// It belongs to the real D implementation, so it does real I/O and reads the
// real clock; the runner never imports it and sees only
// dadapter.ProcessGroup. It imports the standard library and dadapter only,
// and runs no helper program (the identity comes from /proc). The process
// identity, group scan and leader wait are Linux-specific
// (identity_linux.go).
package procgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/dadapter"
)

// The contract's bounds.
const (
	DefaultGrace      = 5 * time.Second  // SIGTERM to SIGKILL
	DefaultAliveBound = 10 * time.Second // members may outlive the leader this long
	DefaultStdioBound = 1 * time.Second  // pipes may outlive the group this long
)

// OutputLimit bounds each captured stream.
const OutputLimit = 64 << 10

// pollInterval is how often a stopping group is checked and, once SIGKILL is
// due, killed again.
const pollInterval = 20 * time.Millisecond

// Errors a call settles with. Each is wrapped with details; test with
// errors.Is.
var (
	// ErrGroupAlive means a member of the group was still alive
	// AliveBound after the leader exited (repeated SIGKILL included), or
	// the leader itself survived SIGKILL that long. The group may still be
	// running: the outcome is unknown, never a success.
	ErrGroupAlive = errors.New("EGROUPALIVE: a process group member is still alive after the kill; the outcome is unknown")

	// ErrStdioHeld means an output pipe was still open StdioBound after the
	// group was gone, held by a process that left the group. The pipes
	// were closed on this side so the call could settle; the output may be
	// incomplete, so the call is never a success.
	ErrStdioHeld = errors.New("ESTDIOHELD: an output pipe stayed open after the process group exited; output may be incomplete")

	// ErrIdentity means StopGroup could not prove that the numeric group
	// is still the saved one (no saved identity, the leader is gone, PID
	// reuse, a reboot), so it did not send the next signal. The group, if
	// any, may still be running.
	ErrIdentity = errors.New("EIDENTITY: cannot prove the saved process group identity, so it was not signalled")
)

// Options are the bounds of one call. A zero field takes its default. Grace
// should be shorter than AliveBound, or a member that outlives the leader is
// reported before SIGKILL reaches it.
type Options struct {
	Grace      time.Duration // from SIGTERM to SIGKILL; default 5 s
	AliveBound time.Duration // members may outlive the leader (or the leader SIGKILL) this long; default 10 s
	StdioBound time.Duration // an output pipe may stay open after the group is gone this long; default 1 s
	// Stdin is the leader's standard input (a file, so that no goroutine
	// of Run's copies it); nil: the null device.
	Stdin *os.File
}

func (o Options) withDefaults() Options {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.AliveBound <= 0 {
		o.AliveBound = DefaultAliveBound
	}
	if o.StdioBound <= 0 {
		o.StdioBound = DefaultStdioBound
	}
	return o
}

// Result is how a call settled.
type Result struct {
	Started  bool   // the spawn succeeded and onGroup was called
	ExitCode int    // the leader's exit status; -1 when a signal ended it or it could not be reaped
	Signaled bool   // a signal ended the leader
	Stdout   []byte // the first OutputLimit bytes (callers parse it from the start)
	Stderr   []byte // the last OutputLimit bytes (the final error is at the end)
	Aborted  bool   // ctx ended before the group settled; the group was stopped
	Err      error  // the spawn's error, ErrGroupAlive or ErrStdioHeld (wrapped); nil after a clean run or a clean abort
}

// Success reports a call that ran to the end on its own with exit status 0
// and complete output.
func (r Result) Success() bool {
	return r.Started && !r.Signaled && r.ExitCode == 0 && !r.Aborted && r.Err == nil
}

// killFunc is syscall.Kill; tests substitute one that drops signals.
type killFunc func(pid int, sig syscall.Signal) error

// Run runs name with args as the leader of a new process group, capturing
// stdout and stderr through pipes (OutputLimit each). Right after the spawn,
// before anything else, it calls onGroup (if not nil) once, synchronously,
// with the group's ID, the observed start time and the leader's kernel
// identity (empty if /proc could not be read, which makes recovery fail
// closed); onGroup must not block or panic.
//
// When ctx ends (abort or deadline) before the group settles, the group gets
// SIGTERM, then SIGKILL after Grace, repeated until it is gone. When the
// leader exits and members remain, they are leftovers and get the same
// SIGTERM, Grace, SIGKILL sequence: preparation never leaves work running
// after it settles. Run returns only after the leader and every other member
// have exited, or with ErrGroupAlive at the AliveBound; then, after up to
// StdioBound for the pipes to reach end of file, with ErrStdioHeld if one did
// not. A spawn that fails settles as not started. Run never panics and never
// returns before settlement.
//
// The leader is reaped only after its group is empty, so the group's number
// cannot be reused while Run may still signal it.
func Run(ctx context.Context, name string, args []string, opt Options, onGroup func(dadapter.ProcessGroup)) Result {
	return run(ctx, name, args, opt.withDefaults(), onGroup, syscall.Kill)
}

func run(ctx context.Context, name string, args []string, opt Options, onGroup func(dadapter.ProcessGroup), kill killFunc) Result {
	if err := ctx.Err(); err != nil {
		return Result{Aborted: true, Err: fmt.Errorf("procgroup: %s not started: %w", name, err)}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{Err: fmt.Errorf("procgroup: start %s: %w", name, err)}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Result{Err: fmt.Errorf("procgroup: start %s: %w", name, err)}
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = outW, errW
	if opt.Stdin != nil {
		cmd.Stdin = opt.Stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Pgid 0: the child leads a group numbered by its PID
	err = cmd.Start()
	// The child has its own copies of the write ends; ours must go, or the
	// read ends would never reach end of file.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return Result{Err: fmt.Errorf("procgroup: start %s: %w", name, err)}
	}

	pgid := cmd.Process.Pid
	g := dadapter.ProcessGroup{PGID: pgid, StartedAt: time.Now()}
	if id, err := CurrentIdentity(pgid); err == nil {
		// The leader is not reaped yet, so even a leader that already
		// exited still has its identity.
		g.Identity = id
	}
	if onGroup != nil {
		onGroup(g)
	}

	stdout := &capture{done: make(chan struct{})}
	stderr := &capture{done: make(chan struct{}), tail: true}
	go stdout.drain(outR)
	go stderr.drain(errR)
	leaderDone := make(chan error, 1)
	go func() { leaderDone <- waitExited(pgid) }()

	res := Result{Started: true, ExitCode: -1}
	settled, leaderExited := stopUntilSettled(ctx, pgid, opt, kill, leaderDone, &res)

	if !settled {
		// Members (or the leader) may still hold the pipes; do not
		// wait for them.
		outR.Close()
		errR.Close()
		<-stdout.done
		<-stderr.done
		res.Stdout, res.Stderr = stdout.buf, stderr.buf
		res.Err = fmt.Errorf("%w (%s, process group %d)", ErrGroupAlive, name, pgid)
		if !leaderExited {
			// The leader itself survived SIGKILL; reap it whenever
			// it exits.
			go func() {
				<-leaderDone
				cmd.Wait()
			}()
			return res
		}
		reap(cmd, &res)
		return res
	}

	timer := time.NewTimer(opt.StdioBound)
	held := false
	for _, c := range []*capture{stdout, stderr} {
		select {
		case <-c.done:
		case <-timer.C:
			held = true
		}
		if held {
			break
		}
	}
	timer.Stop()
	// Closing a read end wakes a blocked read: pipes are pollable on
	// Linux.
	outR.Close()
	errR.Close()
	<-stdout.done
	<-stderr.done
	res.Stdout, res.Stderr = stdout.buf, stderr.buf
	reap(cmd, &res)
	if held && res.Err == nil {
		res.Err = fmt.Errorf("%w (%s, process group %d)", ErrStdioHeld, name, pgid)
	}
	return res
}

// stopUntilSettled waits for the leader to exit and the group to empty,
// stopping the group when ctx ends (setting res.Aborted) or when members
// outlive the leader. settled is false when the AliveBound passed first
// (ErrGroupAlive); leaderExited says whether the leader had exited, and so
// may be reaped without blocking.
func stopUntilSettled(ctx context.Context, pgid int, opt Options, kill killFunc, leaderDone <-chan error, res *Result) (settled, leaderExited bool) {
	var (
		exitedAt  time.Time // when the leader exited
		termSent  bool
		killAt    time.Time // when SIGKILL is due, once termSent
		firstKill time.Time // zero until SIGKILL was sent
		tick      *time.Ticker
		tickC     <-chan time.Time // nil until the group is stopping or the leader exited
	)
	startTicker := func() {
		if tick == nil {
			tick = time.NewTicker(pollInterval)
			tickC = tick.C
		}
	}
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	// The group's number stays ours while the leader is unreaped, so
	// signalling -pgid reaches this group and no other.
	terminate := func(now time.Time) {
		if !termSent {
			termSent = true
			kill(-pgid, syscall.SIGTERM)
			killAt = now.Add(opt.Grace)
			startTicker()
		}
	}
	ctxDone := ctx.Done()
	for {
		select {
		case <-leaderDone:
			// An error from the wait is not trusted as an exit: the
			// scan below still counts a live leader as a member.
			leaderDone = nil
			leaderExited = true
			exitedAt = time.Now()
			startTicker()
		case <-ctxDone:
			ctxDone = nil
			res.Aborted = true
			terminate(time.Now())
		case <-tickC:
		}
		now := time.Now()
		if leaderExited {
			alive, err := groupHasLiveMember(pgid)
			if err == nil && !alive {
				return true, true
			}
			// Members outlived the leader (or the scan failed):
			// they are leftovers and are stopped like an abort.
			terminate(now)
		}
		if termSent && !now.Before(killAt) {
			if firstKill.IsZero() {
				firstKill = now
			}
			kill(-pgid, syscall.SIGKILL)
		}
		if leaderExited && now.Sub(exitedAt) >= opt.AliveBound {
			return false, true
		}
		if !leaderExited && !firstKill.IsZero() && now.Sub(firstKill) >= opt.AliveBound {
			return false, false
		}
	}
}

// reap collects the leader's exit status. Call it only after the leader has
// exited (or when the caller may block until it does).
func reap(cmd *exec.Cmd, res *Result) {
	err := cmd.Wait()
	st := cmd.ProcessState
	if st == nil {
		if res.Err == nil {
			res.Err = fmt.Errorf("procgroup: reap leader %d: %w", cmd.Process.Pid, err)
		}
		return
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signaled = true
	}
	res.ExitCode = st.ExitCode()
}

// capture reads one output pipe to its end, keeping OutputLimit bytes: the
// first ones, or the last ones when tail is set. It keeps reading past the
// limit so the writer never blocks on a full pipe.
type capture struct {
	buf  []byte        // owned by drain until done is closed
	tail bool          // keep the last bytes instead of the first
	done chan struct{} // closed when drain returns
}

func (c *capture) drain(r *os.File) {
	defer close(c.done)
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		c.add(chunk[:n])
		if err != nil {
			return
		}
	}
}

func (c *capture) add(p []byte) {
	if c.tail {
		c.buf = append(c.buf, p...)
		if over := len(c.buf) - OutputLimit; over > 0 {
			c.buf = append(c.buf[:0], c.buf[over:]...)
		}
		return
	}
	if room := OutputLimit - len(c.buf); room > 0 {
		if len(p) > room {
			p = p[:room]
		}
		c.buf = append(c.buf, p...)
	}
}

// StopGroup stops a process group left by an earlier runner process (startup
// recovery, step 2b). A group with no live member is already stopped: nil.
// Otherwise it proves the saved identity (boot ID and the leader's start
// ticks, read again for the process whose PID is the group's number)
// immediately before SIGTERM and again before SIGKILL; when it cannot (no
// saved identity, the leader gone while members live, PID reuse, a reboot) it
// returns ErrIdentity without sending that signal: it never signals a numeric
// ID it cannot prove. After SIGKILL it waits at most AliveBound for the group
// to empty, and returns ErrGroupAlive if it does not. ctx cuts the grace
// period short (SIGKILL follows at once) and ends the settlement wait with
// ErrGroupAlive.
func StopGroup(ctx context.Context, g dadapter.ProcessGroup, opt Options) error {
	return stopGroup(ctx, g, opt.withDefaults(), syscall.Kill)
}

func stopGroup(ctx context.Context, g dadapter.ProcessGroup, opt Options, kill killFunc) error {
	pgid := g.PGID
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return fmt.Errorf("%w: process group %d is never signalled by recovery", ErrIdentity, pgid)
	}
	alive, err := groupHasLiveMember(pgid)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIdentity, err)
	}
	if !alive {
		return nil
	}

	if err := proveIdentity(g, "SIGTERM"); err != nil {
		return err
	}
	if err := kill(-pgid, syscall.SIGTERM); err != nil {
		if err == syscall.ESRCH {
			return nil
		}
		return fmt.Errorf("%w: SIGTERM to process group %d: %v", ErrGroupAlive, pgid, err)
	}
	if waitGroupGone(ctx, pgid, opt.Grace) {
		return nil
	}

	if err := proveIdentity(g, "SIGKILL"); err != nil {
		return err
	}
	if err := kill(-pgid, syscall.SIGKILL); err != nil {
		if err == syscall.ESRCH {
			return nil
		}
		return fmt.Errorf("%w: SIGKILL to process group %d: %v", ErrGroupAlive, pgid, err)
	}
	deadline := time.Now().Add(opt.AliveBound)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		alive, err := groupHasLiveMember(pgid)
		if err == nil && !alive {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: process group %d: %w", ErrGroupAlive, pgid, ctx.Err())
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: process group %d is still alive %v after SIGKILL", ErrGroupAlive, pgid, opt.AliveBound)
		}
		// Kill again only while the identity still proves the
		// number; once the leader is gone, nothing more is sent.
		if proveIdentity(g, "SIGKILL") == nil {
			kill(-pgid, syscall.SIGKILL)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// proveIdentity checks that the process whose PID is g's group number is the
// saved leader, so that the number still names the saved group.
func proveIdentity(g dadapter.ProcessGroup, next string) error {
	if g.Identity == "" {
		return fmt.Errorf("%w: process group %d has no saved identity; %s not sent", ErrIdentity, g.PGID, next)
	}
	cur, err := CurrentIdentity(g.PGID)
	if err != nil {
		return fmt.Errorf("%w: process group %d: its leader cannot be read, so its members cannot be proven to be the saved group (%v); %s not sent", ErrIdentity, g.PGID, err, next)
	}
	if cur != g.Identity {
		return fmt.Errorf("%w: process %d has identity %s, saved %s; %s not sent", ErrIdentity, g.PGID, cur, g.Identity, next)
	}
	return nil
}

// waitGroupGone polls until group pgid has no live member (true), or d
// passes or ctx ends (false).
func waitGroupGone(ctx context.Context, pgid int, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if alive, err := groupHasLiveMember(pgid); err == nil && !alive {
			return true
		}
		select {
		case <-tick.C:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
