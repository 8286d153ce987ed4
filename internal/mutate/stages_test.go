package mutate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const repoRoot = "../.."

// Every mutated package runs its own tests first, then test binaries that
// exist and have tests; every package but runner/ and store/ ends with the
// end-to-end suite, and the Docker suites are marked so.
func TestStagesPerPackage(t *testing.T) {
	for _, d := range Dirs {
		m := Mutant{ID: d + "/x.go:F:negate:0", File: d + "/x.go"}
		sts := Stages(m)
		if d == "dadapter/docker" {
			// A Docker suite's own tests run first with no engine.
			if sts[0] != (Stage{Pkg: "./" + d, Run: ".", NoEngine: true}) || sts[0].Key() == sts[1].Key() {
				t.Errorf("%s: first stage %+v, want its own tests with no engine, under a key of its own", d, sts[0])
			}
			sts = sts[1:]
		}
		if sts[0].Pkg != "./"+d || sts[0].Docker != (d == "dadapter/docker") || sts[0].NoEngine {
			t.Errorf("%s: first stage %+v, want its own tests", d, sts[0])
		}
		if _, ok := killers[d]; !ok {
			t.Errorf("%s is mutated but killers does not say what exercises it", d)
		}
		last := sts[len(sts)-1]
		wantE2E := d != "runner" && d != "store"
		if (last.Pkg == "./e2e") != wantE2E {
			t.Errorf("%s: last stage %s, e2e wanted: %v", d, last.Pkg, wantE2E)
		}
		for _, st := range sts[1:] {
			tests, _ := filepath.Glob(filepath.Join(repoRoot, st.Pkg, "*_test.go"))
			if len(tests) == 0 {
				t.Errorf("%s: stage %s has no tests", d, st.Pkg)
			}
			if st.Docker != (st.Pkg == "./e2e") {
				t.Errorf("%s: stage %s Docker=%v", d, st.Pkg, st.Docker)
			}
		}
	}
	for d := range killers {
		if !slices.Contains(Dirs, d) {
			t.Errorf("killers lists %s, which is not mutated", d)
		}
	}
}

// A NoEngine stage reaches no engine and does not require one: its Docker
// tests skip, whatever the sweep's own environment says; a Docker stage
// requires one.
func TestStageEnvironments(t *testing.T) {
	noEngine := Stage{Pkg: "./dadapter/docker", NoEngine: true}.env()
	if !slices.Contains(noEngine, RequireDockerEnv+"=") || !slices.Contains(noEngine, "DOCKER_HOST="+noEngineHost) {
		t.Errorf("NoEngine stage env %q", noEngine)
	}
	if docker := (Stage{Pkg: "./e2e", Docker: true}).env(); !slices.Equal(docker, []string{RequireDockerEnv + "=1"}) {
		t.Errorf("Docker stage env %q", docker)
	}
	if plain := (Stage{Pkg: "./store"}).env(); !slices.Equal(plain, []string{RequireDockerEnv + "="}) {
		t.Errorf("plain stage env %q", plain)
	}
}

