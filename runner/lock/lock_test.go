package lock

// Real files, real processes: the second runner is the test binary itself,
// started with -test.run=^TestHelperProcess$ (the standard helper-process
// pattern). The helper takes the lock, prints "ok <device> <inode>" or
// "err <message>", and holds the lock until its stdin is closed.

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/words"
)

const (
	helperEnv     = "CODEBOOST_LOCK_HELPER"
	helperDBEnv   = "CODEBOOST_LOCK_HELPER_DB"
	helperHomeEnv = "CODEBOOST_LOCK_HELPER_HOME"
	helperWaitEnv = "CODEBOOST_LOCK_HELPER_WAIT"
)

// TestHelperProcess is the second runner. It does nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	in := bufio.NewReader(os.Stdin)
	if os.Getenv(helperWaitEnv) == "1" {
		in.ReadString('\n') // the start barrier
	}
	l, err := Acquire(os.Getenv(helperDBEnv), Options{Home: os.Getenv(helperHomeEnv)})
	if err != nil {
		fmt.Printf("err %s\n", err)
		os.Exit(0)
	}
	fmt.Printf("ok %d %d\n", l.Device(), l.Inode())
	io.Copy(io.Discard, in) // hold until the parent closes stdin
	if err := l.Release(); err != nil {
		fmt.Printf("release %v\n", err)
	}
	os.Exit(0)
}

type helper struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  bool
}

// startHelper starts a second process that acquires the lock on db. With
// wait, it first waits for go() (a start barrier for races).
func startHelper(t *testing.T, db, home string, wait bool) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	w := "0"
	if wait {
		w = "1"
	}
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperDBEnv+"="+db, helperHomeEnv+"="+home, helperWaitEnv+"="+w)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		if !h.done {
			h.cmd.Process.Kill()
			h.cmd.Wait()
		}
	})
	return h
}

func (h *helper) start() {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		h.t.Fatal(err)
	}
}

// result is the helper's first line: "ok <dev> <ino>" or "err <message>".
func (h *helper) result() string {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatal("helper exited without a result")
		}
		return line
	case <-time.After(60 * time.Second):
		h.t.Fatal("helper gave no result in 60s")
	}
	return ""
}

// mustHold fails unless the helper took the lock.
func (h *helper) mustHold() string {
	h.t.Helper()
	r := h.result()
	if !strings.HasPrefix(r, "ok ") {
		h.t.Fatalf("helper did not take the lock: %q", r)
	}
	return r
}

// stop closes stdin (the helper releases and exits) and waits.
func (h *helper) stop() {
	h.t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		h.t.Fatalf("helper: %v", err)
	}
	h.done = true
}

// kill is a crash: SIGKILL, no release.
func (h *helper) kill() {
	h.t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		h.t.Fatal(err)
	}
	h.cmd.Wait()
	h.done = true
}

const heldLine = "err " + words.AnotherRunner

// world is a home directory and a database directory, both owner-only.
type world struct {
	t    *testing.T
	home string
	dir  string
}

func newWorld(t *testing.T) *world {
	return &world{t: t, home: t.TempDir(), dir: t.TempDir()}
}

func (w *world) db(name string) string { return filepath.Join(w.dir, name) }

func (w *world) acquire(path string) *Lock {
	w.t.Helper()
	l, err := Acquire(path, Options{Home: w.home})
	if err != nil {
		w.t.Fatalf("Acquire(%s): %v", path, err)
	}
	w.t.Cleanup(func() { l.Release() })
	return l
}

func (w *world) wantHeld(path string) {
	w.t.Helper()
	l, err := Acquire(path, Options{Home: w.home})
	if err == nil {
		l.Release()
		w.t.Fatalf("Acquire(%s) succeeded while another runner holds the lock", path)
	}
	if err != ErrHeld || err.Error() != words.AnotherRunner {
		w.t.Fatalf("Acquire(%s) = %v, want exactly %q", path, err, words.AnotherRunner)
	}
}

