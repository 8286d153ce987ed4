//go:build race

package scenarios

// raceEnabled: under the race detector the bite test is skipped; it runs in
// full in the plain `go test ./...` of the same CI run, and a mutant's
// effect does not depend on the detector.
const raceEnabled = true