// The sweep's Docker words are dockertest's: the variable that turns a
// skip into a failure, and the failure's message.
func TestDockerWordsAreDockertests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "dadapter/docker/dockertest/dockertest.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`RequireEnv = "` + RequireDockerEnv + `"`, `Unavailable(t, "` + DockerMissing} {
		if !strings.Contains(string(b), s) {
			t.Errorf("dockertest.go no longer says %q", s)
		}
	}
}

func TestSampleSpreadsByPackage(t *testing.T) {
	var ms []Mutant
	for p, n := range map[string]int{"a": 100, "b": 50, "c": 10, "d/e": 3} {
		for i := 0; i < n; i++ {
			ms = append(ms, Mutant{ID: p + "/x.go:F:negate:" + strings.Repeat("z", i)})
		}
	}
	slices.SortFunc(ms, func(x, y Mutant) int { return strings.Compare(x.ID, y.ID) })
	// 16 of 163: a 9.82, b 4.91, c 0.98, d/e 0.29 → 9, 4, 0, 0 and the
	// three left to the largest remainders: c, b, a.
	got := map[string]int{}
	for _, m := range Sample(ms, 3, 16) {
		got[PackageOf(m.ID)]++
	}
	want := map[string]int{"a": 10, "b": 5, "c": 1}
	if len(got) != len(want) || got["a"] != 10 || got["b"] != 5 || got["c"] != 1 {
		t.Errorf("spread %v, want %v", got, want)
	}
	if q := Spread([]string{"x", "y"}, func(k string) int { return 1 }, 3); q["x"] != 2 || q["y"] != 1 {
		t.Errorf("a tie goes to the first key: %v", q)
	}
}

func TestReportScoresEachPackage(t *testing.T) {
	rs := []Result{
		{ID: "store/a.go:F:negate:1", Verdict: Killed},
		{ID: "store/a.go:F:negate:2", Verdict: Survived},
		{ID: "store/a.go:F:negate:3", Verdict: Equivalent},
		{ID: "runner/lock/l.go:G:negate:1", Verdict: TimedOut},
		{ID: "runner/lock/l.go:G:negate:2", Verdict: Error},
	}
	rep := NewReport(rs)
	if p := rep.Packages["store"]; p.Score != 50 || p.Run != 3 {
		t.Errorf("store: %+v", p)
	}
	if p := rep.Packages["runner/lock"]; p.Score != 100 || p.Run != 2 {
		t.Errorf("runner/lock: %+v", p)
	}
	if rep.Score < 66.6 || rep.Score > 66.7 {
		t.Errorf("score %.2f", rep.Score)
	}
	var b strings.Builder
	rep.Print(&b)
	if !strings.Contains(b.String(), "store             50.0% =   1/2") {
		t.Errorf("no per-package line for store:\n%s", b.String())
	}
}

// dockerToy is a test that plays dockertest: with no engine it fails when
// the sweep requires Docker and skips otherwise; ENGINE=up stands for an
// engine that answers.
const dockerToy = `package lib

import (
	"os"
	"testing"
)

