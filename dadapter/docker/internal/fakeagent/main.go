// Command fakeagent is a fake coding agent for the Docker adapter's tests:
// a static program (standard library only; build it with CGO_ENABLED=0)
// that dockertest.FakeAgentImage puts at /agent in a test image. It does
// one thing, the mode named by its first argument, or by FAKE_AGENT_MODE
// when it has none:
//
//	succeed            print the success result (one JSON line) and exit 0
//	fail               print a message on stderr and exit 3
//	fail-loud          print 12 KiB of numbered lines on stderr, then
//	                   "fakeagent: the end", and exit 1
//	flood              write to stdout in 4 KiB chunks until it cannot
//	sleep              sleep until SIGTERM (or SIGINT), then exit 0
//	ignore-term        ignore SIGTERM and sleep forever
//	child-ignore-term  start a copy of itself in mode ignore-term (same
//	                   container), then ignore SIGTERM too and sleep forever
//	edit               change /task (append a line to README.md, or create
//	                   NOTES.md when there is none), write CODEBOOST_PROMPT to
//	                   /task/new.txt, then print the success result
//	write-ignored      write /task/fakeagent.log, which the conformance
//	                   suite's repository ignores (*.log), then print the
//	                   success result
//	nest-repo          make a nested repository, /task/vendor/x with a .git
//	                   of its own (HEAD, objects, refs) and a file beside
//	                   it, then print the success result
//	link-out           make /task/escape, a link to /etc/passwd, then print
//	                   the success result
//	edit-submodule     edit, then try to write /task/vendor/lib/planted.txt
//	                   (the end-to-end repository's gitlink is vendor/lib);
//	                   it says on stderr whether the write was refused, and
//	                   prints the success result either way
//	commit             edit, then try to commit as git would: write
//	                   /task/.git/refs/heads/main and /task/.git/HEAD; it
//	                   says on stderr whether each write was refused, and
//	                   prints the success result either way
//	prompt             act as the prompt says: "[fakeagent:MODE]" in
//	                   CODEBOOST_PROMPT picks MODE, else edit (the
//	                   end-to-end tests steer one plan item at a time)
//	print-env          print the environment, sorted, one variable a line
//	whoami             print uid, gid, whether / and /task are writable,
//	                   whether there is any network interface but loopback,
//	                   and the interfaces' names, one key=value a line
//
// It always starts by writing "fakeagent: <mode>" to stderr. An unknown
// mode exits 2.
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Result is what succeed and the modes that change /task print: the
// adapter's result format (dadapter.Result) with fixed usage, so tests can
// check what it parses.
const Result = `{"summary":"fakeagent: %s","usage":{"inputTokens":1,"outputTokens":2,"costUsd":0.01}}` + "\n"

