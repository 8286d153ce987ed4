// Package sim is the deterministic world the scenarios run in: a virtual
// clock, a single-threaded event loop, a seeded ID source, failpoints scoped
// to one world, the simulated D (package dadapter/simd, as unkind as the
// contract allows), a real SQLite file, and a readable trace.
//
// Nothing in a world runs on a goroutine of its own. The scenario's goroutine
// delivers every event: a command does its work, then the loop drains to
// quiescence; advancing the clock fires due timers in order, each followed by
// a drain. The same script therefore gives the same trace on every run,
// whatever GOMAXPROCS is.
//
// It may import runner, store, dadapter (with dadapter/simd) and the leaf
// packages. Only tests and the scenario language (testscript) import it.
package sim
