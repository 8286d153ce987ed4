package mutant

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// GoCommand is the go command that builds mutants: $GOROOT/bin/go when
// `go test` set GOROOT for the test, else the one on PATH.
func GoCommand() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// BuildTest builds the test binary of pkg (a path relative to the module
// root, such as "./scenarios") under overlay into out. An empty overlay
// builds the unmutated tree. The Go build cache makes a mutant whose files
// did not change nearly free to rebuild.
func BuildTest(ctx context.Context, root, pkg, overlay, out string) error {
	return BuildTestFlags(ctx, root, pkg, overlay, out)
}

// BuildTestFlags is BuildTest with extra go test build flags, such as
// "-vet=off" for the sweep, whose mutants need only compile.
func BuildTestFlags(ctx context.Context, root, pkg, overlay, out string, flags ...string) error {
	args := []string{"test", "-c", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, flags...)
	cmd := exec.CommandContext(ctx, GoCommand(), append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// Compiles builds every Go package m touches under its overlay, without
// linking or testing; the error is the compiler's. The reanchor command
// checks a mutant it moved with it: a block moved into another file can
// leave that file an unused import (the mutant lines drop its only use).
// internal/mutate's Compiles does the same for one package and could call
// this.
func (m Mutant) Compiles(ctx context.Context, root string) error {
	dir, err := os.MkdirTemp("", "mutant-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	overlay, err := m.Overlay(root, dir)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, f := range m.Files() {
		pkg := "./" + path.Dir(f)
		if !strings.HasSuffix(f, ".go") || seen[pkg] {
			continue
		}
		seen[pkg] = true
		cmd := exec.CommandContext(ctx, GoCommand(), "build", "-overlay", overlay, "-o", os.DevNull, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return nil
}

// OverlayEnv names the overlay file a mutant's test binaries run under, for
// tests that build the codeboost binary themselves (internal/testbin): they
// build it under the same overlay, so a real process carries the mutant too.
const OverlayEnv = "CODEBOOST_TEST_OVERLAY"

// Result is what one run of a test binary said about each test it ran.
type Result struct {
	Passed, Failed []string // test names as -test.v prints them
	Output         string
	Err            error // the binary's own exit error, if any
}

var verdict = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// RunTests runs a test binary in dir (its package's directory) with
// -test.run pattern and records each test's verdict. failfast stops at the
// first failure, which is all a sweep needs to count a mutant killed. The
// overlay ("" for none) reaches the tests through OverlayEnv. Extra
// arguments follow the defaults, so a later "-test.timeout" overrides 10m.
func RunTests(ctx context.Context, bin, dir, pattern string, failfast bool, overlay string, extra ...string) Result {
	args := []string{"-test.run", pattern, "-test.v", "-test.count=1", "-test.timeout=10m"}
	if failfast {
		args = append(args, "-test.failfast")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
	cmd.Dir = dir
	// The claiming tests run whole: a CI pass that splits the scenario
	// replays between its passes (CODEBOOST_SCENARIOS_SPLIT, make test)
	// must not make a claimed TestScenarios skip itself under a mutant.
	cmd.Env = append(os.Environ(), "GOFLAGS=", OverlayEnv+"="+overlay, "CODEBOOST_SCENARIOS_SPLIT=")
	// A process the tests started and left behind must not hold the output
	// pipe open forever once the binary has exited or been cancelled.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r := Result{Err: cmd.Run()}
	r.Output = out.String()
	sc := bufio.NewScanner(strings.NewReader(r.Output))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		m := verdict.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		switch m[1] {
		case "PASS":
			r.Passed = append(r.Passed, m[2])
		case "FAIL":
			r.Failed = append(r.Failed, m[2])
		}
	}
	return r
}

// Pattern builds a -test.run pattern that matches exactly the given tests,
// each named "Top" or "Top/sub".
func Pattern(names []string) string {
	tops := map[string][]string{}
	var order []string
	for _, n := range names {
		top, sub, _ := strings.Cut(n, "/")
		if _, ok := tops[top]; !ok {
			order = append(order, top)
		}
		if sub != "" {
			tops[top] = append(tops[top], regexp.QuoteMeta(sub))
		} else if tops[top] == nil {
			tops[top] = []string{}
		}
	}
	if len(order) == 1 {
		top := order[0]
		if subs := tops[top]; len(subs) > 0 {
			return "^" + regexp.QuoteMeta(top) + "$/^(" + strings.Join(subs, "|") + ")$"
		}
		return "^" + regexp.QuoteMeta(top) + "$"
	}
	// Several top-level tests: go test's -run cannot say "this sub of A,
	// that sub of B", so their subtests all run; callers check the names.
	for i, t := range order {
		order[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(order, "|") + ")$"
}