func (w *world) wantRefused(path string, want error) {
	w.t.Helper()
	l, err := Acquire(path, Options{Home: w.home})
	if err == nil {
		l.Release()
		w.t.Fatalf("Acquire(%s) succeeded, want %v", path, want)
	}
	if !errors.Is(err, want) {
		w.t.Fatalf("Acquire(%s) = %v, want %v", path, err, want)
	}
}

// lockDirAbsent checks that nothing was created under home.
func (w *world) lockDirAbsent() {
	w.t.Helper()
	if _, err := os.Lstat(filepath.Join(w.home, ".codeboost")); !errors.Is(err, os.ErrNotExist) {
		w.t.Fatalf("~/.codeboost exists (err %v): the lock was opened before the refusal", err)
	}
}

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func (w *world) lockFileFor(path string) string {
	st := statT(w.t, path)
	return filepath.Join(w.home, ".codeboost", "locks", fmt.Sprintf("%d-%d.runner-lock", uint64(st.Dev), uint64(st.Ino)))
}

// makeSQLite writes a real SQLite database with one table at path.
func makeSQLite(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
}

func TestSecondProcessRefusedWhileHeld(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	first := startHelper(t, db, w.home, false)
	first.mustHold()

	second := startHelper(t, db, w.home, false)
	if got := second.result(); got != heldLine {
		t.Fatalf("second process: %q, want %q", got, heldLine)
	}
	second.stop()
	w.wantHeld(db) // this process too

	first.stop()
	l := w.acquire(db)
	if _, err := os.Stat(l.LockPath()); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

func TestKilledHolderReleasesLock(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	h := startHelper(t, db, w.home, false)
	h.mustHold()
	w.wantHeld(db)
	h.kill()
	lockFile := w.lockFileFor(db)
	if _, err := os.Stat(lockFile); err != nil {
		t.Fatalf("the lock file is gone after a crash: %v", err)
	}
	l := w.acquire(db)
	if l.LockPath() != lockFile {
		t.Fatalf("lock path %s, want %s", l.LockPath(), lockFile)
	}
	l.Release()
	if _, err := os.Stat(lockFile); err != nil {
		t.Fatalf("the lock file was deleted: %v", err)
	}
}

// race starts n helpers behind a barrier and returns their results.
func race(t *testing.T, db, home string, n int) (ok []string, others []string, hs []*helper) {
	t.Helper()
	for range n {
		hs = append(hs, startHelper(t, db, home, true))
	}
	for _, h := range hs {
		h.start()
	}
	for _, h := range hs {
		r := h.result()
		if strings.HasPrefix(r, "ok ") {
			ok = append(ok, r)
		} else {
			others = append(others, r)
		}
	}
	return ok, others, hs
}

func checkOneWinner(t *testing.T, ok, others []string) {
	t.Helper()
	if len(ok) != 1 {
		t.Fatalf("%d starters took the lock, want exactly 1 (%q)", len(ok), ok)
	}
	for _, r := range others {
		if r != heldLine {
			t.Fatalf("a losing starter said %q, want %q", r, heldLine)
		}
	}
}

// R089: after a crash, two (here six) starters race; exactly one wins.
func TestStartersRacingAfterCrash(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	h := startHelper(t, db, w.home, false)
	h.mustHold()
	h.kill()

	ok, others, hs := race(t, db, w.home, 6)
	checkOneWinner(t, ok, others)
	w.wantHeld(db)
	for _, h := range hs {
		h.stop()
	}
	w.acquire(db)
}

// R052: a missing database is created (empty, 0600) and a concurrent second
// starter exits; racing starters on a missing database: one wins.
func TestMissingDatabaseCreated(t *testing.T) {
	w := newWorld(t)
	db := w.db("new.db")
	l := w.acquire(db)
	st := statT(t, db)
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != 0 || st.Mode&0o777 != 0o600 {
		t.Fatalf("created database: mode %o size %d, want an empty regular file with mode 0600", st.Mode, st.Size)
	}
	if uint64(st.Ino) != l.Inode() || uint64(st.Dev) != l.Device() {
		t.Fatalf("lock identity %d/%d, file %d/%d", l.Device(), l.Inode(), uint64(st.Dev), uint64(st.Ino))
	}
	second := startHelper(t, db, w.home, false)
	if got := second.result(); got != heldLine {
		t.Fatalf("second starter: %q, want %q", got, heldLine)
	}
	second.stop()
}

func TestMissingDatabaseRace(t *testing.T) {
	w := newWorld(t)
	db := w.db("new.db")
	ok, others, hs := race(t, db, w.home, 6)
	checkOneWinner(t, ok, others)
	st := statT(t, db)
	if want := fmt.Sprintf("ok %d %d", uint64(st.Dev), uint64(st.Ino)); ok[0] != want {
		t.Fatalf("winner locked %q, the file is %q", ok[0], want)
	}
	for _, h := range hs {
		h.stop()
	}
}

// R103: a renamed database, and one moved to another directory on the same
// filesystem (also reached by a relative path), meet the same lock.
func TestRenamedAndMovedDatabaseMeetSameLock(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	h := startHelper(t, db, w.home, false)
	held := h.mustHold()

	renamed := w.db("renamed.db")
	if err := os.Rename(db, renamed); err != nil {
		t.Fatal(err)
	}
	w.wantHeld(renamed)

	other := t.TempDir()
	moved := filepath.Join(other, "moved.db")
	if err := os.Rename(renamed, moved); err != nil {
		t.Fatal(err)
	}
	w.wantHeld(moved)
	t.Chdir(other)
	w.wantHeld("moved.db")
	w.wantHeld("./../" + filepath.Base(other) + "/moved.db")

	h.stop()
	l := w.acquire("moved.db")
	if got := fmt.Sprintf("ok %d %d", l.Device(), l.Inode()); got != held {
		t.Fatalf("moved database locked as %q, the original as %q", got, held)
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

// R040: a symlinked parent directory meets the same lock.
func TestSymlinkedParentMeetsSameLock(t *testing.T) {
	w := newWorld(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(w.dir, link); err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(link, "codeboost.db")
	h := startHelper(t, viaLink, w.home, false)
	held := h.mustHold()
	w.wantHeld(w.db("codeboost.db"))
	h.stop()

	l := w.acquire(viaLink)
	if got := fmt.Sprintf("ok %d %d", l.Device(), l.Inode()); got != held {
		t.Fatalf("locked as %q, then as %q", held, got)
	}
	real, err := filepath.EvalSymlinks(w.db("codeboost.db"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() != real {
		t.Fatalf("Path() = %s, want the resolved %s", l.Path(), real)
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestDatabaseSymlinkRefused(t *testing.T) {
	w := newWorld(t)
	makeSQLite(t, w.db("real.db"))
	if err := os.Symlink("real.db", w.db("alias.db")); err != nil {
		t.Fatal(err)
	}
	w.wantRefused(w.db("alias.db"), ErrSymlink)
	w.lockDirAbsent()
}

// R051, R079: a hard-linked database is refused through either name, before
// any lock file exists for it and before anything could migrate it.
func TestHardLinkedDatabaseRefused(t *testing.T) {
	w := newWorld(t)
	first := w.db("first.db")
	makeSQLite(t, first)
	second := filepath.Join(w.dir, "second.db")
	if err := os.Link(first, second); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "third.db")
	if err := os.Link(first, elsewhere); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	stBefore := statT(t, first)
	for _, p := range []string{first, second, elsewhere} {
		w.wantRefused(p, ErrHardLinked)
	}
	w.lockDirAbsent()
	if _, err := os.Stat(w.lockFileFor(first)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a lock file exists for the hard-linked database: %v", err)
	}
	after, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	stAfter := statT(t, first)
	if !bytes.Equal(before, after) || stBefore.Mtim != stAfter.Mtim || stBefore.Size != stAfter.Size {
		t.Fatal("the hard-linked database changed")
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Lstat(first + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s%s exists: the database was opened", first, suffix)
		}
	}
}

// R081: a parent directory writable by others (or by the group, or owned by
// another user) is refused at step 0, before the lock is opened and before
// the database is created.
func TestUnsafeParentRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702, 0o720, 0o777 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t)
			if err := os.Chmod(w.dir, mode); err != nil {
				t.Fatal(err)
			}
			db := w.db("codeboost.db")
			w.wantRefused(db, ErrUnsafeDirectory)
			w.lockDirAbsent()
			if _, err := os.Lstat(db); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the database was created: %v", err)
			}
		})
	}
	t.Run("owned by another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown")
		}
		w := newWorld(t)
		if err := os.Chown(w.dir, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		w.wantRefused(w.db("codeboost.db"), ErrUnsafeDirectory)
		w.lockDirAbsent()
	})
	t.Run("through a symlink to an unsafe directory", func(t *testing.T) {
		w := newWorld(t)
		open := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(open, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(w.dir, "link")
		if err := os.Symlink(open, link); err != nil {
			t.Fatal(err)
		}
		w.wantRefused(filepath.Join(link, "codeboost.db"), ErrUnsafeDirectory)
		w.lockDirAbsent()
	})
}