func TestNeedsDocker(t *testing.T) {
	if os.Getenv("ENGINE") != "up" || os.Getenv("DOCKER_HOST") == "` + noEngineHost + `" {
		if os.Getenv("` + RequireDockerEnv + `") == "1" {
			t.Fatalf("` + DockerMissing + ` at nowhere")
		}
		t.Skip("` + DockerMissing + `, skipping")
	}
	if Clamp(5, 3) != 3 {
		t.Fatal("not clamped")
	}
}
`

// A Docker stage runs with the variable set: with an engine its failure
// kills; without one, the failure is an error and not a kill, and the
// baseline refuses to sweep. A binary whose every test skips is refused
// too: it could kill nothing. A Docker stage's timeout leaves room to wait
// for the machine-wide Docker lock.
func TestDockerStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	root := toyModule(t, map[string]string{"lib/lib.go": toyLib, "lib/lib_test.go": dockerToy})
	gen, err := Generate(root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	var killable Mutant
	for _, m := range gen {
		if m.Op == OpDropGuard && strings.Contains(m.Edit.Original, "if n > max {") {
			killable = m
		}
	}
	docker := func(m Mutant) []Stage { return []Stage{{Pkg: m.Pkg(), Run: ".", Docker: true}} }
	opts := Options{Root: root, Jobs: 1, Timeout: time.Minute, Stages: docker}

	t.Setenv("ENGINE", "down")
	if _, _, err := Baseline(context.Background(), opts, gen); err == nil || !strings.Contains(err.Error(), "fails on the unmutated tree") {
		t.Errorf("baseline without an engine: %v", err)
	}
	if r := NewSweep(opts).One(context.Background(), killable); r.Verdict != Error || !strings.Contains(r.Detail, "Docker engine did not answer") {
		t.Errorf("a mutant run without an engine: %s by %s\n%s", r.Verdict, r.By, r.Detail)
	}
	plain := Options{Root: root, Jobs: 1, Timeout: time.Minute,
		Stages: func(m Mutant) []Stage { return []Stage{{Pkg: m.Pkg(), Run: "."}} }}
	if _, _, err := Baseline(context.Background(), plain, gen); err == nil || !strings.Contains(err.Error(), "ran no test") {
		t.Errorf("baseline of a binary that skips every test: %v", err)
	}
	if r := NewSweep(plain).One(context.Background(), killable); r.Verdict != Survived {
		t.Errorf("a skip killed a mutant: %s by %s", r.Verdict, r.By)
	}

	t.Setenv("ENGINE", "up")
	sw, _, err := Baseline(context.Background(), opts, gen)
	if err != nil {
		t.Fatal(err)
	}
	if to := sw.Timeouts()["./lib"]; to != DockerMinTimeout {
		t.Errorf("a Docker stage's timeout is %s, want at least %s (it may wait for the machine's Docker lock)", to, DockerMinTimeout)
	}
	if r := sw.One(context.Background(), killable); r.Verdict != Killed || r.By != "./lib TestNeedsDocker" {
		t.Errorf("with an engine: %s by %s\n%s", r.Verdict, r.By, r.Detail)
	}

	// A Docker suite's stages as Stages gives them: the no-engine run
	// first (where the test skips), then the Docker run of the same
	// binary, which must still be there to run and kill.
	opts.Stages = func(m Mutant) []Stage {
		return []Stage{{Pkg: m.Pkg(), Run: ".", NoEngine: true}, {Pkg: m.Pkg(), Run: ".", Docker: true}}
	}
	r := NewSweep(opts).One(context.Background(), killable)
	if r.Verdict != Killed || r.By != "./lib TestNeedsDocker" {
		t.Errorf("a no-engine stage, then the Docker stage: %s by %s (steps %q)\n%s", r.Verdict, r.By, r.Steps, r.Detail)
	}
	if n := len(r.Steps); n != 3 || !strings.HasPrefix(r.Steps[0], "build ") || strings.Contains(r.Steps[1], "build") || strings.Contains(r.Steps[2], "build") {
		t.Errorf("steps %q, want one build and two runs", r.Steps)
	}
}

// A test binary runs in a mirror of the module down to its package: what
// it reads by a relative path is there (cmd/codeboost/cli reads
// ../../../README.md), its package's Go files and the module's go.mod and
// .git are not (the go command and git find the real ones above), and
// removing the mirror leaves the source tree whole.
func TestScratchMirrorsTheModule(t *testing.T) {
	root := toyModule(t, map[string]string{
		"README.md": "readme", "a/other.txt": "other", "a/b/x.go": "package b",
		"a/b/testdata/t.txt": "data", ".git/HEAD": "ref",
	})
	top, dir, err := scratch(root, "./a/b")
	if err != nil {
		t.Fatal(err)
	}
	if rel, _ := filepath.Rel(root, dir); rel != filepath.Join(ScratchDir, filepath.Base(top), "a", "b") {
		t.Fatalf("scratch dir %s", rel)
	}
	for p, want := range map[string]string{"testdata/t.txt": "data", "../../README.md": "readme", "../other.txt": "other"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
			t.Errorf("%s from the scratch dir: %q, %v", p, b, err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "x.go"), filepath.Join(top, "go.mod"), filepath.Join(top, ".git"), filepath.Join(top, ScratchDir)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is in the mirror: %v", p, err)
		}
	}
	if err := os.RemoveAll(top); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"README.md", "a/b/x.go", "a/b/testdata/t.txt", "go.mod"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("removing the mirror removed %s: %v", p, err)
		}
	}
}
