// Package mutant applies mutants to the source tree without editing it: a
// mutant is a set of exact line replacements, and applying one yields a
// `go build -overlay` file that swaps each touched file for a mutated copy.
//
// Named mutants are data next to the scenarios (scenarios/mutants/*.txtar):
// each holds the exact original lines of one or more files, the declaration
// that holds each block of them (so that cmd/reanchor can follow it when the
// code moves), and the lines that reintroduce a bug, with the contract
// sentence the bug breaks. The automatic
// mutation sweep (internal/mutate) makes the same Mutant values from
// operators. Production code never carries a mutant switch; this package is
// the only place that knows how mutants are applied.
//
// It imports only the standard library and go-internal's txtar.
package mutant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Edit replaces Original, which must appear exactly once in File as whole
// lines, with Replacement. An edit with a Line (the automatic sweep's, whose
// originals such as "if err != nil {" are rarely unique) instead replaces
// Original where it starts at that line, after checking it is there.
type Edit struct {
	File        string // slash-separated, relative to the module root
	Original    string // whole lines, each ending in "\n"
	Replacement string
	// Line, when set, is the 1-based line at which Original starts, in the
	// file as earlier edits of the same mutant left it. Named mutants leave
	// it zero and keep the exactly-once rule.
	Line int
	// Anchor, when set, names the declaration that must hold Original
	// (see AnchorAt): "func Coordinator.abortRebases", "const schema",
	// FileAnchor. A named mutant's file gives it on an "in:" line; the
	// sweep's edits, placed by Line, leave it empty.
	Anchor string
}

// Mutant is one reintroduced bug.
type Mutant struct {
	Name   string // "mutant/<name>", as scenarios name it in "# kills:"
	What   string // one line: the bug
	Breaks string // the contract sentence the bug breaks
	Path   string // the file it was read from, if any
	Edits  []Edit
}

// Parse reads a mutant file. Its comment section starts with
// "mutant/<name>: <the bug>", then a "breaks: <contract sentence>" line,
// then one "in: <path> <anchor>" line for each block, in block order,
// naming the declaration that holds the block's original lines
// ("in: runner/recovery.go func Coordinator.abortRebases"; the path alone
// for FileAnchor). A file without "in:" lines still loads, unanchored;
// the reanchor command adds them. Its files come in pairs,
// "-- <path>: original --" followed by "-- <path>: mutant --".
func Parse(path string, data []byte) (Mutant, error) {
	ar := txtar.Parse(data)
	m := Mutant{Path: path}
	base := strings.TrimSuffix(filepath.Base(path), ".txtar")
	type in struct{ file, anchor string }
	var ins []in
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		switch {
		case m.Name == "" && strings.HasPrefix(line, "mutant/"):
			name, what, _ := strings.Cut(line, ":")
			m.Name, m.What = strings.TrimSpace(name), strings.TrimSpace(what)
		case strings.HasPrefix(line, "breaks:"):
			m.Breaks = strings.TrimSpace(strings.TrimPrefix(line, "breaks:"))
		case strings.HasPrefix(line, "in:"):
			file, anchor, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "in:")), " ")
			if anchor = strings.TrimSpace(anchor); anchor == "" {
				anchor = FileAnchor
			}
			if err := validAnchor(anchor); err != nil {
				return m, fmt.Errorf("%s: %q: %v", path, line, err)
			}
			ins = append(ins, in{file, anchor})
		}
	}
	switch {
	case m.Name != "mutant/"+base:
		return m, fmt.Errorf("%s: the first comment line must be \"mutant/%s: <the bug>\"", path, base)
	case m.What == "":
		return m, fmt.Errorf("%s: say what the bug is after \"%s:\"", path, m.Name)
	case m.Breaks == "":
		return m, fmt.Errorf("%s: a \"breaks: <contract sentence>\" line is required", path)
	case len(ar.Files) == 0 || len(ar.Files)%2 != 0:
		return m, fmt.Errorf("%s: files must come in pairs \"-- <path>: original --\" and \"-- <path>: mutant --\"", path)
	}
	for i := 0; i < len(ar.Files); i += 2 {
		o, r := ar.Files[i], ar.Files[i+1]
		file, ok := strings.CutSuffix(o.Name, ": original")
		if !ok || r.Name != file+": mutant" {
			return m, fmt.Errorf("%s: expected \"-- <path>: original --\" then \"-- <path>: mutant --\", got %q and %q", path, o.Name, r.Name)
		}
		if len(o.Data) == 0 {
			return m, fmt.Errorf("%s: the original lines of %s are empty", path, file)
		}
		if bytes.Equal(o.Data, r.Data) {
			return m, fmt.Errorf("%s: the mutant lines of %s are the original lines", path, file)
		}
		m.Edits = append(m.Edits, Edit{File: file, Original: string(o.Data), Replacement: string(r.Data)})
	}
	if len(ins) == 0 {
		return m, nil
	}
	if len(ins) != len(m.Edits) {
		return m, fmt.Errorf("%s: %d \"in:\" lines for %d blocks: want one for each block, in order (go run ./internal/mutant/cmd/reanchor -write rewrites them)", path, len(ins), len(m.Edits))
	}
	for i, in := range ins {
		if in.file != m.Edits[i].File {
			return m, fmt.Errorf("%s: \"in:\" line %d names %s, but block %d is in %s", path, i+1, in.file, i+1, m.Edits[i].File)
		}
		m.Edits[i].Anchor = in.anchor
	}
	return m, nil
}