// R062: a symlink placed at the path before creation is refused; the create
// is O_CREAT|O_EXCL|O_NOFOLLOW, so its target is never created.
func TestSymlinkPlacedBeforeCreationRefused(t *testing.T) {
	w := newWorld(t)
	target := w.db("target.db")
	if err := os.Symlink(target, w.db("codeboost.db")); err != nil {
		t.Fatal(err)
	}
	w.wantRefused(w.db("codeboost.db"), ErrSymlink)
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target was created: %v", err)
	}
	w.lockDirAbsent()
}

// The same, with the symlink appearing between the missing-file check and
// the create: the create fails with EEXIST and the O_NOFOLLOW open refuses.
func TestSymlinkRacingCreationRefused(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	target := w.db("target.db")
	setHook(t, &beforeCreate, func(path string) {
		if err := os.Symlink(target, path); err != nil {
			t.Error(err)
		}
	})
	w.wantRefused(db, ErrSymlink)
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target was created: %v", err)
	}
	w.lockDirAbsent()
}

// Another starter creating the file between the check and the create: EEXIST,
// then the winner's file is opened as an existing one.
func TestCreationLostToAnotherStarter(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	setHook(t, &beforeCreate, func(path string) {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Error(err)
		}
	})
	l := w.acquire(db)
	st := statT(t, db)
	if uint64(st.Ino) != l.Inode() {
		t.Fatalf("locked inode %d, the winner's file is %d", l.Inode(), uint64(st.Ino))
	}
}

