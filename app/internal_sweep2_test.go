package app

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestItemPromptWordsRenamesWithTheirNewPath: the agent reads a rename as
// "op path -> to" and every other file operation as "op path", so it is
// told where a renamed file goes and is not told of a target that is not
// there.
// Sweep survivor (seed 20261203): app/agent.go:itemPrompt:negate:b7784d8a.
func TestItemPromptWordsRenamesWithTheirNewPath(t *testing.T) {
	spec := []byte(`{"title": "Move it", "files": [{"op": "rename", "path": "x.go", "to": "y/x.go"}, {"op": "modify", "path": "a.go"}]}`)
	got := itemPrompt(store.PlanItem{Item: 2, Title: "Move it", Spec: spec})
	want := "Plan item 2: Move it\n- rename x.go -> y/x.go\n- modify a.go\n"
	if got != want {
		t.Errorf("itemPrompt:\n%s\nwant:\n%s", got, want)
	}
}

// TestShellQuoteQuotesALeadingUnsafeCharacter: a path whose very first
// character is one a shell reads (a space, a quote, a dollar) is quoted
// like one with such a character further in, so the printed command can
// still be pasted as it is.
// Sweep survivor (seed 20261203): app/app.go:shellQuote:boundary:1311d9dc.
func TestShellQuoteQuotesALeadingUnsafeCharacter(t *testing.T) {
	for in, want := range map[string]string{
		" cb.db":     `' cb.db'`,
		"$HOME/cb":   `'$HOME/cb'`,
		"'it'/cb.db": `''\''it'\''/cb.db'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestProcessUsingIgnoresThisProcess: the check that a preparation
// directory is quiet looks at other processes only; this process holding
// a file open in it (as release itself may, while it inspects it) does not
// count as a user.
// Sweep survivor (seed 20261203): app/release.go:processUsing:drop-guard:7cd277ba.
func TestProcessUsingIgnoresThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc here")
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pid, err := processUsing(dir)
	if err != nil || pid != 0 {
		t.Errorf("processUsing with only this process holding a file = %d, %v; want 0, nil", pid, err)
	}
}

// TestProcessUsingFailsWhenNoProcessCouldBeInspected: a process table in
// which no process's cwd or fd can be read (here: process entries with
// neither) proves nothing about the directory, so the check fails ("If a
// process is found, or the check cannot run, it refuses") instead of
// passing it for a quiet one.
// Sweep survivor (seed 271828): app/release.go:processUsing:drop-guard:fdb4683e.
func TestProcessUsingFailsWhenNoProcessCouldBeInspected(t *testing.T) {
	proc := t.TempDir()
	for _, pid := range []string{"101", "202"} {
		if err := os.Mkdir(filepath.Join(proc, pid), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if pid, err := processUsingIn(proc, t.TempDir()); err == nil {
		t.Fatalf("processUsingIn over processes none of which could be read = %d, nil; want an error", pid)
	}
	// No process table at all proves nothing either, and the error is
	// the table's own.
	if pid, err := processUsingIn(filepath.Join(proc, "missing"), t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("processUsingIn over no process table = %d, %v; want the read's error", pid, err)
	}
}