// LoadDir reads every *.txtar mutant in dir, sorted by name.
func LoadDir(dir string) ([]Mutant, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Mutant
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		m, err := Parse(p, b)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Mutate applies the edits to files read from root and returns each mutated
// file's new content by its relative path. An original that no longer
// appears exactly once, as whole lines, is an error naming the mutant and
// the file, so that a mutant cannot rot silently when the code moves on.
func (m Mutant) Mutate(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, e := range m.Edits {
		src, ok := out[e.File]
		if !ok {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.File)))
			if err != nil {
				return nil, fmt.Errorf("mutant %s no longer applies to %s: %v", m.Name, e.File, err)
			}
			src = b
		}
		var at int
		if e.Line > 0 {
			at = lineOffset(src, e.Line)
			if at < 0 || !bytes.HasPrefix(src[at:], []byte(e.Original)) || !strings.HasSuffix(e.Original, "\n") {
				return nil, fmt.Errorf("mutant %s no longer applies to %s: its original lines are not at line %d:\n%s", m.Name, e.File, e.Line, e.Original)
			}
		} else {
			n, first := countLines(src, e.Original)
			if n != 1 {
				return nil, fmt.Errorf("mutant %s no longer applies to %s: its original lines appear %d times, want exactly once:\n%s", m.Name, e.File, n, e.Original)
			}
			at = first
		}
		if e.Anchor != "" {
			if got := AnchorAt(e.File, src, at, at+len(e.Original)); got != e.Anchor {
				return nil, fmt.Errorf("mutant %s no longer applies to %s: its original lines are in %s, not in %s (a move or rename? go run ./internal/mutant/cmd/reanchor):\n%s", m.Name, e.File, describe(got), describe(e.Anchor), e.Original)
			}
		}
		var b bytes.Buffer
		b.Write(src[:at])
		b.WriteString(e.Replacement)
		b.Write(src[at+len(e.Original):])
		out[e.File] = b.Bytes()
	}
	return out, nil
}

// describe says where an anchor is, for a person.
func describe(anchor string) string {
	if anchor == FileAnchor {
		return "no single declaration"
	}
	return anchor
}

// countLines counts the occurrences of lines in src that start at a line
// start, and returns the offset of the first.
func countLines(src []byte, lines string) (n, first int) {
	first = -1
	needle := []byte(lines)
	for i := 0; i+len(needle) <= len(src); {
		j := bytes.Index(src[i:], needle)
		if j < 0 {
			break
		}
		at := i + j
		if at == 0 || src[at-1] == '\n' {
			if n == 0 {
				first = at
			}
			n++
		}
		i = at + 1
	}
	return n, first
}

// lineOffset returns the offset at which the 1-based line starts in src, or
// -1 if src has fewer lines.
func lineOffset(src []byte, line int) int {
	at := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[at:], '\n')
		if i < 0 {
			return -1
		}
		at += i + 1
	}
	if at >= len(src) {
		return -1
	}
	return at
}

// Overlay writes the mutated files and a go build -overlay file under dir,
// and returns the overlay file's path.
func (m Mutant) Overlay(root, dir string) (string, error) {
	files, err := m.Mutate(root)
	if err != nil {
		return "", err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	replace := map[string]string{}
	for rel, data := range files {
		dst := filepath.Join(dir, strings.ReplaceAll(rel, "/", "__"))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(absRoot, filepath.FromSlash(rel))] = dst
	}
	b, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "overlay.json")
	return p, os.WriteFile(p, b, 0o644)
}

// Files lists the files the mutant touches, sorted and without repeats.
func (m Mutant) Files() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range m.Edits {
		if !seen[e.File] {
			seen[e.File] = true
			out = append(out, e.File)
		}
	}
	sort.Strings(out)
	return out
}
