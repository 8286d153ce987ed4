// Package scenarios holds one .txtar file per race regression of the
// contract (testdata/R<nnn>-<case>.txtar) and per later review finding
// (F-<n>), and the Go tests that replay them: every scenario, twice for
// byte-identical traces, and once under each mutant it claims to kill.
// TestReplay with -traces is the scenario replay (`make replay`): it prints
// each scenario's trace. Nothing but tests imports the scenarios, and the
// codeboost binary carries none of them.
package scenarios
