package testscript

import (
	"regexp"

	gts "github.com/rogpeppe/go-internal/testscript"
)

// The trace of events in virtual time.

func init() {
	register(
		Command{Name: "traced", Kind: Assertion, Pos: 1, Keys: []Key{K("times", Int)}, Usage: "[!] traced REGEXP [times=N]",
			Summary: "asserts that some trace line matches REGEXP (negated, that none does; with times=, that exactly N do)",
			Example: "! traced 'd: start A'", Run: cmdTraced},
		Command{Name: "order", Kind: Assertion, Words: true, Usage: "order PATTERN PATTERN...",
			Summary: "asserts that trace lines matching each regexp appear in this order",
			Example: "order 'terminal A' 'storage removed A' 'slot freed A'", Run: cmdOrder},
	)
}

func cmdTraced(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: traced REGEXP [times=N]")
	}
	s := get(ts)
	re, err := regexp.Compile(a.pos[0])
	if err != nil {
		ts.Fatalf("traced: %v", err)
	}
	var found []string
	for _, l := range s.world(ts).Lines() {
		if re.MatchString(l) {
			found = append(found, l)
		}
	}
	if want, ok := a.num("times"); ok {
		if neg {
			ts.Fatalf("traced with times= does not take !: say times=0")
		}
		if len(found) != want {
			s.fatal(ts, "%d trace lines match %q, want %d", len(found), a.pos[0], want)
		}
		return
	}
	if neg && len(found) > 0 {
		s.fatal(ts, "trace has %q, which it must not", found[0])
	}
	if !neg && len(found) == 0 {
		s.fatal(ts, "no trace line matches %q", a.pos[0])
	}
}

func cmdOrder(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: order PATTERN PATTERN...")
	}
	s := get(ts)
	lines := s.world(ts).Lines()
	i := 0
	for _, p := range a.pos {
		re, err := regexp.Compile(p)
		if err != nil {
			ts.Fatalf("order: %v", err)
		}
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			s.fatal(ts, "order: no line matching %q after the earlier steps", p)
		}
		i++
	}
}
