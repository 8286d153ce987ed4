package mutant

import (
	"bytes"
	"fmt"
	"go/ast"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Placement is where the reanchor command finds one block of a mutant.
type Placement struct {
	Block        int    // 1-based, in the mutant file's order
	File, Anchor string // as the mutant file names them (Anchor "" when it has no "in:" lines)
	// NewFile and NewAnchor are where the block's original lines are now;
	// both empty when it cannot be placed.
	NewFile, NewAnchor string
	// Why says what moved (empty when nothing did), or, for a block that
	// cannot be placed, why not.
	Why string
	// NewOriginal and NewReplacement, when set, are the block's lines with
	// a renamed declaration's new name (ReanchorAll).
	NewOriginal, NewReplacement string
	renamed                     bool // placed by its lines, its anchor's name gone
}

// Placed reports whether the block was found.
func (p Placement) Placed() bool { return p.NewFile != "" }

// Changed reports whether the mutant file must change for the block.
func (p Placement) Changed() bool {
	return p.Placed() && (p.NewFile != p.File || p.NewAnchor != p.Anchor || p.NewOriginal != "")
}

// ReanchorAll places the blocks of every mutant (Reanchor), then follows
// the renames it found into the blocks it could not place: a block whose
// lines name a renamed declaration (a call of a renamed function, say) is
// tried again with the new name in its original and mutant lines, and,
// placed so, is rewritten with it. A rename is known only from a block that
// pins the renamed declaration's own lines.
func ReanchorAll(root string, ms []Mutant) [][]Placement {
	type rename struct{ pkg, old, new string }
	var renames []rename
	seen := map[rename]bool{}
	out := make([][]Placement, len(ms))
	for i, m := range ms {
		out[i] = Reanchor(root, m)
		for _, p := range out[i] {
			r := rename{path.Dir(p.NewFile), shortName(p.Anchor), shortName(p.NewAnchor)}
			if p.renamed && r.old != "" && r.new != "" && r.old != r.new && !seen[r] {
				seen[r] = true
				renames = append(renames, r)
			}
		}
	}
	for i, m := range ms {
		retry, tried := m, false
		retry.Edits = slices.Clone(m.Edits)
		for j, p := range out[i] {
			if p.Placed() {
				continue
			}
			e := &retry.Edits[j]
			for _, r := range renames {
				if path.Dir(e.File) != r.pkg && !ast.IsExported(r.old) {
					continue
				}
				word := regexp.MustCompile(`\b` + regexp.QuoteMeta(r.old) + `\b`)
				if word.MatchString(e.Original) {
					e.Original = word.ReplaceAllLiteralString(e.Original, r.new)
					e.Replacement = word.ReplaceAllLiteralString(e.Replacement, r.new)
					tried = true
				}
			}
		}
		if !tried {
			continue
		}
		again := Reanchor(root, retry)
		for j, p := range again {
			if out[i][j].Placed() || !p.Placed() {
				continue
			}
			e := retry.Edits[j]
			p.NewOriginal, p.NewReplacement = e.Original, e.Replacement
			why := "its lines name a renamed declaration: rewritten with the new name"
			if p.Why != "" {
				why += "; " + p.Why
			}
			p.Why = why
			out[i][j] = p
		}
	}
	return out
}

// Moved is m with its blocks where ps, Reanchor's placements of them, put
// them; a block not placed stays as it was.
func Moved(m Mutant, ps []Placement) Mutant {
	m.Edits = slices.Clone(m.Edits)
	for i, p := range ps {
		if !p.Placed() {
			continue
		}
		e := &m.Edits[i]
		e.File, e.Anchor = p.NewFile, p.NewAnchor
		if p.NewOriginal != "" {
			e.Original, e.Replacement = p.NewOriginal, p.NewReplacement
		}
	}
	return m
}

// shortName is the identifier an anchor declares: "abortRebases" for
// "func Coordinator.abortRebases", "" for FileAnchor and "import".
func shortName(anchor string) string {
	_, name, ok := strings.Cut(anchor, " ")
	if !ok {
		return ""
	}
	return name[strings.LastIndex(name, ".")+1:]
}

// Reanchor finds each block of m in the tree at root, in order, each in
// the files as m's earlier blocks leave them (as Mutate applies them):
//
//   - its original lines exactly once in its file, in its anchor: in place
//     (a block without an anchor yet takes the one it is in);
//   - its anchor declared in another file of the package, holding the lines
//     exactly once there: the declaration moved, and the block moves to
//     that file;
//   - its anchor declared nowhere in the package, and the lines exactly
//     once in the package: a rename (perhaps with a move), and the block
//     takes the new name;
//   - the lines exactly once in its file but in another declaration: the
//     block takes that one's name, and Why says so, for a person to check
//     that the mutant still reintroduces its bug;
//
// else it cannot be placed, and Why says why.
func Reanchor(root string, m Mutant) []Placement {
	cur := map[string][]byte{}
	read := func(file string) ([]byte, error) {
		if b, ok := cur[file]; ok {
			return b, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err == nil {
			cur[file] = b
		}
		return b, err
	}
	var out []Placement
	for i, e := range m.Edits {
		p := Placement{Block: i + 1, File: e.File, Anchor: e.Anchor}
		at := place(root, e, &p, read)
		if p.Placed() {
			src := cur[p.NewFile]
			var b bytes.Buffer
			b.Write(src[:at])
			b.WriteString(e.Replacement)
			b.Write(src[at+len(e.Original):])
			cur[p.NewFile] = b.Bytes()
		}
		out = append(out, p)
	}
	return out
}

// place fills in p for the edit e and returns the offset of its original
// lines in p.NewFile.
func place(root string, e Edit, p *Placement, read func(string) ([]byte, error)) int {
	src, err := read(e.File)
	n, at := 0, -1
	if err == nil {
		n, at = countLines(src, e.Original)
	}
	here := ""
	if n == 1 {
		here = AnchorAt(e.File, src, at, at+len(e.Original))
		if e.Anchor == "" || here == e.Anchor {
			p.NewFile, p.NewAnchor = e.File, here
			return at
		}
	}
	var others []string
	if e.Anchor != "" && e.Anchor != FileAnchor && strings.HasSuffix(e.File, ".go") {
		others, _ = packageFiles(root, e.File)
	}
	declared := false
	for _, f := range others {
		b, err := read(f)
		if err != nil {
			continue
		}
		as, err := Anchors(f, b)
		if err != nil || !as[e.Anchor] {
			continue
		}
		declared = true
		if f == e.File {
			continue
		}
		if k, off := countLines(b, e.Original); k == 1 && AnchorAt(f, b, off, off+len(e.Original)) == e.Anchor {
			p.NewFile, p.NewAnchor = f, e.Anchor
			p.Why = fmt.Sprintf("%s moved to %s", e.Anchor, f)
			return off
		}
	}
	if !declared && len(others) > 0 {
		total, file, off := 0, "", -1
		for _, f := range others {
			b, err := read(f)
			if err != nil {
				continue
			}
			k, o := countLines(b, e.Original)
			if k > 0 && total == 0 {
				file, off = f, o
			}
			total += k
		}
		if total == 1 {
			b, _ := read(file)
			p.NewFile, p.NewAnchor = file, AnchorAt(file, b, off, off+len(e.Original))
			p.Why = fmt.Sprintf("%s is declared nowhere in package %s now; its lines are in %s", e.Anchor, path.Dir(e.File), p.NewAnchor)
			if file != e.File {
				p.Why += " in " + file
			}
			p.Why += " (renamed?)"
			p.renamed = true
			return off
		}
	}
	if n == 1 {
		p.NewFile, p.NewAnchor = e.File, here
		p.Why = fmt.Sprintf("its lines are in %s now, not in %s: check that the mutant still reintroduces its bug there", describe(here), describe(e.Anchor))
		return at
	}
	switch {
	case err != nil:
		p.Why = err.Error()
	case e.Anchor == "" || e.Anchor == FileAnchor || !strings.HasSuffix(e.File, ".go"):
		p.Why = fmt.Sprintf("its original lines appear %d times in %s, want exactly once", n, e.File)
	case declared:
		p.Why = fmt.Sprintf("its original lines appear %d times in %s, and %s does not hold them exactly once in any file of its package", n, e.File, e.Anchor)
	default:
		p.Why = fmt.Sprintf("its original lines appear %d times in %s, %s is declared nowhere in its package, and no file of the package holds the lines exactly once", n, e.File, e.Anchor)
	}
	return -1
}

// packageFiles lists the Go files of file's package that are not tests,
// slash-separated from root, file first.
func packageFiles(root, file string) ([]string, error) {
	dir := path.Dir(file)
	paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := []string{file}
	for _, p := range paths {
		f := path.Join(dir, filepath.Base(p))
		if f != file && !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out, nil
}

// Rewrite returns the mutant file data with its "in:" lines and its
// blocks' paths set from ps (one per block, in order; a block that could
// not be placed keeps what it had). Everything else is kept byte for byte,
// so that a concurrent edit of a block's lines merges with it.
func Rewrite(data []byte, ps []Placement) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	inLines := func() {
		for _, p := range ps {
			file, anchor := p.File, p.Anchor
			if p.Placed() {
				file, anchor = p.NewFile, p.NewAnchor
			}
			if anchor == "" {
				return // a block not placed and never anchored: no "in:" lines yet
			}
			out.WriteString("in: " + file)
			if anchor != FileAnchor {
				out.WriteString(" " + anchor)
			}
			out.WriteString("\n")
		}
	}
	i, wrote := 0, false
	for ; i < len(lines) && !isMarker(lines[i]); i++ {
		l := strings.TrimSpace(strings.TrimPrefix(lines[i], "#"))
		if strings.HasPrefix(l, "in:") {
			continue
		}
		out.WriteString(lines[i])
		if strings.HasPrefix(l, "breaks:") && !wrote {
			if !strings.HasSuffix(lines[i], "\n") {
				out.WriteString("\n")
			}
			inLines()
			wrote = true
		}
	}
	if !wrote {
		return nil, fmt.Errorf("no \"breaks:\" line to put the \"in:\" lines after")
	}
	block, skip := 0, false
	for ; i < len(lines); i++ {
		l := lines[i]
		if !isMarker(l) {
			if !skip {
				out.WriteString(l)
			}
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "-- "), " --")
		file, original := strings.CutSuffix(name, ": original")
		if original {
			block++
			if block > len(ps) || ps[block-1].File != file {
				return nil, fmt.Errorf("block %d is in %s, not as placed", block, file)
			}
		}
		skip = false
		if block == 0 || block > len(ps) {
			out.WriteString(l)
			continue
		}
		p := ps[block-1]
		if p.Placed() && p.NewFile != p.File {
			l = strings.Replace(l, "-- "+p.File+": ", "-- "+p.NewFile+": ", 1)
		}
		out.WriteString(l)
		if p.Placed() && p.NewOriginal != "" {
			if original {
				out.WriteString(p.NewOriginal)
			} else {
				out.WriteString(p.NewReplacement)
			}
			skip = true
		}
	}
	if block != len(ps) {
		return nil, fmt.Errorf("%d blocks, %d placements", block, len(ps))
	}
	return []byte(out.String()), nil
}

// isMarker is txtar's file marker line, "-- name --".
func isMarker(l string) bool {
	l = strings.TrimSuffix(l, "\n")
	return strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) >= 6
}
