package mutate

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codeboost/codeboost/internal/mutant"
)

// Test selection by coverage. A test whose run never entered a mutant's
// function cannot tell the mutant from the original, so a stage runs only
// the tests that did (PIT's "coverage-targeted" tests, at the grain of a
// function). Before, a mutant of the Docker adapter ran the whole Docker
// suite (about five minutes) and a survivor every scenario; now each runs
// the few tests that reach it.
//
// Coverage can only miss a test, never invent one: a process the tests
// start and kill -9 writes no coverage, and a test may take a branch on
// one run and not the next. So selection can turn a kill into a survival
// but never a survival into a kill, and the sweep runs every survivor of a
// selected run again with every test (Sweep.Confirm): the verdicts are the
// ones an unselected sweep gives, at its cost only for the survivors.

// CoverageFile is where the sweep keeps what it collected, relative to the
// module root, for the next sweep over the same tree (make mutate -only).
const CoverageFile = "bin/mutate-coverage.json"

// CoverPkgEnv names, for internal/testbin, the packages a codeboost binary
// that a test builds must cover; with it, the binary writes its coverage
// to GOCOVERDIR as the test binary does, and the end-to-end tests' serve
// processes count too.
const CoverPkgEnv = "CODEBOOST_TEST_COVERPKG"

// Coverage is, for one source tree, what each test unit of each stage
// entered.
type Coverage struct {
	Key    string                 `json:"key"`    // TreeKey of the tree it was collected on
	Dirs   []string               `json:"dirs"`   // the packages whose lines it counts
	Stages map[string][]UnitCover `json:"stages"` // stage package → its units
}

// UnitCover is one test unit's coverage run.
type UnitCover struct {
	Test string `json:"test"` // "TestX", or "TestScenarios/R001-…" for a Split stage
	// All says its coverage run failed or wrote nothing: the unit is then
	// chosen for every mutant.
	All bool `json:"all,omitempty"`
	// Why says what failed when All is set, for the person reading the
	// coverage file (or a test that expected a selection).
	Why string `json:"why,omitempty"`
	// Lines are, per module-relative file, the first lines of the blocks
	// the run executed, sorted.
	Lines map[string][]int `json:"lines,omitempty"`
}

// Select names the tests of stage pkg whose coverage run entered m's
// function. ok is false when the stage has no coverage: it runs whole.
func (c *Coverage) Select(pkg string, m Mutant) (tests []string, ok bool) {
	if c == nil || m.Body == [2]int{} || !slices.Contains(c.Dirs, path.Dir(m.File)) {
		return nil, false
	}
	units, ok := c.Stages[pkg]
	if !ok {
		return nil, false
	}
	for _, u := range units {
		if u.All || enters(u.Lines[m.File], m.Body) {
			tests = append(tests, u.Test)
		}
	}
	return tests, true
}

// enters reports whether a sorted list of block start lines has one in
// body's line range.
func enters(lines []int, body [2]int) bool {
	i, _ := slices.BinarySearch(lines, body[0])
	return i < len(lines) && lines[i] <= body[1]
}

// TreeKey hashes what a coverage collection depends on: every Go file of
// the module and its go.mod and go.sum. A change anywhere may move a line
// or change what a test reaches.
func TreeKey(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LoadCoverage reads a coverage file; a missing one, or one collected on
// another tree or over other packages, is an empty Coverage for key and
// dirs.
func LoadCoverage(path, key string, dirs []string) (*Coverage, error) {
	c := &Coverage{Key: key, Dirs: dirs, Stages: map[string][]UnitCover{}}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	var old Coverage
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, fmt.Errorf("%s: %v (remove it to collect again)", path, err)
	}
	if old.Key != key || !slices.Equal(old.Dirs, dirs) || old.Stages == nil {
		return c, nil
	}
	return &old, nil
}

// Write saves c at path.
func (c *Coverage) Write(path string) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// coverPkgs is the -coverpkg list: dirs by import path (a test's go
// build of codeboost runs in its scratch directory).
func coverPkgs(module string, dirs []string) string {
	pkgs := make([]string, len(dirs))
	for i, d := range dirs {
		pkgs[i] = module + "/" + d
	}
	return strings.Join(pkgs, ",")
}

