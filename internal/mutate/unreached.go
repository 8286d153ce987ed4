package mutate

import (
	"strings"

	"golang.org/x/tools/cover"
)

// Unreached are the mutants a sweep cannot kill, found without running
// it: a drop-guard or ignore-error mutant takes a guard's body out of
// reach (it removes the if, or makes its condition false), so when no
// test ran that body, every test passes on the mutant as on the original.
// The body is the coverage block that starts on the mutant's line, after
// its condition (`if err != nil {` opens a block on its own line); a
// mutant with no such block in the profiles is not judged.
//
// The profiles are Go coverage profiles (go test -coverprofile, with
// -coverpkg naming the mutated packages) of the test binaries the sweep
// runs; a block counts as reached when any profile ran it. A profile
// written by several binaries lists a block once per binary. module is
// the module path the profiles' file names start with.
//
// This is the cheap half of the sweep: minutes of coverage instead of
// hours of mutants, and a list of guards no test reaches, each a
// survivor-to-be in every sample that draws it.
func Unreached(ms []Mutant, profiles []*cover.Profile, module string) []Mutant {
	type block struct{ start, end int }
	reached := map[string]map[block]bool{} // module-relative file → body blocks
	for _, p := range profiles {
		file, ok := strings.CutPrefix(p.FileName, module+"/")
		if !ok {
			continue
		}
		if reached[file] == nil {
			reached[file] = map[block]bool{}
		}
		for _, b := range p.Blocks {
			if b.EndLine > b.StartLine {
				k := block{b.StartLine, b.EndLine}
				reached[file][k] = reached[file][k] || b.Count > 0
			}
		}
	}
	var out []Mutant
	for _, m := range ms {
		if m.Op != OpDropGuard && m.Op != OpIgnoreError {
			continue
		}
		blocks, judged, hit := reached[m.File], false, false
		for b, ran := range blocks {
			if b.start == m.Line {
				judged, hit = true, hit || ran
			}
		}
		if judged && !hit {
			out = append(out, m)
		}
	}
	return out
}
