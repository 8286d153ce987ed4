// Package simenv is what a simulated process runs in and talks to, apart
// from the process itself: virtual time (Clock), the single-threaded event
// loop every coordinator shares (Loop), the simulated GitHub and the
// simulated planning provider. Package sim builds its worlds on them and
// boots the process through package app; the unit tests of the packages
// app imports (web, demo), which cannot import sim, use them directly.
//
// It may import runner, codehost, suggest and the leaf packages, never
// app or sim.
package simenv
