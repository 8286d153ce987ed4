// Package lock is the single-runner lock: one codeboost runner per database
// file, across processes (the contract's decision 1, as updated in review
// rounds 23 and 32).
//
// The lock is an operating-system lock, not a process-ID check: SQLite's
// exclusive POSIX lock on a small dedicated lock database. The operating
// system releases it when the holder exits or crashes, so there is no stale
// lock and no takeover; a new starter only ever tries to take the OS lock,
// and lock files are never deleted.
//
// Startup order (decision 1):
//
//  0. Resolve the database's parent directory with realpath and check that it
//     is owned by the current user and not writable by group or others, before
//     anything is opened or created. A parent on a network filesystem is
//     refused here too.
//  1. Open the database file with O_NOFOLLOW (or create it with
//     O_CREAT|O_EXCL|O_NOFOLLOW; on EEXIST open the winner's file), fstat the
//     descriptor and refuse anything that is not a regular file or has more
//     than one link. The descriptor is kept: the lock is keyed by this file's
//     identity (device and inode), not its name, so renames, moves on the
//     same filesystem, symlinked parents and relative paths all meet the same
//     lock, while hard-link aliases are refused.
//  2. Take the OS lock on ~/.codeboost/locks/<device>-<inode>.runner-lock:
//     PRAGMA locking_mode = EXCLUSIVE and a write transaction, busy timeout 0.
//     SQLITE_BUSY that outlasts a short retry (takeOSLock: two starters on a
//     free lock can both see SQLITE_BUSY) means another runner holds it:
//     ErrHeld. The lock database stores no owner details (nobody could read
//     them while it is held).
//  3. The caller opens the Store by path (use Lock.Path); migrations run there.
//  4. The caller calls Lock.Verify: the path still names step 1's file.
//
// Network filesystems are refused for the database and the lock directory,
// because POSIX locks are unreliable on them. The refused statfs magic numbers
// are listed in networkFilesystems. FUSE (0x65735546) is not refused: most
// FUSE filesystems are local, and refusing them would refuse ordinary setups;
// a network filesystem mounted through FUSE (sshfs, for example) is not
// detected.
//
// This file is Linux-specific (statfs magic numbers, syscall.Stat_t fields).
package lock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/words"
	"modernc.org/sqlite"
)

// ErrHeld is returned by Acquire when another process (or another Lock in
// this process) holds the lock. Its message is exactly the contract's.
var ErrHeld = errors.New(words.AnotherRunner)

// The classes of refusal; Acquire and Verify wrap them with the path.
var (
	// ErrUnsafeDirectory: a directory is not owned by the current user, is
	// writable by group or others, or is not a directory.
	ErrUnsafeDirectory = errors.New("directory is not owned by the current user or is writable by group or others")
	// ErrSymlink: the database path is itself a symbolic link.
	ErrSymlink = errors.New("database path is a symbolic link")
	// ErrNotRegular: the database path is not a regular file.
	ErrNotRegular = errors.New("database path is not a regular file")
	// ErrHardLinked: the database file has more than one hard link, so two
	// names would give two lock paths for one file.
	ErrHardLinked = errors.New("database file has more than one hard link")
	// ErrNetworkFilesystem: the database or the lock directory is on a
	// network filesystem, where POSIX locks are unreliable.
	ErrNetworkFilesystem = errors.New("network filesystems are not supported for the database or the lock directory")
	// ErrChanged: Verify found that the database path no longer names the
	// file identified (and locked) in step 1.
	ErrChanged = errors.New("database file changed after the lock was taken")
)

// networkFilesystems are the statfs f_type magic numbers refused for the
// database's directory, the database file and the lock directory.
var networkFilesystems = map[uint32]string{
	0x6969:     "NFS",
	0x517B:     "SMB",
	0xFE534D42: "SMB2",
	0xFF534D42: "CIFS",
	0x01021997: "9P",
	0x5346414F: "AFS",
	0x6B414653: "kAFS",
	0x00C36400: "Ceph",
}

