package testscript

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for the real-process lock and owner-token cases (decision 1 and
// the runner owner token): they work on real files and real `codeboost`
// processes, not on the simulated world.

func init() {
	register(
		Command{Name: "capture", Kind: Action, Pos: 2, Usage: "capture VAR REGEXP",
			Summary: "sets $VAR to the first group of REGEXP's first match in the last command's stdout (after exec or wait); fails if nothing matches",
			Example: "capture TOKEN_A 'runner owner ([0-9a-f]{32})'", Run: cmdCapture},
		Command{Name: "lockfile-var", Kind: Action, Usage: "lockfile-var DB [VAR]",
			Summary: "sets $LOCKFILE (or $VAR) to the single-runner lock file of the database file DB as it is now: $HOME/.codeboost/locks/<device>-<inode>.runner-lock",
			Example: "lockfile-var $WORK/data/cb.db", Run: cmdLockfile},
		Command{Name: "lockfile-count", Kind: Assertion, Usage: "lockfile-count N",
			Summary: "asserts how many *.runner-lock files $HOME/.codeboost/locks holds (0 when the directory does not exist)",
			Example: "lockfile-count 1", Run: cmdLockfiles},
		Command{Name: "hardlink", Kind: Action, Usage: "hardlink OLD NEW",
			Summary: "makes NEW a hard link to the file OLD",
			Example: "hardlink $WORK/data/cb.db $WORK/data/alias.db", Run: cmdHardlink},
		Command{Name: "chown", Kind: Action, Usage: "chown PATH UID",
			Summary: "gives PATH (not following a symlink) to user and group UID, as another user's file (the scenarios run as root)",
			Example: "chown $LOCKFILE 65534", Run: cmdChown},
		Command{Name: "exec-race", Kind: Action, Words: true, Usage: "exec-race NAME NAME PROGRAM [ARGS...]",
			Summary: "starts PROGRAM ARGS --ready $WORK/<NAME>.ready twice at once, waits (up to 20 s) until each has written its ready file or exited, sends SIGINT to those still running and waits for them; prints, independent of which one won: ready: N, then one line per process that exited before ready (exit code, first stderr line) and per stopped one (exit code)",
			Example: "exec-race b c codeboost serve --db $WORK/data/cb.db", Run: cmdExecRace},
		Command{Name: "await-file", Kind: Action, Usage: "await-file PATH",
			Summary: "waits, up to 20 s of real time, until a real process has written PATH (its ready file); only for real-process cases, which cannot use virtual time",
			Example: "await-file $WORK/a.ready", Run: cmdAwaitFile},
	)
}

func cmdCapture(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: capture VAR REGEXP")
	}
	re, err := regexp.Compile(a.pos[1])
	if err != nil || re.NumSubexp() < 1 {
		ts.Fatalf("capture: REGEXP needs one group: %v", err)
	}
	out := ts.ReadFile("stdout")
	m := re.FindStringSubmatch(out)
	if m == nil {
		ts.Fatalf("capture: no match for %q in stdout:\n%s", a.pos[1], out)
	}
	ts.Setenv(a.pos[0], m[1])
}

func lockDir(ts *gts.TestScript) string {
	return filepath.Join(ts.Getenv("HOME"), ".codeboost", "locks")
}

func cmdLockfile(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 1 || len(a.pos) > 2 {
		ts.Fatalf("usage: lockfile-var DB [VAR]")
	}
	fi, err := os.Stat(ts.MkAbs(a.pos[0]))
	ts.Check(err)
	st := fi.Sys().(*syscall.Stat_t)
	v := "LOCKFILE"
	if len(a.pos) == 2 {
		v = a.pos[1]
	}
	ts.Setenv(v, filepath.Join(lockDir(ts), strconv.FormatUint(uint64(st.Dev), 10)+"-"+strconv.FormatUint(st.Ino, 10)+".runner-lock"))
}

func cmdLockfiles(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: lockfile-count N")
	}
	want, err := strconv.Atoi(a.pos[0])
	ts.Check(err)
	names, err := filepath.Glob(filepath.Join(lockDir(ts), "*.runner-lock"))
	ts.Check(err)
	if len(names) != want {
		ts.Fatalf("lockfile-count: %d lock files %v, want %d", len(names), names, want)
	}
}

func cmdHardlink(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: hardlink OLD NEW")
	}
	ts.Check(os.Link(ts.MkAbs(a.pos[0]), ts.MkAbs(a.pos[1])))
}

func cmdChown(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: chown PATH UID")
	}
	uid, err := strconv.Atoi(a.pos[1])
	ts.Check(err)
	ts.Check(os.Lchown(ts.MkAbs(a.pos[0]), uid, uid))
}

type raceProc struct {
	ready          string
	cmd            *exec.Cmd
	stderr, stdout bytes.Buffer
	done           chan struct{}
	readyFirst     bool
}

func cmdExecRace(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 3 || neg {
		ts.Fatalf("usage: exec-race NAME NAME PROGRAM [ARGS...]")
	}
	env := os.Environ()
	for _, k := range []string{"HOME", "PATH", "TMPDIR", "WORK"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	procs := make([]*raceProc, 2)
	for i, name := range a.pos[:2] {
		p := &raceProc{ready: ts.MkAbs(filepath.Join(ts.Getenv("WORK"), name+".ready")), done: make(chan struct{})}
		p.cmd = exec.Command(a.pos[2], append(append([]string{}, a.pos[3:]...), "--ready", p.ready)...)
		p.cmd.Env = env
		p.cmd.Dir = ts.MkAbs(".")
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		procs[i] = p
	}
	for _, p := range procs {
		ts.Check(p.cmd.Start())
	}
	for _, p := range procs {
		go func(p *raceProc) { p.cmd.Wait(); close(p.done) }(p)
	}
	exited := func(p *raceProc) bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	ready := func(p *raceProc) bool { _, err := os.Stat(p.ready); return err == nil }
	deadline := time.Now().Add(20 * time.Second)
	for {
		settled := true
		for _, p := range procs {
			if !exited(p) && !ready(p) {
				settled = false
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range procs {
				p.cmd.Process.Kill()
			}
			ts.Fatalf("exec-race: neither ready nor exited within 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range procs {
		p.readyFirst = ready(p)
		if !exited(p) {
			p.cmd.Process.Signal(os.Interrupt)
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
			ts.Fatalf("exec-race: a process did not stop within 20 s of SIGINT")
		}
	}
	var lines []string
	n := 0
	for _, p := range procs {
		code := p.cmd.ProcessState.ExitCode()
		ts.Logf("[exec-race %s] exit %d\n[stdout]\n%s[stderr]\n%s", p.ready, code, p.stdout.String(), p.stderr.String())
		if p.readyFirst {
			n++
			lines = append(lines, fmt.Sprintf("stopped after ready: exit %d", code))
			continue
		}
		first, _, _ := strings.Cut(p.stderr.String(), "\n")
		lines = append(lines, fmt.Sprintf("exited before ready: exit %d: %s", code, first))
	}
	sort.Strings(lines)
	fmt.Fprintf(ts.Stdout(), "ready: %d\n%s\n", n, strings.Join(lines, "\n"))
}

func cmdAwaitFile(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: await-file PATH")
	}
	path := ts.MkAbs(a.pos[0])
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within 20 s", path)
}
