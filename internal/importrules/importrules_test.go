package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

const mod = "github.com/codeboost/codeboost"

// pkg is what `go list -deps -json` says of one package. Imports and Deps
// are the package's own, without its tests: tests may import anything.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// list runs `go list -deps -json ./...` at the module root (once) and
// returns every package the module's packages need, by import path.
func list(t *testing.T) map[string]*pkg {
	t.Helper()
	listed.once.Do(func() { listed.pkgs, listed.err = goList() })
	if listed.err != nil {
		t.Fatal(listed.err)
	}
	return listed.pkgs
}

var listed struct {
	once sync.Once
	pkgs map[string]*pkg
	err  error
}

func goList() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs[p.ImportPath] = &p
	}
	if pkgs[mod+"/runner"] == nil || pkgs[mod+"/cmd/codeboost"] == nil {
		return nil, fmt.Errorf("go list did not list the module's packages:\n%s", out)
	}
	return pkgs, nil
}

// ours lists the module's own packages under dir (the package itself and
// its sub-packages; "" for all of them), sorted.
func ours(pkgs map[string]*pkg, dir string) []string {
	root := mod
	if dir != "" {
		root += "/" + dir
	}
	var out []string
	for path := range pkgs {
		if path == root || strings.HasPrefix(path, root+"/") {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// reach returns every package from reaches through its imports, with the
// import chain to each, not going through any package in boundary: those
// are parts the package is allowed to depend on whose own rules say what
// they may import.
func reach(pkgs map[string]*pkg, from string, boundary ...string) map[string][]string {
	chains := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if slices.Contains(boundary, p) && p != from {
			continue
		}
		if pkgs[p] == nil {
			continue
		}
		for _, imp := range pkgs[p].Imports {
			if _, seen := chains[imp]; !seen {
				chains[imp] = append(slices.Clone(chains[p]), imp)
				queue = append(queue, imp)
			}
		}
	}
	return chains
}

// forbidden reports whether path is one of the kinds a rule names.
type kind struct {
	name  string
	match func(path string) bool
}

var (
	sqlDriver = kind{"an SQL driver", func(p string) bool {
		return p == "database/sql" || p == "database/sql/driver" || strings.HasPrefix(p, "modernc.org/sqlite") ||
			strings.HasPrefix(p, "github.com/mattn/go-sqlite3")
	}}
	dockerClient = kind{"a Docker client", func(p string) bool {
		return strings.HasPrefix(p, "github.com/moby/") || strings.HasPrefix(p, "github.com/docker/")
	}}
	netHTTP = kind{"net/http", func(p string) bool { return p == "net/http" }}
)

// TestRunnerImportsNoDriverNoDockerNoHTTP: the runner depends only on
// interfaces (design.md): nothing the runner's own code reaches is an SQL
// driver, a Docker client or net/http. The Store (which owns SQLite) and
// failpoints (whose library serves an HTTP control API) are its injected
// parts, with rules of their own, so the walk stops there.
//
// runner/lock is the one exception for SQLite: decision 1's lock is SQLite's
// exclusive lock on a small dedicated lock database, so it must open one.
// It still reaches no Docker client and no net/http.
func TestRunnerImportsNoDriverNoDockerNoHTTP(t *testing.T) {
	pkgs := list(t)
	for _, from := range ours(pkgs, "runner") {
		kinds := []kind{sqlDriver, dockerClient, netHTTP}
		if from == mod+"/runner/lock" {
			kinds = []kind{dockerClient, netHTTP}
		}
		chains := reach(pkgs, from, mod+"/store", mod+"/failpoints")
		for _, path := range sortedKeys(chains) {
			for _, k := range kinds {
				if k.match(path) {
					t.Errorf("%s reaches %s: %s", from, k.name, strings.Join(chains[path], " → "))
				}
			}
		}
	}
}

// TestStoreImportsNoRunner: the Store is below the runner.
func TestStoreImportsNoRunner(t *testing.T) {
	pkgs := list(t)
	for _, from := range ours(pkgs, "store") {
		for _, d := range pkgs[from].Deps {
			if d == mod+"/runner" || strings.HasPrefix(d, mod+"/runner/") {
				t.Errorf("%s depends on %s", from, d)
			}
		}
	}
}

// TestDAdapterImportsOnlyTheStandardLibrary: the D contract is Go types and
// interfaces only, over the standard library and words (where D's stop
// reasons are defined once, for D, the Store and the runner); its
// implementations (sub-packages) bring their own dependencies. The simulated
// D, which the demo links without the rest of the simulator, depends on
// nothing but the contract: not sim, not testscript, not the Store, not the
// runner.
func TestDAdapterImportsOnlyTheStandardLibrary(t *testing.T) {
	pkgs := list(t)
	for _, d := range pkgs[mod+"/dadapter"].Deps {
		if !pkgs[d].Standard && d != mod+"/words" {
			t.Errorf("dadapter depends on %s, which is neither the standard library nor words", d)
		}
	}
	simd := pkgs[mod+"/dadapter/simd"]
	if simd == nil {
		t.Fatal("no dadapter/simd")
	}
	for _, d := range simd.Deps {
		if !pkgs[d].Standard && d != mod+"/dadapter" && d != mod+"/words" {
			t.Errorf("dadapter/simd depends on %s: it may depend on dadapter, words and the standard library only", d)
		}
	}
}

// TestPlanImportsOnlyTheStandardLibrary: the plan document format is a
// leaf, so that the Store, the web server and the runner can all depend on
// it and it on nothing of theirs.
func TestPlanImportsOnlyTheStandardLibrary(t *testing.T) {
	pkgs := list(t)
	p := pkgs[mod+"/plan"]
	if p == nil {
		t.Fatal("no plan package")
	}
	for _, d := range p.Deps {
		if !pkgs[d].Standard {
			t.Errorf("plan depends on %s, which is not the standard library", d)
		}
	}
}

// TestHolderIsPure: the attempt holder decides and does nothing, so it
// depends on words and the part of the standard library that does no I/O
// and reads no clock: no Store, no D, no time, no os. Every lane imports
// it; it imports no lane.
func TestHolderIsPure(t *testing.T) {
	pkgs := list(t)
	h := pkgs[mod+"/holder"]
	if h == nil {
		t.Fatal("no holder package")
	}
	for _, d := range h.Imports {
		if d != mod+"/words" && d != "errors" && d != "fmt" {
			t.Errorf("holder imports %s: it may import words, errors and fmt only", d)
		}
	}
}

// TestStrictJSONImportsOnlyItsLibrary: strictjson, the one reader of
// JSON from outside the process, is a leaf over the standard library and
// github.com/go-json-experiment/json, so that the web server, the
// configuration, the Store and the code host can all use it.
func TestStrictJSONImportsOnlyItsLibrary(t *testing.T) {
	pkgs := list(t)
	p := pkgs[mod+"/strictjson"]
	if p == nil {
		t.Fatal("no strictjson package")
	}
	for _, d := range p.Deps {
		if !pkgs[d].Standard && !strings.HasPrefix(d, "github.com/go-json-experiment/json") {
			t.Errorf("strictjson depends on %s, which is neither the standard library nor github.com/go-json-experiment/json", d)
		}
	}
}

// TestLiveOutputAndDemoImports: the live output hub (dadapter/livelog) is
// a leaf over the D contract, which the application, the web server and
// the demo use; the demo agent (package demo) plays the simulated D on the
// runner's loop and clock, and only the application and the binary link
// it, so `codeboost serve` without --demo runs the same code it always did.
// The demo reaches the simulated D through dadapter/simd alone: never the
// simulator, the scenario language or the Store directly.
func TestLiveOutputAndDemoImports(t *testing.T) {
	pkgs := list(t)
	may := map[string][]string{ // package → the module's packages it may import directly
		mod + "/dadapter/livelog": {mod + "/dadapter"},
		mod + "/demo":             {mod + "/dadapter", mod + "/dadapter/simd", mod + "/dadapter/livelog", mod + "/runner", mod + "/words"},
	}
	for from, allowed := range may {
		p := pkgs[from]
		if p == nil {
			t.Fatalf("no %s", from)
		}
		for _, imp := range p.Imports {
			if pkgs[imp] != nil && !pkgs[imp].Standard && !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s; it may import only %s and the standard library", from, imp, strings.Join(allowed, ", "))
			}
		}
	}
	within := func(path string, dirs ...string) bool {
		for _, d := range dirs {
			if path == mod+"/"+d || strings.HasPrefix(path, mod+"/"+d+"/") {
				return true
			}
		}
		return false
	}
	importers := map[string][]string{ // package → the folders whose (non-test) packages may import it
		mod + "/demo":             {"app", "cmd"},
		mod + "/dadapter/livelog": {"app", "web", "demo"},
	}
	for _, from := range ours(pkgs, "") {
		for _, imp := range pkgs[from].Imports {
			if dirs, ok := importers[imp]; ok && !within(from, dirs...) {
				t.Errorf("%s imports %s; only %s may", from, imp, strings.Join(dirs, ", "))
			}
		}
	}
}

// TestOnlyTestsReachTheSimulator: no package but the scenario language
// imports sim, and no package at all imports the scenario language, the
// scenarios or go-internal's testscript (the scenario language itself
// excepted): tests, and the scenario replay, which is a test
// (scenarios/replay_test.go), are their only users.
func TestOnlyTestsReachTheSimulator(t *testing.T) {
	pkgs := list(t)
	allowed := map[string][]string{ // imported package → the non-test packages that may import it
		mod + "/sim":        {mod + "/testscript"},
		mod + "/testscript": nil,
		mod + "/scenarios":  nil,
		"github.com/rogpeppe/go-internal/testscript": {mod + "/testscript"},
	}
	all := ours(pkgs, "")
	if len(all) < 10 {
		t.Fatalf("only %d packages of the module listed", len(all))
	}
	for _, from := range all {
		for _, imp := range pkgs[from].Imports {
			if who, ok := allowed[imp]; ok && !slices.Contains(who, from) {
				also := ""
				if len(who) > 0 {
					also = " and " + strings.Join(who, ", ")
				}
				t.Errorf("%s imports %s; only tests%s may", from, imp, also)
			}
		}
	}
}

// TestBinaryLinksNoScenario: `go list -deps ./cmd/codeboost` names no
// scenario language, no simulator, no scenario files and no test helper.
func TestBinaryLinksNoScenario(t *testing.T) {
	pkgs := list(t)
	bin := pkgs[mod+"/cmd/codeboost"]
	for _, bad := range []string{
		mod + "/testscript", mod + "/sim", mod + "/scenarios", "github.com/rogpeppe/go-internal/testscript",
		mod + "/internal/testbin", mod + "/internal/mutant", "testing",
	} {
		if slices.Contains(bin.Deps, bad) {
			chains := reach(pkgs, bin.ImportPath)
			t.Errorf("cmd/codeboost links %s: %s", bad, strings.Join(chains[bad], " → "))
		}
	}
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDockerClientStaysInTheAdapter enforces design.md's "Dependencies,
// chosen": the moby client is pinned and used only inside dadapter/docker
// (the adapter, its image builder and its test support); the conformance
// suite (dadapter/dtest) and the Docker test support (dockertest) are
// imported by tests only.
func TestDockerClientStaysInTheAdapter(t *testing.T) {
	pkgs := list(t)
	for _, from := range ours(pkgs, "") {
		inAdapter := from == mod+"/dadapter/docker" || strings.HasPrefix(from, mod+"/dadapter/docker/")
		for _, imp := range pkgs[from].Imports {
			if strings.HasPrefix(imp, "github.com/moby/moby/") && !inAdapter {
				t.Errorf("%s imports %s; only dadapter/docker may", from, imp)
			}
			if (imp == mod+"/dadapter/dtest" || imp == mod+"/dadapter/docker/dockertest") && !strings.HasSuffix(from, "_test") {
				t.Errorf("%s imports %s; only tests may", from, imp)
			}
		}
	}
}

// TestOnlyTheBinaryLinksDocker: the Docker client reaches the binary
// through cmd/codeboost's main (app.OpenEngine) and nothing else of the
// module links it. The simulation's packages (app, cli, web, the runner)
// stay free of it, so the scenarios' test binary, which the bite test links
// once per mutant, does not carry the client and its dependencies.
func TestOnlyTheBinaryLinksDocker(t *testing.T) {
	pkgs := list(t)
	for _, from := range ours(pkgs, "") {
		if from == mod+"/cmd/codeboost" || from == mod+"/dadapter/docker" || strings.HasPrefix(from, mod+"/dadapter/docker/") {
			continue
		}
		for _, dep := range pkgs[from].Deps {
			if strings.HasPrefix(dep, "github.com/moby/moby/") {
				chains := reach(pkgs, from)
				t.Errorf("%s links %s: %s", from, dep, strings.Join(chains[dep], " → "))
				break
			}
		}
	}
	if !slices.Contains(pkgs[mod+"/cmd/codeboost"].Deps, mod+"/dadapter/docker") {
		t.Errorf("cmd/codeboost does not link dadapter/docker: serve could not run an agent")
	}
}
