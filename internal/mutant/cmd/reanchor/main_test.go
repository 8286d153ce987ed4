package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/internal/mutant"
)

// copyMod copies testdata/mod, a module with a package p and three
// anchored mutants of it, into a temporary directory.
func copyMod(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir("testdata/mod", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/mod", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(root, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, root, rel, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old, which must be in the file, with new.
func edit(t *testing.T, root, rel, old, new string) {
	t.Helper()
	s := read(t, root, rel)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	write(t, root, rel, strings.Replace(s, old, new, 1))
}

func reanchor(t *testing.T, root string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	rc := run(append([]string{"-root", root}, args...), &out, &errOut)
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), rc
}

// applies fails the test if a mutant of root does not apply, as
// TestMutantsApply would.
func applies(t *testing.T, root string) {
	t.Helper()
	ms, err := mutant.LoadDir(filepath.Join(root, "scenarios", "mutants"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := m.Mutate(root); err != nil {
			t.Error(err)
		}
	}
}

const admitFunc = `// Admit admits when there is room.
func Admit(used, max int) bool {
	if used >= max {
		return false
	}
	return true
}

`

// A function that moved to another file and another that was renamed (its
// caller too) leave nothing to place by hand: -write moves the one's block
// to the new file and gives the other's its new name, changing only the
// mutant files' "in:" lines and block paths, and the new name in a block
// that pins the caller; every mutant applies again.
func TestMoveAndRename(t *testing.T) {
	root := copyMod(t)
	if out, rc := reanchor(t, root); rc != 0 || !strings.Contains(out, "5 mutants, 6 blocks: 6 in place, 0 to re-anchor") {
		t.Fatalf("before the move: rc %d\n%s", rc, out)
	}
	edit(t, root, "p/a.go", admitFunc, "")
	write(t, root, "p/c.go", "package p\n\n"+admitFunc)
	edit(t, root, "p/a.go", "func settle(n int) int {", "func clamp(n int) int {")
	edit(t, root, "p/b.go", "return settle(x)", "return clamp(x)")

	ms, err := mutant.LoadDir(filepath.Join(root, "scenarios", "mutants"))
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]bool{"mutant/admit-no-room-check": true, "mutant/settle-keeps-negative": true, "mutant/stop-settles-less": true}
	for _, m := range ms {
		if _, err := m.Mutate(root); (err == nil) == moved[m.Name] {
			t.Errorf("%s: moved %v, Mutate error %v", m.Name, moved[m.Name], err)
		}
	}

	before := read(t, root, "scenarios/mutants/settle-keeps-negative.txtar")
	out, rc := reanchor(t, root)
	if rc != 0 || !strings.Contains(out, "3 to re-anchor (run with -write), 0 to place by hand") {
		t.Fatalf("report: rc %d\n%s", rc, out)
	}
	if read(t, root, "scenarios/mutants/settle-keeps-negative.txtar") != before {
		t.Fatal("without -write, a mutant file changed")
	}
	out, rc = reanchor(t, root, "-write")
	if rc != 0 || !strings.Contains(out, "3 re-anchored in 3 files, 0 to place by hand") {
		t.Fatalf("-write: rc %d\n%s", rc, out)
	}
	for _, want := range []string{
		"admit-no-room-check.txtar block 1: p/a.go func Admit -> p/c.go func Admit: func Admit moved to p/c.go",
		"settle-keeps-negative.txtar block 1: p/a.go func settle -> p/a.go func clamp: func settle is declared nowhere in package p now; its lines are in func clamp (renamed?)",
		"stop-settles-less.txtar block 1: p/b.go func Stop -> p/b.go func Stop: its lines name a renamed declaration: rewritten with the new name",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-write does not say %q:\n%s", want, out)
		}
	}
	if got, want := read(t, root, "scenarios/mutants/admit-no-room-check.txtar"), `mutant/admit-no-room-check: admission does not check the room
breaks: "Admission needs room."
in: p/c.go func Admit
-- p/c.go: original --
	if used >= max {
		return false
-- p/c.go: mutant --
	if false {
		return false
`; got != want {
		t.Errorf("admit-no-room-check.txtar:\n%s\nwant:\n%s", got, want)
	}
	if got, want := read(t, root, "scenarios/mutants/settle-keeps-negative.txtar"), strings.Replace(before, "in: p/a.go func settle", "in: p/a.go func clamp", 1); got != want {
		t.Errorf("settle-keeps-negative.txtar:\n%s\nwant:\n%s", got, want)
	}
	if got := read(t, root, "scenarios/mutants/stop-settles-less.txtar"); !strings.HasSuffix(got, "-- p/b.go: original --\n\treturn clamp(x)\n-- p/b.go: mutant --\n\treturn clamp(x - 1)\n") {
		t.Errorf("stop-settles-less.txtar:\n%s", got)
	}
	applies(t, root)
	if out, rc := reanchor(t, root); rc != 0 || !strings.Contains(out, "6 in place") {
		t.Fatalf("after -write: rc %d\n%s", rc, out)
	}
}

