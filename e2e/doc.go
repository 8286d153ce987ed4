// Package e2e holds the end-to-end tests of `codeboost serve` on a real
// Docker engine: the built binary, a configuration file, a user's git
// repository and the fake agent image, driven only through the HTTP API
// and signals, as a person and their tools would. It has no code of its
// own; `make soak` runs its cycle 20 times in a row.
package e2e
