package mutate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const coverLib = `package lib

func Clamp(n, max int) int {
	if n > max {
		return max
	}
	return n
}

func Double(n int) int {
	if n > 100 {
		return n
	}
	return 2 * n
}

func Half(n int) int {
	if n < 0 {
		return 0
	}
	return n / 2
}

func Unused(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
`

// TestAll has one subtest per function (a Split stage's units);
// TestFussy fails when its coverage is collected, so it is chosen for
// every mutant.
const coverTest = `package lib

import (
	"os"
	"testing"
)

func TestClamp(t *testing.T) {
	if Clamp(5, 3) != 3 {
		t.Fatal("not clamped")
	}
}

func TestAll(t *testing.T) {
	t.Run("double", func(t *testing.T) {
		if Double(200) != 200 {
			t.Fatal("doubled")
		}
	})
	t.Run("half", func(t *testing.T) {
		if Half(-4) != 0 {
			t.Fatal("halved")
		}
	})
}

func TestFussy(t *testing.T) {
	if os.Getenv("GOCOVERDIR") != "" {
		t.Fatal("fails under coverage")
	}
}
`

// A stage runs only the tests whose coverage run entered the mutant's
// function; a stage none of whose tests did is skipped; a unit whose
// coverage run failed is chosen for every mutant; and Confirm runs a
// survivor again with every test, so that a test coverage missed still
// kills.
func TestCoverageSelectsTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	ctx := context.Background()
	root := toyModule(t, map[string]string{"lib/lib.go": coverLib, "lib/lib_test.go": coverTest})
	gen, err := Generate(root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	guard := func(fn string) Mutant {
		for _, m := range gen {
			if m.Func == fn && m.Op == OpDropGuard {
				return m
			}
		}
		t.Fatalf("no drop-guard mutant in %s", fn)
		return Mutant{}
	}
	clamp, double, half, unused := guard("Clamp"), guard("Double"), guard("Half"), guard("Unused")
	if clamp.Body != [2]int{3, 8} {
		t.Errorf("Clamp's body is lines %v, want 3-8", clamp.Body)
	}

	whole := Stage{Pkg: "./lib", Run: "^(TestClamp|TestFussy)$"}
	split := Stage{Pkg: "./lib", Run: "^TestAll$", Split: true}
	for _, c := range []struct {
		st   Stage
		want map[string][]string // function → the tests chosen
	}{
		{whole, map[string][]string{"Clamp": {"TestClamp", "TestFussy"}, "Unused": {"TestFussy"}}},
		{split, map[string][]string{"Double": {"TestAll/double"}, "Half": {"TestAll/half"}, "Unused": nil}},
	} {
		opts := Options{Root: root, Jobs: 2, Timeout: time.Minute, Stages: func(Mutant) []Stage { return []Stage{c.st} }}
		sw, _, err := Baseline(ctx, opts, gen)
		if err != nil {
			t.Fatal(err)
		}
		cov := &Coverage{Dirs: []string{"lib"}, Stages: map[string][]UnitCover{}}
		if err := sw.CollectCoverage(ctx, cov, nil); err != nil {
			t.Fatal(err)
		}
		for fn, want := range c.want {
			got, ok := cov.Select("./lib", guard(fn))
			if !ok || !slices.Equal(got, want) {
				t.Errorf("%s: %s chooses %v, want %v", c.st.Run, fn, got, want)
				for _, u := range cov.Stages["./lib"] {
					if u.All {
						t.Logf("unit %s is chosen for every mutant: %s", u.Test, u.Why)
					}
				}
			}
		}
		if _, ok := cov.Select("./other", clamp); ok {
			t.Errorf("a stage without coverage is selected from")
		}
	}

	// The split stage swept: Double's mutant is killed by its subtest
	// alone; Unused's is not built, survives, and survives Confirm too.
	opts := Options{Root: root, Jobs: 1, Timeout: time.Minute, Stages: func(Mutant) []Stage { return []Stage{split} }}
	sw, _, err := Baseline(ctx, opts, gen)
	if err != nil {
		t.Fatal(err)
	}
	cov := &Coverage{Dirs: []string{"lib"}, Stages: map[string][]UnitCover{}}
	if err := sw.CollectCoverage(ctx, cov, nil); err != nil {
		t.Fatal(err)
	}
	sw.UseCoverage(cov)
	rs := sw.Run(ctx, []Mutant{double, unused}, nil, false)
	if rs[0].Verdict != Killed || rs[0].By != "./lib TestAll/double" || !slices.Contains(rs[0].Steps, "select ./lib: 1 tests") {
		t.Errorf("Double's mutant: %s by %s, steps %v", rs[0].Verdict, rs[0].By, rs[0].Steps)
	}
	if rs[1].Verdict != Survived || !slices.Contains(rs[1].Steps, "skip ./lib: no test enters Unused") {
		t.Errorf("Unused's mutant: %s, steps %v", rs[1].Verdict, rs[1].Steps)
	}
	if ran, killed := sw.Confirm(ctx, rs); ran != 1 || killed != 0 || rs[1].Verdict != Survived {
		t.Errorf("confirm ran %d, killed %d: Unused's mutant %s", ran, killed, rs[1].Verdict)
	}

	// Coverage that missed a test (as a process killed with -9 writes
	// none): the selected run lets Half's mutant survive, Confirm kills it.
	cov.Stages["./lib"] = slices.DeleteFunc(cov.Stages["./lib"], func(u UnitCover) bool { return strings.HasSuffix(u.Test, "/half") })
	rs = sw.Run(ctx, []Mutant{half}, nil, false)
	if rs[0].Verdict != Survived {
		t.Fatalf("Half's mutant with its test missed: %s", rs[0].Verdict)
	}
	if ran, killed := sw.Confirm(ctx, rs); ran != 1 || killed != 1 || rs[0].Verdict != Killed || !strings.Contains(rs[0].Detail, "missed by coverage") {
		t.Errorf("confirm ran %d, killed %d: %s by %s (%s)", ran, killed, rs[0].Verdict, rs[0].By, rs[0].Detail)
	}
}

// The coverage kept for a tree is found again under its key, and not
// under another's; a change to a Go file changes the key.
func TestCoverageKeptPerTree(t *testing.T) {
	root := toyModule(t, map[string]string{"lib/lib.go": coverLib})
	key, err := TreeKey(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cov.json")
	c := &Coverage{Key: key, Dirs: []string{"lib"}, Stages: map[string][]UnitCover{"./lib": {{Test: "TestA", Lines: map[string][]int{"lib/lib.go": {3, 9}}}}}}
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	again, err := LoadCoverage(path, key, []string{"lib"})
	if err != nil || len(again.Stages["./lib"]) != 1 {
		t.Fatalf("reloaded %+v, %v", again, err)
	}
	if other, _ := LoadCoverage(path, "other", []string{"lib"}); len(other.Stages) != 0 || other.Key != "other" {
		t.Errorf("another tree's coverage was used: %+v", other)
	}
	if other, _ := LoadCoverage(path, key, []string{"lib", "more"}); len(other.Stages) != 0 {
		t.Errorf("coverage of other packages was used: %+v", other)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "lib.go"), []byte(coverLib+"\n// moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if k2, _ := TreeKey(root); k2 == key {
		t.Errorf("a changed Go file keeps the key")
	}
}
