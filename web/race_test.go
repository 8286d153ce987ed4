//go:build race

package web

// raceEnabled: under the race detector the browser tests skip themselves:
// they wait on a real browser, and they run in full in the plain `go test
// ./...` of the same CI run (issue 8: suites that wait on a browser run
// once, not again under -race). The server code they drive is raced by
// the handler, drain and fuzz tests.
const raceEnabled = true