func TestNotRegularRefused(t *testing.T) {
	w := newWorld(t)
	if err := os.Mkdir(w.db("dir.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	w.wantRefused(w.db("dir.db"), ErrNotRegular)
	if err := syscall.Mkfifo(w.db("fifo.db"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.wantRefused(w.db("fifo.db"), ErrNotRegular) // and does not block
	w.lockDirAbsent()
}

// TestVerifyDetectsSwappedFile is step 4: whichever way the path stops
// naming the locked file, Verify refuses with ErrChanged, and its message,
// which startup exits with, says what it found: the path gone (with
// lstat's own error), another file, a second link, or not a regular file.
//
// kills: mutant/verify-hides-lstat-error
func TestVerifyDetectsSwappedFile(t *testing.T) {
	cases := []struct {
		name string
		swap func(t *testing.T, db string)
		says string // a regexp the error must match
	}{
		{"renamed over", func(t *testing.T, db string) {
			other := db + ".other"
			makeSQLite(t, other)
			if err := os.Rename(other, db); err != nil {
				t.Fatal(err)
			}
		}, `codeboost\.db is now device [0-9]+ inode [0-9]+, not the locked device`},
		{"removed", func(t *testing.T, db string) {
			if err := os.Remove(db); err != nil {
				t.Fatal(err)
			}
		}, `lstat .*codeboost\.db: no such file or directory`},
		{"hard-linked", func(t *testing.T, db string) {
			if err := os.Link(db, db+".alias"); err != nil {
				t.Fatal(err)
			}
		}, `codeboost\.db now has 2 links`},
		{"replaced by a symlink to itself", func(t *testing.T, db string) {
			if err := os.Rename(db, db+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(db+".moved", db); err != nil {
				t.Fatal(err)
			}
		}, `codeboost\.db is no longer a regular file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			db := w.db("codeboost.db")
			makeSQLite(t, db)
			l := w.acquire(db)
			if err := l.Verify(); err != nil {
				t.Fatalf("Verify before the swap: %v", err)
			}
			c.swap(t, db)
			err := l.Verify()
			if !errors.Is(err, ErrChanged) {
				t.Fatalf("Verify after the swap = %v, want ErrChanged", err)
			}
			if !regexp.MustCompile(c.says).MatchString(err.Error()) {
				t.Fatalf("Verify after the swap = %q, want it to say %q", err, c.says)
			}
		})
	}
	t.Run("swapped behind a symlinked parent", func(t *testing.T) {
		w := newWorld(t)
		dir2 := t.TempDir()
		parent := filepath.Join(t.TempDir(), "parent")
		if err := os.Symlink(w.dir, parent); err != nil {
			t.Fatal(err)
		}
		l := w.acquire(filepath.Join(parent, "codeboost.db"))
		// The given path now names another directory's file.
		makeSQLite(t, filepath.Join(dir2, "codeboost.db"))
		if err := os.Remove(parent); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dir2, parent); err != nil {
			t.Fatal(err)
		}
		if err := l.Verify(); !errors.Is(err, ErrChanged) {
			t.Fatalf("Verify = %v, want ErrChanged", err)
		}
	})
}

// TestVerifyAfterReleaseFails: a released lock holds nothing, so Verify no
// longer vouches for the path, even though the file it names is unchanged
// (step 4 checks the file this process holds the lock for, and "Keep the
// lock connection, and so the OS lock, open until shutdown step 8").
//
// kills: mutant/verify-after-release
func TestVerifyAfterReleaseFails(t *testing.T) {
	w := newWorld(t)
	l := w.acquire(w.db("codeboost.db"))
	if err := l.Verify(); err != nil {
		t.Fatalf("Verify while held: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(); err == nil || !strings.Contains(err.Error(), "Verify after Release") {
		t.Fatalf("Verify after Release = %v, want an error saying so", err)
	}
}

// R022: Release, then Acquire again; the lock file is still there.
func TestReleaseThenAcquireAgain(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	l := w.acquire(db)
	lockFile := l.LockPath()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := os.Stat(lockFile); err != nil {
		t.Fatalf("the lock file is gone after Release: %v", err)
	}
	l2 := w.acquire(db)
	if l2.LockPath() != lockFile {
		t.Fatalf("lock path %s, then %s", lockFile, l2.LockPath())
	}
	// Another process can take it after this one releases, too.
	l2.Release()
	h := startHelper(t, db, w.home, false)
	h.mustHold()
	h.stop()
}

// The lock database stores no owner details; the lock directory is 0700.
func TestLockDatabaseStoresNothing(t *testing.T) {
	w := newWorld(t)
	l := w.acquire(w.db("codeboost.db"))
	lockFile := l.LockPath()
	l.Release()
	for _, d := range []string{filepath.Join(w.home, ".codeboost"), filepath.Dir(lockFile)} {
		if m := statT(t, d).Mode & 0o7777; m != 0o700 {
			t.Fatalf("%s has mode %o, want 0700", d, m)
		}
	}
	db, err := sql.Open("sqlite", lockFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the lock database has %d schema objects, want none", n)
	}
}

func TestUnsafeLockDirectoryRefused(t *testing.T) {
	w := newWorld(t)
	locks := filepath.Join(w.home, ".codeboost", "locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locks, 0o777); err != nil {
		t.Fatal(err)
	}
	db := w.db("codeboost.db")
	w.wantRefused(db, ErrUnsafeDirectory)
	if entries, _ := os.ReadDir(locks); len(entries) != 0 {
		t.Fatalf("lock files were created in an unsafe directory: %v", entries)
	}
}

// In one process, a second Lock is refused too, and concurrent Acquires
// (run under -race) leave exactly one holder.
func TestInProcessAcquiresRace(t *testing.T) {
	w := newWorld(t)
	db := w.db("codeboost.db")
	makeSQLite(t, db)
	const n = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		won   []*Lock
		held  int
		other []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Acquire(db, Options{Home: w.home})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, l)
			case err == ErrHeld:
				held++
			default:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || held != n-1 || len(other) != 0 {
		t.Fatalf("%d won, %d held, other errors %v", len(won), held, other)
	}
	w.wantHeld(db)
	h := startHelper(t, db, w.home, false)
	if got := h.result(); got != heldLine {
		t.Fatalf("other process: %q", got)
	}
	h.stop()
	won[0].Release()
	w.acquire(db)
}

func setHook[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

func TestNetworkFilesystemRefused(t *testing.T) {
	for magic, name := range networkFilesystems {
		if err := refuseNetwork("x", magic); !errors.Is(err, ErrNetworkFilesystem) {
			t.Errorf("%s (0x%X) not refused: %v", name, magic, err)
		}
	}
	for _, magic := range []uint32{0xEF53 /* ext4 */, 0x01021994 /* tmpfs */, 0x58465342 /* xfs */, 0x9123683E /* btrfs */, 0x65735546 /* FUSE */, 0x794C7630 /* overlay */} {
		if err := refuseNetwork("x", magic); err != nil {
			t.Errorf("0x%X refused: %v", magic, err)
		}
	}

	t.Run("database directory", func(t *testing.T) {
		w := newWorld(t)
		db := w.db("codeboost.db")
		real := statfsType
		setHook(t, &statfsType, func(p string) (uint32, error) {
			if p == filepath.Dir(mustReal(t, db)) {
				return 0x6969, nil
			}
			return real(p)
		})
		w.wantRefused(db, ErrNetworkFilesystem)
		w.lockDirAbsent()
		if _, err := os.Lstat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("the database was created on a network filesystem")
		}
	})
	t.Run("database file", func(t *testing.T) {
		w := newWorld(t)
		setHook(t, &fstatfsType, func(int) (uint32, error) { return 0xFF534D42, nil })
		w.wantRefused(w.db("codeboost.db"), ErrNetworkFilesystem)
		w.lockDirAbsent()
	})
	t.Run("lock directory", func(t *testing.T) {
		w := newWorld(t)
		locks := filepath.Join(mustReal(t, w.home), ".codeboost", "locks")
		real := statfsType
		setHook(t, &statfsType, func(p string) (uint32, error) {
			if p == locks {
				return 0x01021997, nil
			}
			return real(p)
		})
		w.wantRefused(w.db("codeboost.db"), ErrNetworkFilesystem)
		if entries, _ := os.ReadDir(locks); len(entries) != 0 {
			t.Fatalf("a lock file was created on a network filesystem: %v", entries)
		}
	})
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.Base(p))
}

// Release reports a close that failed, rather than claiming the lock was
// given back cleanly: shutdown step 8 passes it on to the exit status. A
// descriptor that is not open stands for step 1's descriptor failing to
// close (EBADF), without closing a number the process may have reused.
// Sweep survivor (seed 60221): runner/lock/lock.go:Lock.Release:ignore-error:88fc3941.
func TestReleaseReportsAFailedClose(t *testing.T) {
	w := newWorld(t)
	l := w.acquire(w.db("codeboost.db"))
	fd := l.fd
	l.fd = -1
	err := l.Release()
	syscall.Close(fd)
	if err == nil || !strings.Contains(err.Error(), "runner lock: release") || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Release with a descriptor that will not close = %v, want the close's EBADF", err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}