// Options configures Acquire.
type Options struct {
	// Home is the directory that holds .codeboost/locks; empty means
	// os.UserHomeDir(). Tests pass a temporary directory.
	Home string
}

// Lock is a held single-runner lock. Keep it until the end of shutdown
// (shutdown step 8), after the Store is closed, then Release it.
type Lock struct {
	given    string // the database path as given, made absolute
	path     string // the canonical path: realpath(parent) + base name
	lockPath string
	dev, ino uint64

	mu       sync.Mutex
	fd       int // step 1's descriptor, -1 once released
	db       *sql.DB
	conn     *sql.Conn
	released bool
}

// Test hooks (lock_test.go replaces them).
var (
	// beforeCreate runs after the database was found missing and before
	// the O_CREAT|O_EXCL create, so a test can win the race.
	beforeCreate = func(path string) {}
	// statfsType and fstatfsType return a filesystem's f_type.
	statfsType = func(path string) (uint32, error) {
		var sf syscall.Statfs_t
		if err := syscall.Statfs(path, &sf); err != nil {
			return 0, err
		}
		return uint32(sf.Type), nil
	}
	fstatfsType = func(fd int) (uint32, error) {
		var sf syscall.Statfs_t
		if err := syscall.Fstatfs(fd, &sf); err != nil {
			return 0, err
		}
		return uint32(sf.Type), nil
	}
)

// Acquire takes the single-runner lock for the database at dbPath, creating
// an empty database file if none exists (decision 1, steps 0 to 2). It
// returns ErrHeld, unwrapped, when another runner holds the lock.
//
// Call it before the Store opens the database. Every failure after step 1
// closes step 1's descriptor, and closing any descriptor of the database
// file drops every POSIX lock this process holds on it, so a process that
// already has the database open must not call Acquire for it again.
func Acquire(dbPath string, opt Options) (*Lock, error) {
	home := opt.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("runner lock: find the home directory: %w", err)
		}
		home = h
	}
	if dbPath == "" {
		return nil, errors.New("runner lock: no database path")
	}
	given, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, fmt.Errorf("runner lock: %s: %w", dbPath, err)
	}
	base := filepath.Base(given)
	if base == "/" || base == "." || base == ".." {
		return nil, fmt.Errorf("runner lock: %s does not name a file", dbPath)
	}

	// Step 0: the parent directory, resolved, owned by us and closed to
	// others, before the lock file is opened or the database created.
	parent, err := filepath.EvalSymlinks(filepath.Dir(given))
	if err != nil {
		return nil, fmt.Errorf("runner lock: resolve the database directory: %w", err)
	}
	if err := checkDir(parent); err != nil {
		return nil, err
	}
	if err := checkNetworkPath(parent); err != nil {
		return nil, err
	}
	canonical := filepath.Join(parent, base)

	// Step 1: identify the database file by its descriptor.
	fd, st, err := openDatabase(canonical)
	if err != nil {
		return nil, err
	}
	l := &Lock{given: given, path: canonical, dev: uint64(st.Dev), ino: uint64(st.Ino), fd: fd}
	fail := func(err error) (*Lock, error) {
		syscall.Close(fd)
		return nil, err
	}

	// Step 2: the OS lock on the lock file named by device and inode.
	locks, err := lockDir(home)
	if err != nil {
		return fail(err)
	}
	l.lockPath = filepath.Join(locks, strconv.FormatUint(l.dev, 10)+"-"+strconv.FormatUint(l.ino, 10)+".runner-lock")
	if err := l.takeOSLock(); err != nil {
		return fail(err)
	}
	return l, nil
}

