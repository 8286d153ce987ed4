package codehost

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	repoRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	shaRE  = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// maxRepo bounds a repository name: GitHub's owners are at most 39
// characters and names at most 100; anything longer is not a repository.
const maxRepo = 140

// CheckRepo refuses anything but "owner/name" in GitHub's characters. The
// name becomes part of a request path, so "." and ".." (which a URL would
// resolve to another path) are refused too.
func CheckRepo(repo string) error {
	_, _, err := SplitRepo(repo)
	return err
}

// SplitRepo checks repo as CheckRepo does and returns its two parts.
func SplitRepo(repo string) (owner, name string, err error) {
	if len(repo) > maxRepo || !repoRE.MatchString(repo) {
		return "", "", fmt.Errorf("%w: repo %q is not owner/name in letters, digits, '_', '.' and '-'", ErrBadInput, shorten(repo))
	}
	owner, name, _ = strings.Cut(repo, "/")
	for _, part := range []string{owner, name} {
		if part == "." || part == ".." {
			return "", "", fmt.Errorf("%w: repo %q has a %q part", ErrBadInput, repo, part)
		}
	}
	return owner, name, nil
}

// CheckNumber refuses issue and pull request numbers GitHub never gives.
func CheckNumber(number int) error {
	if number <= 0 {
		return fmt.Errorf("%w: number %d is not positive", ErrBadInput, number)
	}
	return nil
}

// CheckSHA refuses anything but a full lowercase commit ID: a merge pinned
// to an abbreviated or malformed head would not pin anything.
func CheckSHA(sha string) error {
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("%w: head SHA %q is not 40 lowercase hex digits", ErrBadInput, shorten(sha))
	}
	return nil
}

// shorten bounds a refused argument echoed back in an error.
func shorten(s string) string {
	const max = 64
	if len(s) > max {
		return Clip(s[:max]) + "…"
	}
	return Clip(s)
}
