package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// bootIDPath names the kernel's per-boot random ID. A reboot changes it, so a
// saved identity from an earlier boot never matches a process of this one.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// CurrentIdentity returns the kernel identity of process pid: the boot ID,
// a colon, and the process's start time in clock ticks since boot (field 22
// of /proc/<pid>/stat). Two processes that share a PID number, one after the
// other or across a reboot, never share an identity. It reads /proc only and
// runs no helper program. A zombie that has not been reaped still has its
// identity; a reaped process has none (an error).
func CurrentIdentity(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("procgroup: no identity for pid %d", pid)
	}
	boot, err := os.ReadFile(bootIDPath)
	if err != nil {
		return "", fmt.Errorf("procgroup: read boot ID: %w", err)
	}
	bootID := strings.TrimSpace(string(boot))
	if bootID == "" {
		return "", errors.New("procgroup: empty boot ID")
	}
	st, err := readStat(pid)
	if err != nil {
		return "", err
	}
	return bootID + ":" + st.startTicks, nil
}

// procStat is the part of /proc/<pid>/stat this package reads.
type procStat struct {
	state      byte   // field 3: R, S, D, Z, X, ...
	pgrp       int    // field 5
	numThreads int    // field 20
	startTicks string // field 22, kept as the kernel wrote it
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, fmt.Errorf("procgroup: read stat of pid %d: %w", pid, err)
	}
	st, err := parseStat(data)
	if err != nil {
		return procStat{}, fmt.Errorf("procgroup: stat of pid %d: %w", pid, err)
	}
	return st, nil
}

// parseStat parses one /proc/<pid>/stat line. The second field is the command
// name in parentheses, and the name itself may contain spaces and
// parentheses, so the fixed fields are counted from the last ')'.
func parseStat(data []byte) (procStat, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return procStat{}, errors.New("no ')' after the command name")
	}
	// rest[0] is field 3 (state), so field n is rest[n-3].
	rest := strings.Fields(string(data[end+1:]))
	if len(rest) < 20 {
		return procStat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(rest))
	}
	if len(rest[0]) != 1 {
		return procStat{}, fmt.Errorf("bad state %q", rest[0])
	}
	pgrp, err := strconv.Atoi(rest[5-3])
	if err != nil {
		return procStat{}, fmt.Errorf("bad pgrp %q", rest[5-3])
	}
	threads, err := strconv.Atoi(rest[20-3])
	if err != nil {
		return procStat{}, fmt.Errorf("bad num_threads %q", rest[20-3])
	}
	start := rest[22-3]
	if _, err := strconv.ParseUint(start, 10, 64); err != nil {
		return procStat{}, fmt.Errorf("bad starttime %q", start)
	}
	return procStat{state: rest[0][0], pgrp: pgrp, numThreads: threads, startTicks: start}, nil
}

// live reports whether the process still runs code: a zombie (or a dying
// task) does not, unless it is a thread-group leader that exited while other
// threads of it still run.
func (s procStat) live() bool {
	if s.state == 'Z' || s.state == 'X' || s.state == 'x' {
		return s.numThreads > 1
	}
	return true
}

// groupHasLiveMember reports whether any live process (zombies excluded) has
// process group pgid. An error means the answer is unknown; callers treat it
// as "alive" or refuse, never as "gone".
func groupHasLiveMember(pgid int) (bool, error) {
	if pgid <= 0 {
		return false, fmt.Errorf("procgroup: bad process group %d", pgid)
	}
	// ESRCH from a null signal proves that no process at all, zombie or
	// not, is in the group. Anything else needs the scan below, because
	// zombies answer the null signal too.
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return false, nil
	}
	d, err := os.Open("/proc")
	if err != nil {
		return false, fmt.Errorf("procgroup: list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("procgroup: list processes: %w", err)
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			// It exited between the listing and the read. (A
			// hidepid mount can hide other users' processes, never
			// the ones this user started.)
			continue
		}
		if st.pgrp == pgid && st.live() {
			return true, nil
		}
	}
	return false, nil
}

// waitExited blocks until process pid (a child of this process) has exited,
// without reaping it. Leaving the leader a zombie keeps its PID, and so the
// group's number, from being reused while Run still signals the group.
func waitExited(pid int) error {
	const pPID = 1     // P_PID from <sys/wait.h>
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return fmt.Errorf("procgroup: wait for pid %d: %w", pid, e)
		}
	}
}
