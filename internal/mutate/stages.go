package mutate

import (
	"path"
	"regexp"
	"strings"
)

// Dirs are the directories the sweep mutates, relative to the module root:
// every package that holds a guard of the contract.
var Dirs = []string{"runner", "runner/lock", "store", "holder", "ask", "suggest", "planning", "merge", "web", "app", "codehost/github", "dadapter/docker"}

// The test binaries a mutant can run against.
var (
	stScenarios = Stage{Pkg: "./scenarios", Run: "^TestScenarios$", Split: true}
	stSim       = Stage{Pkg: "./sim", Run: "."}
	stWeb       = Stage{Pkg: "./web", Run: "."}
	stPlanning  = Stage{Pkg: "./planning", Run: "."}
	stApp       = Stage{Pkg: "./app", Run: "."}
	stCLI       = Stage{Pkg: "./cmd/codeboost/cli", Run: "."}
	stE2E       = Stage{Pkg: "./e2e", Run: ".", Docker: true}
)

// killers are, per mutated directory, the test binaries after its own
// tests that exercise it, cheapest first: the simulated world (the
// scenarios, the simulator's tests) for what it links, then the packages
// that import the mutated one, and last the end-to-end tests of `codeboost
// serve` on Docker for everything the production binary wires together but
// the simulated world does not link (the lanes' coordinators are linked by
// both; since the simulated world boots its process through app/, as
// serve does, app's mutants run against the scenarios and the simulator
// first). runner/ and store/ stop at the simulator, as before: their
// mutants are the simulated world's, and an e2e run per survivor would cost
// minutes each.
var killers = map[string][]Stage{
	"runner":          {stScenarios, stSim},
	"store":           {stScenarios, stSim},
	"runner/lock":     {stApp, stE2E},
	"holder":          {stScenarios, stSim, stWeb, stApp, stE2E},
	"ask":             {stScenarios, stSim, stWeb, stApp, stE2E},
	"suggest":         {stScenarios, stSim, stPlanning, stWeb, stApp, stE2E},
	"planning":        {stApp, stE2E},
	"merge":           {stScenarios, stSim, stWeb, stApp, stE2E},
	"web":             {stScenarios, stApp, stE2E},
	"app":             {stScenarios, stSim, stCLI, stE2E},
	"codehost/github": {stApp, stE2E},
	"dadapter/docker": {stE2E},
}

// dockerDirs are the mutated directories whose own tests are a Docker
// suite.
var dockerDirs = map[string]bool{"dadapter/docker": true}

// Stages are the test binaries a mutant runs against, in the order that
// kills fast: its package's own tests, then the ones killers lists for its
// directory. A directory killers does not list gets the scenarios and the
// simulator.
//
// A Docker suite's own tests run twice: first with no engine to reach
// (its engineless tests; the Docker ones skip at once), then on Docker.
func Stages(m Mutant) []Stage {
	dir := path.Dir(m.File)
	own := []Stage{{Pkg: m.Pkg(), Run: ".", Docker: dockerDirs[dir]}}
	if dockerDirs[dir] {
		own = []Stage{{Pkg: m.Pkg(), Run: ".", NoEngine: true}, own[0]}
	}
	more, ok := killers[dir]
	if !ok {
		more = []Stage{stScenarios, stSim}
	}
	return append(own, more...)
}

// PackageOf is the package a result's mutant belongs to, as "store" or
// "runner/lock": the unit the report scores separately.
func PackageOf(id string) string {
	file, _, _ := strings.Cut(id, ":")
	return path.Dir(file)
}

// A Docker stage runs with RequireDockerEnv=1, so that a test that would
// skip for want of an engine fails instead, saying DockerMissing: such a
// failure is the sweep's environment, not the mutant, and is an error (not
// scored), never a kill. The baseline refuses a Docker stage that skipped
// a test for want of an engine, or that ran none: a binary whose tests
// all skip can kill nothing, and its mutants would all survive for a
// reason that is not the tests'. dockertest's messages are checked against
// these in the tests.
const (
	RequireDockerEnv = "CODEBOOST_REQUIRE_DOCKER"
	DockerMissing    = "no Docker daemon answers"
)

var skipLine = regexp.MustCompile(`(?m)^\s*--- SKIP: (\S+)`)

// skipped lists the tests a -test.v output says were skipped.
func skipped(out string) []string {
	var names []string
	for _, m := range skipLine.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names
}