// checkDir is the owner and mode check of steps 0 and 2 on a resolved
// directory.
func checkDir(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("runner lock: %s: %w", dir, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("runner lock: %s is not a directory: %w", dir, ErrUnsafeDirectory)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("runner lock: %s is owned by user %d, not by the current user %d: %w", dir, st.Uid, os.Getuid(), ErrUnsafeDirectory)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("runner lock: %s is writable by group or others (mode %04o): %w", dir, st.Mode&0o7777, ErrUnsafeDirectory)
	}
	return nil
}

func refuseNetwork(what string, magic uint32) error {
	if name, ok := networkFilesystems[magic]; ok {
		return fmt.Errorf("runner lock: %s is on %s (0x%X): %w", what, name, magic, ErrNetworkFilesystem)
	}
	return nil
}

func checkNetworkPath(dir string) error {
	magic, err := statfsType(dir)
	if err != nil {
		return fmt.Errorf("runner lock: statfs %s: %w", dir, err)
	}
	return refuseNetwork(dir, magic)
}

// openDatabase is step 1: open (or create) the database without following a
// symlink, and check the descriptor.
func openDatabase(path string) (int, *syscall.Stat_t, error) {
	openFlags := syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	fd, err := syscall.Open(path, openFlags, 0)
	if errors.Is(err, syscall.ENOENT) {
		beforeCreate(path)
		// An empty file is a valid new SQLite database.
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, syscall.EEXIST) {
			// Another starter won the race (or something else appeared,
			// such as a symlink): open what is there, as above.
			fd, err = syscall.Open(path, openFlags, 0)
		}
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return -1, nil, fmt.Errorf("runner lock: %s: %w", path, ErrSymlink)
		}
		return -1, nil, fmt.Errorf("runner lock: open the database %s: %w", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, nil, fmt.Errorf("runner lock: fstat %s: %w", path, err)
	}
	if err := checkFile(path, &st); err != nil {
		syscall.Close(fd)
		return -1, nil, err
	}
	magic, err := fstatfsType(fd)
	if err == nil {
		err = refuseNetwork(path, magic)
	} else {
		err = fmt.Errorf("runner lock: fstatfs %s: %w", path, err)
	}
	if err != nil {
		syscall.Close(fd)
		return -1, nil, err
	}
	return fd, &st, nil
}

// checkFile refuses a symlink, anything not a regular file and a file with
// more than one link.
func checkFile(path string, st *syscall.Stat_t) error {
	switch {
	case st.Mode&syscall.S_IFMT == syscall.S_IFLNK:
		return fmt.Errorf("runner lock: %s: %w", path, ErrSymlink)
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fmt.Errorf("runner lock: %s: %w", path, ErrNotRegular)
	case st.Nlink > 1:
		return fmt.Errorf("runner lock: %s has %d links: %w", path, st.Nlink, ErrHardLinked)
	}
	return nil
}

// lockDir creates <home>/.codeboost/locks (mode 0700) if needed, resolves it
// and applies step 0's owner and mode check to it and to .codeboost.
func lockDir(home string) (string, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return "", fmt.Errorf("runner lock: home directory %s: %w", home, err)
	}
	dotDir := filepath.Join(abs, ".codeboost")
	locks := filepath.Join(dotDir, "locks")
	for _, d := range []string{dotDir, locks} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("runner lock: create %s: %w", d, err)
		}
	}
	var resolved string
	for _, d := range []string{dotDir, locks} {
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			return "", fmt.Errorf("runner lock: resolve %s: %w", d, err)
		}
		if err := checkDir(r); err != nil {
			return "", err
		}
		resolved = r
	}
	if err := checkNetworkPath(resolved); err != nil {
		return "", err
	}
	if strings.ContainsRune(resolved, '?') {
		// The lock database is opened by a path DSN, which ends at '?'.
		return "", fmt.Errorf("runner lock: the lock directory %s contains '?'", resolved)
	}
	return resolved, nil
}

// heldRetry bounds how long takeOSLock retries SQLITE_BUSY before it
// reports ErrHeld.
const heldRetry = 150 * time.Millisecond

