// Package mutate is the automatic mutation sweep (`make mutate`): it makes
// mutants of every package that holds a guard of the contract (Dirs:
// runner/, runner/lock/, store/, ask/, suggest/, planning/, merge/, web/,
// app/, codehost/github/ and dadapter/docker/) from a fixed list of
// operators, applies each with `go test -overlay` (internal/mutant; the
// source tree is never edited), runs the tests that should notice it and
// prints the score, the score per package and every survivor.
//
// # Operators
//
// The list is fixed, so that a score means the same thing from run to run.
// Each operator makes one single-line-range edit (an internal/mutant.Edit
// with a Line):
//
//   - negate: an if condition is negated: `if c {` → `if !(c) {` (`if !c {`
//     when c is an operand), and `if !c {` → `if c {`. Error checks are left
//     to ignore-error, and loop conditions are not negated (that mostly
//     makes a loop spin until the timeout, which costs much and says
//     little; boundary covers them).
//   - boundary: a comparison moves its boundary: `>=`↔`>`, `<=`↔`<`, in any
//     expression (conditions, loop headers, assignments, returns); and the
//     time comparisons `a.Before(b)` → `!a.After(b)`, `a.After(b)` →
//     `!a.Before(b)`, `!a.Before(b)` → `a.After(b)`, `!a.After(b)` →
//     `a.Before(b)`.
//   - drop-guard: an if without else whose body ends in return or
//     continue, and whose condition is not an error check, never fires:
//     `if c {` → `if c && false {`. The condition is still evaluated, so a
//     call in it still happens and the variables it reads stay used (the
//     mutant compiles); otherwise it is the program without the guard.
//   - swap-steps: two adjacent statements of one block swap places, when
//     both are calls, assignments, ++/-- or sends on lines of their own,
//     they differ, both have an effect (a call that is not a builtin or a
//     conversion, a send, a write through a field, index or pointer, or an
//     assignment to a variable the other statement mentions), and neither
//     mentions a name the other declares with := (so the swap compiles).
//     A swap that moves a step across a call of Lock, Unlock, RLock or
//     RUnlock (Mutant.Race) leaves a step unguarded: the plain test binary
//     runs the same steps in the same order and cannot see it, so a
//     survivor of the plain pass runs again built with -race, and a data
//     race the detector reports kills it (any other failure of that slower
//     build is noted, not counted).
//   - ignore-error: an error check never fires: `if err != nil {` →
//     `if err != nil && false {`, where the checked value is named err, or
//     ends in err or Err.
//   - drop-where-term: in an SQL string literal, an UPDATE whose WHERE clause
//     has two or more terms joined by AND (and no top-level OR) loses one
//     term's effect while keeping its placeholders: `AND x = ?` →
//     `AND (x = ? OR 1)`, so the argument count still matches.
//
// Nothing is mutated in _test.go files, nor in statements or expressions
// that are failpoint or trace noise: a call of Fire, Eval, Hook, Err,
// Enable, SetHook or OnEach on a failpoint set (a receiver ending in "fp"),
// a call of trace/Trace/tracef/logf or of package log, a string literal
// naming a "mutant/…" — and no if whose condition mentions them, or whose
// body only does them (printing-only changes are not behaviour).
//
// # Stable IDs
//
// A mutant's ID is "<file>:<func>:<operator>:<hash>", with "~<n>" appended
// for the n-th (n ≥ 2) identical mutant in the same function; the hash is
// over the operator and the whitespace-normalised original and mutated
// lines. Lines added or removed elsewhere do not change it, so an ID can
// name a mutant in the equivalence file across unrelated edits.
//
// # Running a mutant
//
// Its overlay is built into the test binary of the mutated package (without
// vet: a mutant needs only to compile; one that does not is "invalid", not
// killed), then the tests run, stopping at the first failure, in an order
// that kills fast (Stages): the package's own tests, then the other test
// binaries that exercise it, cheapest first — ./scenarios' TestScenarios
// and ./sim's tests for what the simulated world links (runner, store and
// the lanes), the importing packages' tests (planning, web, app,
// cmd/codeboost/cli), and last ./e2e, which runs the production binary
// (built under the same overlay) on Docker, for every package but runner/
// and store/. Benchmarks never run; tests matching -skip, by default the
// *Bites tests that re-run others under named mutants, are skipped. A test
// binary that runs past its timeout kills the mutant ("timeout").
//
// The Docker suites (dadapter/docker's own tests, ./e2e) run with
// CODEBOOST_REQUIRE_DOCKER=1, so a test that finds no engine fails instead
// of skipping; such a failure ("no Docker daemon answers") is an error,
// not a kill, and the baseline refuses a stage that ran no test at all or
// skipped one for want of an engine. A skip never kills: only a failing
// test that ran does. Before its Docker run, dadapter/docker's own binary
// runs once with no engine to reach (a NoEngine stage: DOCKER_HOST names a
// socket that cannot exist, and the variable is empty): its engineless
// tests run and its Docker tests skip at once, so a mutant those tests
// kill costs seconds, not a turn of the machine's Docker lock.
//
// # Choosing the tests by coverage
//
// After the baseline, each stage's tests run once more, one at a time, in
// a binary built with coverage of every mutated package (a Split stage,
// ./scenarios, counts each scenario as a test); internal/testbin builds
// the codeboost binary that e2e starts with the same coverage, so what a
// serve process enters counts too. What each test entered is kept in
// bin/mutate-coverage.json under a hash of the module's Go files, so a
// later sweep over the same tree (-only while fixing a survivor) skips the
// collection. A mutant's stage then runs only the tests that entered its
// function, and a stage none of whose tests did is not even built. A test
// whose coverage run failed is run for every mutant. Coverage can miss a
// test (a process killed with -9 writes none) but never invents one, so
// every survivor is run again with every test of every stage (Confirm)
// before it is reported: the verdicts are those of a sweep that runs every
// test, and the time is spent on the survivors only. -coverage=false runs
// every test for every mutant.
//
// # Sampling
//
// A sample of n is spread over the packages in proportion to their mutant
// counts (largest remainder), and within a package taken by a hash of the
// seed and each mutant's ID (Sample), so that each package's score in the
// report is over a known share of the sample.
//
// # Equivalent mutants
//
// scenarios/mutants/equivalent.txt lists the mutants no test can kill
// because they do not change behaviour, each with a written reason (its
// format is at its top). They are left out of the score's denominator and
// listed separately; an entry whose ID no longer exists is stale, and
// TestEquivalentFileIsCurrent fails on it.
package mutate