func main() {
	mode := os.Getenv("FAKE_AGENT_MODE")
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode == "prompt" {
		mode = promptMode(os.Getenv("CODEBOOST_PROMPT"))
	}
	fmt.Fprintf(os.Stderr, "fakeagent: %s\n", mode)
	switch mode {
	case "succeed":
		fmt.Printf(Result, mode)
	case "fail":
		fmt.Fprintln(os.Stderr, "fakeagent: failing as asked")
		os.Exit(3)
	case "fail-loud":
		os.Stderr.Write(loudStderr())
		os.Exit(1)
	case "flood":
		flood()
	case "sleep":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		s := <-c
		fmt.Fprintf(os.Stderr, "fakeagent: %v, exiting\n", s)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		sleepForever()
	case "child-ignore-term":
		childIgnoreTerm()
	case "edit", "write-ignored", "nest-repo", "link-out", "edit-submodule", "commit":
		if err := writeTask[mode](); err != nil {
			fmt.Fprintf(os.Stderr, "fakeagent: %s: %v\n", mode, err)
			os.Exit(1)
		}
		fmt.Printf(Result, mode)
	case "print-env":
		env := os.Environ()
		slices.Sort(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
	case "whoami":
		whoami()
	default:
		fmt.Fprintf(os.Stderr, "fakeagent: unknown mode %q\n", mode)
		os.Exit(2)
	}
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// flood writes 4 KiB chunks to stdout until a write fails (the reader is
// gone), then exits 1.
func flood() {
	chunk := bytes.Repeat([]byte("flood.."), 4096/7+1)[:4095]
	chunk = append(chunk, '\n')
	for {
		if _, err := os.Stdout.Write(chunk); err != nil {
			fmt.Fprintf(os.Stderr, "fakeagent: flood: %v\n", err)
			os.Exit(1)
		}
	}
}

// childIgnoreTerm starts a copy of itself in mode ignore-term, sharing its
// stdout and stderr, then ignores SIGTERM and sleeps: a stop must kill
// both once its grace period is over.
func childIgnoreTerm() {
	signal.Ignore(syscall.SIGTERM)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
		os.Exit(1)
	}
	child := exec.Command(self, "ignore-term")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: start child: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("child pid=%d\n", child.Process.Pid)
	sleepForever()
}

// writeTask is what the modes that change /task do to it.
var writeTask = map[string]func() error{"edit": edit, "write-ignored": writeIgnored, "nest-repo": nestRepo,
	"link-out": linkOut, "edit-submodule": editSubmodule, "commit": commit}

// linkOut makes a link that points outside the work tree.
func linkOut() error { return os.Symlink("/etc/passwd", "/task/escape") }

// editSubmodule edits, then writes inside the end-to-end repository's
// submodule directory, which git shows nothing of. Start mounts it empty
// and read-only, so the write should be refused; the agent goes on either
// way, saying on stderr whether it was.
func editSubmodule() error {
	if err := edit(); err != nil {
		return err
	}
	err := os.MkdirAll("/task/vendor/lib", 0o755)
	if err == nil {
		err = os.WriteFile("/task/vendor/lib/planted.txt", []byte("planted by fakeagent\n"), 0o644)
	}
	fmt.Fprintf(os.Stderr, "fakeagent: edit-submodule: write /task/vendor/lib/planted.txt: refused=%t (%v)\n", err != nil, err)
	return nil
}

// commit edits, then writes the metadata as a commit would. The metadata
// is mounted read-only, so both writes should be refused; the agent goes
// on either way, as an agent that ignores a failed git command does.
func commit() error {
	if err := edit(); err != nil {
		return err
	}
	for _, p := range []string{"/task/.git/refs/heads/main", "/task/.git/HEAD"} {
		err := os.WriteFile(p, []byte("0123456789012345678901234567890123456789\n"), 0o644)
		fmt.Fprintf(os.Stderr, "fakeagent: commit: write %s: refused=%t (%v)\n", p, err != nil, err)
	}
	return nil
}

// edit makes the agent's usual changes to /task.
func edit() error {
	readme := "/task/README.md"
	if _, err := os.Stat(readme); err == nil {
		f, err := os.OpenFile(readme, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteString("Edited by fakeagent.\n"); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	} else if err := os.WriteFile("/task/NOTES.md", []byte("Notes by fakeagent.\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile("/task/new.txt", []byte(os.Getenv("CODEBOOST_PROMPT")), 0o644)
}

// writeIgnored writes a file that a repository ignoring *.log ignores.
func writeIgnored() error {
	return os.WriteFile("/task/fakeagent.log", []byte("ignored by the repository's *.log\n"), 0o644)
}

// nestRepo makes /task/vendor/x a repository of its own, as git tells
// one: a .git directory with a HEAD, objects and refs.
func nestRepo() error {
	for _, dir := range []string{"/task/vendor/x/.git/objects", "/task/vendor/x/.git/refs"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile("/task/vendor/x/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile("/task/vendor/x/file.txt", []byte("vendored by fakeagent\n"), 0o644)
}

// whoami prints what the container lets the agent do.
func whoami() {
	fmt.Printf("uid=%d\n", os.Getuid())
	fmt.Printf("gid=%d\n", os.Getgid())
	fmt.Printf("root_writable=%t\n", writable("/"))
	fmt.Printf("task_writable=%t\n", writable("/task"))
	var names []string
	network := false
	ifaces, err := net.Interfaces()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: interfaces: %v\n", err)
	}
	for _, i := range ifaces {
		names = append(names, i.Name)
		if i.Flags&net.FlagLoopback == 0 {
			network = true
		}
	}
	fmt.Printf("network=%t\n", network)
	fmt.Printf("interfaces=%s\n", strings.Join(names, ","))
}

// writable reports whether a new file can be created in dir (and removes
// it).
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".fakeagent-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// promptMode is the mode a prompt asks for with "[fakeagent:MODE]", or edit.
func promptMode(prompt string) string {
	const tag = "[fakeagent:"
	i := strings.Index(prompt, tag)
	if i < 0 {
		return "edit"
	}
	rest := prompt[i+len(tag):]
	if j := strings.IndexByte(rest, ']'); j > 0 {
		return rest[:j]
	}
	return "edit"
}

// loudStderr is what fail-loud writes to stderr: three times the 4 KiB a
// D keeps of it, numbered lines, then its last line.
func loudStderr() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 3*4096; i++ {
		fmt.Fprintf(&b, "fakeagent: line %05d of a long complaint\n", i)
	}
	b.WriteString("fakeagent: the end\n")
	return b.Bytes()
}