// takeOSLock takes the OS lock (tryOSLock), retrying SQLITE_BUSY for a short,
// jittered while. Two starters that meet on a free lock can both get
// SQLITE_BUSY: each takes SQLite's SHARED lock on the way to EXCLUSIVE, and
// with busy timeout 0 neither waits for the other's SHARED lock to go. Both
// would exit with nobody holding the lock (R089: exactly one must win). A
// contender lets go within moments, on success or failure, so a retry on a
// fresh connection wins; a live runner's lock never goes, so ErrHeld is only
// delayed by heldRetry.
func (l *Lock) takeOSLock() error {
	deadline := time.Now().Add(heldRetry)
	for {
		err := l.tryOSLock()
		if err != ErrHeld || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond + rand.N(9*time.Millisecond))
	}
}

// tryOSLock opens the lock file as a dedicated SQLite database in exclusive
// locking mode and takes SQLite's exclusive lock with a write transaction.
// locking_mode EXCLUSIVE keeps it after COMMIT, until the connection closes.
func (l *Lock) tryOSLock() error {
	dsn := l.lockPath + "?_pragma=busy_timeout(0)&_pragma=locking_mode(EXCLUSIVE)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("runner lock: open %s: %w", l.lockPath, err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
		if err == nil {
			_, err = conn.ExecContext(ctx, "COMMIT")
		}
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		db.Close()
		if isBusy(err) {
			return ErrHeld
		}
		return fmt.Errorf("runner lock: lock %s: %w", l.lockPath, err)
	}
	l.db, l.conn = db, conn
	return nil
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5 // SQLITE_BUSY
}

// Path is the canonical database path (the resolved parent directory and the
// base name). Open the Store with it (step 3), then call Verify.
func (l *Lock) Path() string { return l.path }

// LockPath is the lock file's path. The file is never deleted.
func (l *Lock) LockPath() string { return l.lockPath }

// Device is the database file's device number, from step 1's descriptor.
func (l *Lock) Device() uint64 { return l.dev }

// Inode is the database file's inode number, from step 1's descriptor.
func (l *Lock) Inode() uint64 { return l.ino }

// Verify is step 4: lstat the database path (the canonical one, and the path
// as given) and compare it with step 1's descriptor: the same device and
// inode, a regular file, one link. Exit on an error.
func (l *Lock) Verify() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return errors.New("runner lock: Verify after Release")
	}
	// The canonical path comes first: if it still names the locked file,
	// its lstat is that file's, link count included, so a second link made
	// anywhere is seen here without an fstat of step 1's descriptor.
	paths := []string{l.path}
	if l.given != l.path {
		paths = append(paths, l.given)
	}
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("runner lock: lstat %s: %v: %w", p, err, ErrChanged)
		}
		switch {
		case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
			return fmt.Errorf("runner lock: %s is no longer a regular file: %w", p, ErrChanged)
		case uint64(st.Dev) != l.dev || uint64(st.Ino) != l.ino:
			return fmt.Errorf("runner lock: %s is now device %d inode %d, not the locked device %d inode %d: %w",
				p, uint64(st.Dev), uint64(st.Ino), l.dev, l.ino, ErrChanged)
		case st.Nlink != 1:
			return fmt.Errorf("runner lock: %s now has %d links: %w", p, st.Nlink, ErrChanged)
		}
	}
	return nil
}

// Release closes the lock connection, which releases the OS lock, and then
// step 1's descriptor. It is idempotent. Call it after the Store is closed:
// closing a descriptor of the database file drops every POSIX lock this
// process holds on that file, SQLite's included.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	var errs []error
	if l.conn != nil {
		errs = append(errs, l.conn.Close())
	}
	if l.db != nil {
		errs = append(errs, l.db.Close())
	}
	errs = append(errs, syscall.Close(l.fd))
	l.fd = -1
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runner lock: release: %w", err)
	}
	return nil
}
