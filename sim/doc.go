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
// A world's process is package app's, booted and stopped through app's
// startup and shutdown steps on the world's parts (app.Parts), as serve
// boots it on the real ones. The parts themselves (virtual time, the loop,
// the simulated GitHub and planner) are package sim/simenv's, which does
// not import app, so that the tests of the packages app imports (web,
// demo) can run on them too; sim re-exports them under their old names.
//
// It may import app, runner, store, dadapter (with dadapter/simd) and the
// leaf packages. Only tests and the scenario language (testscript) import
// it.
package sim
