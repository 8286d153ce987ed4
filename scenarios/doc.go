// Package scenarios holds one .txtar file per race regression of the
// contract (testdata/R<nnn>-<case>.txtar) and per later review finding
// (F-<n>), and the Go tests that replay them: every scenario, twice for
// byte-identical traces, and once under each mutant it claims to kill.
package scenarios
