package gitrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/ids"
)

// Repo is one runner-owned repository and the user repository it takes base
// commits from. Its fields never change after Open, so its methods may run
// concurrently; git's own ref locks order concurrent writes.
type Repo struct {
	path     string // <runnerRoot>/<runnerOwner>/repositories/<hash>.git; absolute
	userRepo string // absolute and cleaned; only ever read
	bin      gitBin
}

// Open opens the runner-owned repository for userRepo, creating it and the
// directories above it (0700) when missing. It is idempotent: an existing
// repository keeps its objects and refs, and one that a crash left
// half-made (without its attributes, written last) is made whole. It
// refuses, with ErrNotOwnerOnly, a directory on the way (runnerRoot
// included) that is not owned by the current user or is writable by group
// or others, because whoever can write there can plant the commits
// codeboost later trusts.
func Open(ctx context.Context, runnerRoot, runnerOwner, userRepo string) (*Repo, error) {
	if !filepath.IsAbs(runnerRoot) {
		return nil, fmt.Errorf("gitrepo: runner root %q is not an absolute path", bounded(runnerRoot))
	}
	if !ids.ValidToken(runnerOwner) {
		return nil, fmt.Errorf("gitrepo: runner owner %q is not 32 lowercase hex digits", bounded(runnerOwner))
	}
	if !filepath.IsAbs(userRepo) {
		return nil, fmt.Errorf("gitrepo: user repository %q is not an absolute path", bounded(userRepo))
	}
	userRepo = filepath.Clean(userRepo)
	bin, err := findGit()
	if err != nil {
		return nil, err
	}
	runnerRoot = filepath.Clean(runnerRoot)
	repos := filepath.Join(runnerRoot, runnerOwner, "repositories")
	r := &Repo{path: filepath.Join(repos, repoName(userRepo)), userRepo: userRepo, bin: bin}
	if err := ensureOwnerOnly(runnerRoot, r.path); err != nil {
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	// The attributes are written once init has succeeded, so finding
	// them proves a whole repository: init is then not run again (a git
	// call is a good part of an allocation's time; BenchmarkAttempt in
	// dadapter/docker).
	if r.hasAttributes() {
		return r, nil
	}
	// --shared=0600 keeps what git creates inside owner-only whatever the
	// umask. Re-running init on an existing repository only adds what is
	// missing.
	if _, err := r.git(ctx, place{}, nil, "init", "--quiet", "--bare", "--shared=0600", "--", r.path); err != nil {
		return nil, fmt.Errorf("gitrepo: create the runner-owned repository %s: %w", r.path, err)
	}
	if err := r.writeAttributes(); err != nil {
		return nil, fmt.Errorf("gitrepo: the runner-owned repository's attributes: %w", err)
	}
	return r, nil
}

// Path is the runner-owned repository's directory.
func (r *Repo) Path() string { return r.path }

// repoName names a user repository's runner-owned repository by its path
// alone, so that the same configured path always finds the same commits.
// Sixteen bytes of SHA-256 are plenty to keep paths apart.
func repoName(userRepo string) string {
	sum := sha256.Sum256([]byte(userRepo))
	return hex.EncodeToString(sum[:16]) + ".git"
}

// findGit resolves git and env once, from the runner's PATH, to absolute
// paths; every call then runs with a fixed PATH of its own.
func findGit() (gitBin, error) {
	env, err := exec.LookPath("env")
	if err != nil {
		return gitBin{}, fmt.Errorf("gitrepo: find env: %w", err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return gitBin{}, fmt.Errorf("gitrepo: find git: %w", err)
	}
	if env, err = filepath.Abs(env); err != nil {
		return gitBin{}, fmt.Errorf("gitrepo: find env: %w", err)
	}
	if git, err = filepath.Abs(git); err != nil {
		return gitBin{}, fmt.Errorf("gitrepo: find git: %w", err)
	}
	if strings.Contains(git, "=") {
		// env would read it as an assignment.
		return gitBin{}, fmt.Errorf("gitrepo: git's path %q contains '='", git)
	}
	return gitBin{env: env, git: git, path: filepath.Dir(git) + ":/usr/local/bin:/usr/bin:/bin"}, nil
}