// A block whose lines changed is listed for a person, with its file and
// mutant, and the command exits 1; -write leaves that mutant file alone.
func TestChangedLinesAreListed(t *testing.T) {
	root := copyMod(t)
	edit(t, root, "p/a.go", "\tif used >= max {\n", "\tif used > max-1 {\n")
	before := read(t, root, "scenarios/mutants/admit-no-room-check.txtar")
	out, rc := reanchor(t, root, "-write")
	want := "TO PLACE BY HAND " + filepath.Join(root, "scenarios", "mutants", "admit-no-room-check.txtar") +
		" block 1 (p/a.go func Admit): its original lines appear 0 times in p/a.go, and func Admit does not hold them exactly once in any file of its package"
	if rc != 1 || !strings.Contains(out, want) || !strings.Contains(out, "1 to place by hand") {
		t.Fatalf("rc %d, want 1 and %q:\n%s", rc, want, out)
	}
	if read(t, root, "scenarios/mutants/admit-no-room-check.txtar") != before {
		t.Error("-write changed a mutant it could not place")
	}
}

// Lines that moved into another function of the same file take its name,
// and the command says so for a person to check.
func TestLinesInAnotherFunction(t *testing.T) {
	root := copyMod(t)
	edit(t, root, "p/a.go", "\tif n < 0 {\n\t\tn = 0\n\t}\n\treturn n\n", "\treturn nonNegative(n)\n")
	write(t, root, "p/a.go", read(t, root, "p/a.go")+"\nfunc nonNegative(n int) int {\n\tif n < 0 {\n\t\tn = 0\n\t}\n\treturn n\n}\n")
	out, rc := reanchor(t, root, "-write")
	if rc != 0 || !strings.Contains(out, "settle-keeps-negative.txtar block 1: p/a.go func settle -> p/a.go func nonNegative: its lines are in func nonNegative now, not in func settle") {
		t.Fatalf("rc %d:\n%s", rc, out)
	}
	applies(t, root)
}

// A mutant moved with its function to a file where its lines drop the
// file's only use of an import no longer compiles: the command builds what
// it moved and lists that mutant for a person, exiting 1, as the bite test
// would ("does not build") only after minutes.
func TestMovedMutantThatNoLongerCompiles(t *testing.T) {
	root := copyMod(t)
	name := "// Name is a trimmed name.\nfunc Name(s string) string {\n\treturn strings.TrimSpace(s)\n}\n\n"
	edit(t, root, "p/name.go", name, "")
	write(t, root, "p/d.go", "package p\n\nimport \"strings\"\n\n"+name)
	out, rc := reanchor(t, root, "-write")
	if rc != 1 || !strings.Contains(out, "name-not-trimmed.txtar: placed, but it no longer compiles there") ||
		!strings.Contains(out, `"strings" imported and not used`) || !strings.Contains(out, "1 moved mutants to fix by hand") {
		t.Fatalf("rc %d, want 1:\n%s", rc, out)
	}
	// The block is still re-anchored: only its mutant lines need a person.
	if got := read(t, root, "scenarios/mutants/name-not-trimmed.txtar"); !strings.Contains(got, "in: p/d.go func Name\n-- p/d.go: original --") {
		t.Errorf("name-not-trimmed.txtar:\n%s", got)
	}
	if out, rc := reanchor(t, root, "-build=false"); rc != 0 {
		t.Errorf("-build=false: rc %d\n%s", rc, out)
	}
}

// Run from a directory without mutants, it says so instead of reporting
// zero of them as all in place.
func TestNoMutantsIsAnError(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := run([]string{"-root", t.TempDir()}, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "no mutant files") {
		t.Fatalf("rc %d: %s%s", rc, out.String(), errOut.String())
	}
}
