package mutate

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// EquivalentFile is where the sweep reads the equivalent mutants, relative
// to the module root.
const EquivalentFile = "scenarios/mutants/equivalent.txt"

// EquivEntry is one entry of the equivalence file.
type EquivEntry struct {
	ID     string
	Reason string
	Line   int // where the entry starts in the file
}

// ParseEquivalent reads an equivalence file. Blank lines and lines starting
// with "#" are ignored. An entry starts at a line that does not start with
// a blank: its first field is the mutant's stable ID and the rest of the
// line starts the reason, which continues on the following lines that
// start with a blank. Every entry needs a reason, and an ID appears once.
func ParseEquivalent(name string, data []byte) ([]EquivEntry, error) {
	var out []EquivEntry
	seen := map[string]int{}
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, " \t\r")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line[0] == ' ' || line[0] == '\t':
			if len(out) == 0 {
				errs = append(errs, fmt.Errorf("%s:%d: a continued reason with no entry above it", name, i+1))
				continue
			}
			e := &out[len(out)-1]
			e.Reason = strings.TrimSpace(e.Reason + " " + strings.TrimSpace(line))
			continue
		}
		id, reason := line, ""
		if k := strings.IndexAny(line, " \t"); k >= 0 {
			id, reason = line[:k], line[k+1:]
		}
		if prev, ok := seen[id]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: %s is already listed at line %d", name, i+1, id, prev))
		}
		seen[id] = i + 1
		out = append(out, EquivEntry{ID: id, Reason: strings.TrimSpace(reason), Line: i + 1})
	}
	for _, e := range out {
		if e.Reason == "" {
			errs = append(errs, fmt.Errorf("%s:%d: %s has no reason: say why no test can tell it from the original", name, e.Line, e.ID))
		}
	}
	return out, errors.Join(errs...)
}

// LoadEquivalent reads the equivalence file at path; a missing file is an
// empty list.
func LoadEquivalent(path string) ([]EquivEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseEquivalent(path, b)
}

// Stale returns the entries whose ID is no longer a mutant of ms, sorted
// by their place in the file.
func Stale(eq []EquivEntry, ms []Mutant) []EquivEntry {
	ids := map[string]bool{}
	for _, m := range ms {
		ids[m.ID] = true
	}
	var out []EquivEntry
	for _, e := range eq {
		if !ids[e.ID] {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}
