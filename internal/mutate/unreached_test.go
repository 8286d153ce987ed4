package mutate

import (
	"strings"
	"testing"

	"golang.org/x/tools/cover"
)

// The lines of toyLib (run_test.go): Clamp's guard `if n > max {` on line
// 5 opens its body's block there; `if n < 0 {` on line 8.
const toyProfile = `mode: set
toy/lib/lib.go:4.29,5.13 1 1
toy/lib/lib.go:5.13,7.3 1 1
toy/lib/lib.go:8.2,8.11 1 1
toy/lib/lib.go:8.11,10.3 1 0
toy/lib/lib.go:11.2,11.10 1 1
toy/lib/lib.go:8.11,10.3 1 0
`

// A dropped guard whose body no test ran is unreached, and so is an
// ignored error there; one whose body a test ran is not, nor is a negated
// condition (it runs the body when it should not, which a test may see),
// nor a mutant of a file the profile does not cover. A block any of the
// profile's binaries ran is reached.
func TestUnreachedAreTheGuardsNoTestRan(t *testing.T) {
	profiles, err := cover.ParseProfilesFromReader(strings.NewReader(toyProfile))
	if err != nil {
		t.Fatal(err)
	}
	ms := []Mutant{
		{ID: "reached", Op: OpDropGuard, File: "lib/lib.go", Line: 5},
		{ID: "unreached", Op: OpDropGuard, File: "lib/lib.go", Line: 8},
		{ID: "unreached-error", Op: OpIgnoreError, File: "lib/lib.go", Line: 8},
		{ID: "negated", Op: OpNegate, File: "lib/lib.go", Line: 8},
		{ID: "no-block", Op: OpDropGuard, File: "lib/lib.go", Line: 11},
		{ID: "other-file", Op: OpDropGuard, File: "lib/other.go", Line: 8},
	}
	var got []string
	for _, m := range Unreached(ms, profiles, "toy") {
		got = append(got, m.ID)
	}
	if strings.Join(got, " ") != "unreached unreached-error" {
		t.Errorf("unreached: %v", got)
	}

	again, err := cover.ParseProfilesFromReader(strings.NewReader(toyProfile + "toy/lib/lib.go:8.11,10.3 1 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := Unreached(ms, again, "toy"); len(u) != 0 {
		t.Errorf("a block one binary ran is reached, yet %d are unreached", len(u))
	}
}
