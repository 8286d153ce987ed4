package gitrepo

import (
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/ids"
)

// Errors the package returns, each wrapped with details; test with errors.Is.
var (
	// ErrBadCommit means a commit ID was not 40 lowercase hex digits, so
	// it never reached git, where a name like "HEAD" or "-x" would mean
	// something else.
	ErrBadCommit = errors.New("bad commit ID")

	// ErrBadBundle means a bundle was not exactly one commit, named by
	// its one ref, whose only parent is the expected base; no ref is left
	// for it.
	ErrBadBundle = errors.New("bad commit bundle")

	// ErrNotOwnerOnly means a directory on the way to the repository is
	// writable by someone other than the current user, who could then
	// plant objects or refs that codeboost would later trust.
	ErrNotOwnerOnly = errors.New("not writable by the current user only")
)

// checkCommit refuses anything but a full lowercase SHA-1.
func checkCommit(what, s string) error {
	if len(s) == 40 && isLowerHex(s) {
		return nil
	}
	return fmt.Errorf("%w: %s %q is not 40 lowercase hex digits", ErrBadCommit, what, bounded(s))
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkAttempt(id string) error { return ids.CheckUUID("attempt ID", id) }

// bounded keeps an echoed input from flooding a message.
func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
