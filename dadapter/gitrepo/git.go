package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/procgroup"
)

// gitOptions apply to every call and, where git passes them on, to the
// processes it starts. Hooks are off so that no script in any repository
// runs; maintenance is off so that no call writes more than it was asked
// to. protocol.version=2 is what lets a fetch name any object by ID: over
// version 0 the client refuses to ask for an object no ref advertises, and a
// local upload-pack never sees our -c options (git drops
// GIT_CONFIG_PARAMETERS for local transports), so
// uploadpack.allowAnySHA1InWant cannot be set from here.
var gitOptions = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "protocol.file.allow=always",
	"-c", "protocol.version=2",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "init.defaultBranch=main",
	"-c", "advice.detachedHead=false",
}

// place is where one git call runs. A bare repository is named with
// --git-dir so that git never searches for one; a work tree is entered with
// -C, and the search stops at its parent, so a path that is not a
// repository fails instead of finding an enclosing one.
type place struct {
	dir  string
	bare bool
}

func bareAt(dir string) place { return place{dir: dir, bare: true} }
func treeAt(dir string) place { return place{dir: dir} }

// gitBin is the host's git and the env that starts it. procgroup.Run has no
// environment option and would pass the runner's whole environment on, so
// every call is `env -i NAME=VALUE… git …`: env replaces itself with git, so
// the group's leader, and its identity, stay the same process.
type gitBin struct {
	env  string // absolute path of env
	git  string // absolute path of git
	path string // PATH for git and what it starts
}

// argv builds one call. home is the runner-owned repository: git reads
// nothing there, and HOME must not lead to the user's files.
func (b gitBin) argv(home string, at place, args []string) []string {
	v := []string{
		"-i", "--",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_TERMINAL_PROMPT=0",
		"HOME=" + home,
		"LC_ALL=C",
		"PATH=" + b.path,
	}
	if !at.bare && at.dir != "" {
		v = append(v, "GIT_CEILING_DIRECTORIES="+filepath.Dir(at.dir))
	}
	v = append(v, b.git)
	v = append(v, gitOptions...)
	switch {
	case at.dir == "":
	case at.bare:
		v = append(v, "--git-dir="+at.dir)
	default:
		v = append(v, "-C", at.dir)
	}
	return append(v, args...)
}

// start runs one git call to the end, or until ctx ends.
func (r *Repo) start(ctx context.Context, at place, onGroup func(dadapter.ProcessGroup), args ...string) procgroup.Result {
	return r.startIn(ctx, at, nil, onGroup, args...)
}

// startIn is start with stdin as the call's standard input (nil: the null
// device).
func (r *Repo) startIn(ctx context.Context, at place, stdin *os.File, onGroup func(dadapter.ProcessGroup), args ...string) procgroup.Result {
	return procgroup.Run(ctx, r.bin.env, r.bin.argv(r.path, at, args), procgroup.Options{Stdin: stdin}, onGroup)
}

// git runs one call and returns its standard output, or an error naming the
// call that failed.
func (r *Repo) git(ctx context.Context, at place, onGroup func(dadapter.ProcessGroup), args ...string) ([]byte, error) {
	res := r.start(ctx, at, onGroup, args...)
	return res.Stdout, failure(ctx, args[0], res)
}

// failure explains a call that did not succeed. A stopped call wraps ctx's
// error so that callers can tell an abort from a refusal; a failed one ends
// with git's last two lines of standard error, which is where git says why.
func failure(ctx context.Context, sub string, res procgroup.Result) error {
	if res.Success() {
		return nil
	}
	what := "git " + sub
	switch {
	case res.Aborted && res.Err != nil:
		return fmt.Errorf("%s was stopped: %w (%w)", what, context.Cause(ctx), res.Err)
	case res.Aborted:
		return fmt.Errorf("%s was stopped: %w", what, context.Cause(ctx))
	case !res.Started:
		return fmt.Errorf("%s did not start: %w", what, res.Err)
	case res.Err != nil:
		return fmt.Errorf("%s: %w: %s", what, res.Err, lastLines(res.Stderr, 2))
	case res.Signaled:
		return fmt.Errorf("%s was killed by a signal: %s", what, lastLines(res.Stderr, 2))
	default:
		return fmt.Errorf("%s failed with exit status %d: %s", what, res.ExitCode, lastLines(res.Stderr, 2))
	}
}

// lastLines returns the last n non-empty lines of out, joined with " / ".
func lastLines(out []byte, n int) string {
	lines := strings.Split(string(bytes.TrimSpace(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " / ")
	if s == "" {
		return "(no error output)"
	}
	return s
}

// fetchByID are the arguments of a fetch of one object, by ID, from src (a
// repository or a bundle file): it takes in the object and its history,
// checking connectivity, and writes no ref, tag or FETCH_HEAD and starts no
// maintenance.
func fetchByID(src, id string) []string {
	return []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--no-recurse-submodules", "--", src, id}
}

// firstLine is a call's one-line answer, such as a commit ID.
func firstLine(out []byte) string {
	s, _, _ := strings.Cut(string(out), "\n")
	return s
}