// CollectCoverage runs, for each stage of the baseline that cov lacks,
// each of its test units alone in a binary built with coverage of
// cov.Dirs, and adds what each entered to cov. The units are the
// tests the baseline saw pass. Units of a Docker stage run one at a time
// (they take the machine's Docker lock anyway), the others on the sweep's
// workers. progress, if set, hears of each stage as it ends, with the
// number of mutated files its tests entered (none is suspect: a stage whose
// tests run the codeboost binary counts only if that binary wrote its
// coverage).
func (s *Sweep) CollectCoverage(ctx context.Context, cov *Coverage, progress func(pkg string, units, files int, took time.Duration)) error {
	module, err := ModulePath(s.opts.Root)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mutate-cover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pkgs := coverPkgs(module, cov.Dirs)
	for _, st := range s.stages {
		names := s.units[st.Key()]
		if _, ok := cov.Stages[st.Key()]; ok || len(names) == 0 {
			continue
		}
		start := time.Now()
		bin := filepath.Join(dir, binName(st.Pkg))
		if err := mutant.BuildTestFlags(ctx, s.opts.Root, st.Pkg, "", bin, "-vet=off", "-cover", "-covermode=set", "-coverpkg="+pkgs); err != nil {
			return err
		}
		units := make([]UnitCover, len(names))
		jobs := s.opts.Jobs
		if st.Docker {
			jobs = 1
		}
		Each(len(names), jobs, func(i int) {
			units[i] = s.coverUnit(ctx, st, bin, dir, module, pkgs, names[i])
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cov.Stages[st.Key()] = units
		if progress != nil {
			files := map[string]bool{}
			for _, u := range units {
				for f := range u.Lines {
					files[f] = true
				}
			}
			progress(st.Key(), len(units), len(files), time.Since(start))
		}
	}
	return nil
}

// coverUnit runs one unit of st under coverage. A run that fails, or whose
// coverage cannot be read, marks the unit All: selection must never drop
// a test it knows nothing about.
func (s *Sweep) coverUnit(ctx context.Context, st Stage, bin, dir, module, pkgs, test string) UnitCover {
	all := func(why string) UnitCover { return UnitCover{Test: test, All: true, Why: why} }
	covdir, err := os.MkdirTemp(dir, "unit-")
	if err != nil {
		return all(err.Error())
	}
	defer os.RemoveAll(covdir)
	one := st
	one.Run = mutant.Pattern([]string{test})
	env := []string{"GOCOVERDIR=" + covdir, CoverPkgEnv + "=" + pkgs}
	res, err := s.runStage(ctx, one, bin, "", s.timeout(st), env, "-test.gocoverdir="+covdir)
	switch {
	case err != nil:
		return all("run: " + err.Error())
	case failedRun(res) || len(res.Passed) == 0:
		out := res.Output
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return all(fmt.Sprintf("run: %d passed, failed %v, error %v: %s", len(res.Passed), res.Failed, res.Err, out))
	}
	profile := filepath.Join(dir, filepath.Base(covdir)+".txt")
	defer os.Remove(profile)
	cmd := exec.CommandContext(ctx, mutant.GoCommand(), "tool", "covdata", "textfmt", "-i="+covdir, "-o="+profile)
	if out, err := cmd.CombinedOutput(); err != nil {
		return all(fmt.Sprintf("covdata: %v: %s", err, out))
	}
	lines, err := executedLines(profile, module)
	if err != nil {
		return all(err.Error())
	}
	return UnitCover{Test: test, Lines: lines}
}

// executedLines reads a text coverage profile ("mode: set", then
// "<import path>/<file>:L1.C1,L2.C2 <statements> <count>") into the first
// lines of the executed blocks, per module-relative file.
func executedLines(profile, module string) (map[string][]int, error) {
	f, err := os.Open(profile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: unreadable line %q", profile, line)
		}
		if fields[2] == "0" {
			continue
		}
		file, span, ok := strings.Cut(fields[0], ":")
		rel, inModule := strings.CutPrefix(file, module+"/")
		if !ok || !inModule {
			continue
		}
		first, _, _ := strings.Cut(span, ".")
		n, err := strconv.Atoi(first)
		if err != nil {
			return nil, fmt.Errorf("%s: unreadable line %q", profile, line)
		}
		out[rel] = append(out[rel], n)
	}
	for k, v := range out {
		slices.Sort(v)
		out[k] = slices.Compact(v)
	}
	return out, sc.Err()
}

// ModulePath reads the module path from root's go.mod.
func ModulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod names no module", root)
}

// unitsOf are the units a stage's baseline run shows: its top-level tests
// that passed, or for a Split stage the direct subtests of its tests.
func unitsOf(st Stage, passed []string) []string {
	var out []string
	for _, name := range passed {
		switch strings.Count(name, "/") {
		case 0:
			if !st.Split {
				out = append(out, name)
			}
		case 1:
			if st.Split {
				out = append(out, name)
			}
		}
	}
	return out
}
