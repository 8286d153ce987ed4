// Package cli is the codeboost command line:
//
//	codeboost serve --db PATH [--root DIR]          take the lock, open and migrate the Store, recover, serve until SIGINT/SIGTERM
//	codeboost serve --db PATH --release-preparation ATTEMPT
//	                                                release an unknown preparation, then exit
//	codeboost scenarios [-v] [-run REGEXP]          replay the race-regression scenarios
//
// It is the only package that wires the real parts together (the lock, the
// Store, the runner); scenarios re-execute it as a real process for the
// cases about two processes, the lock, paths and links.
package cli

import (
	"fmt"
	"os"

	"github.com/codeboost/codeboost/failpoints"
)

// Failpoints is nil in the production binary. Only the scenarios' test
// binary, which re-executes itself as codeboost, sets it, to show that the
// real-process scenarios bite; the binary itself reads no variable for it.
var Failpoints *failpoints.Set

// Run runs one command line and returns the process exit code.
func Run(args []string) int {
	if len(args) < 1 {
		usage()
		return 2
	}
	switch args[0] {
	case "scenarios":
		return runScenarios(args[1:])
	case "serve":
		return serve(args[1:], os.Stdout, os.Stderr)
	case "-h", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(os.Stderr, "codeboost: unknown command %q\n", args[0])
	usage()
	return 2
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  codeboost serve --db PATH [--root DIR] [--ready FILE] [--check]
  codeboost serve --db PATH --release-preparation ATTEMPT_ID
  codeboost scenarios [-v] [-run REGEXP]`)
}

// Main is Run for callers that want a func() (testscript.Main).
func Main() { os.Exit(Run(os.Args[1:])) }
