// Package importrules holds the test that enforces the import rules of
// design.md's Layout table with `go list`: what the runner, the Store, the
// D contract, the simulated D, the plan format, the live output hub and the
// demo may import, who may import the last two, that only tests and the
// scenario language reach the simulator, and that the codeboost binary
// links no scenario. It has no code of its own and imports nothing.
package importrules
