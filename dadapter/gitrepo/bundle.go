package gitrepo

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
)

const attemptRefs = "refs/codeboost/attempts/"

// zeroID as update-ref's old value means "create only".
const zeroID = "0000000000000000000000000000000000000000"

func attemptRef(attemptID string) string { return attemptRefs + attemptID }

// TakeBundle takes a completed attempt's commit in from the bundle D
// returned (fetchTaskCommit), under refs/codeboost/attempts/<attemptID>.
// It accepts the bundle only if it has exactly one ref, whose object is
// commit, and commit is a single commit whose only parent is base;
// anything else is ErrBadBundle, and so is a bundle git cannot take in
// (garbage, or prerequisites the repository lacks). The ref is written only
// after every check has passed, so a refused bundle never leaves one. Taking
// the same commit again for the same attempt is a no-op; a ref that already
// holds another commit is an error.
func (r *Repo) TakeBundle(ctx context.Context, attemptID, base, commit string, bundle []byte, onGroup func(dadapter.ProcessGroup)) error {
	if err := checkAttempt(attemptID); err != nil {
		return fmt.Errorf("gitrepo: take bundle: %w", err)
	}
	if err := checkCommit("base", base); err != nil {
		return fmt.Errorf("gitrepo: take bundle: %w", err)
	}
	if err := checkCommit("commit", commit); err != nil {
		return fmt.Errorf("gitrepo: take bundle: %w", err)
	}
	file, err := r.writeTemp("bundle-", bundle)
	if err != nil {
		return fmt.Errorf("gitrepo: take bundle: %w", err)
	}
	defer os.Remove(file)

	bare := bareAt(r.path)
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("gitrepo: attempt %s: %w: %s", attemptID, ErrBadBundle, fmt.Sprintf(format, a...))
	}
	// gitRefuses is a call that failed on the bundle's content, unless it
	// was stopped.
	gitRefuses := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("gitrepo: attempt %s: take bundle: %w", attemptID, err)
		}
		return refuse("%v", err)
	}

	out, err := r.git(ctx, bare, onGroup, "bundle", "list-heads", file)
	if err != nil {
		return gitRefuses(err)
	}
	heads := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(heads) != 1 || heads[0] == "" {
		return refuse("it has %d refs, want 1", countNonEmpty(heads))
	}
	if got, _, _ := strings.Cut(heads[0], " "); got != commit {
		return refuse("its ref names %s, want %s", bounded(got), commit)
	}
	// The fetch checks the bundle's prerequisites too.
	if _, err := r.git(ctx, bare, onGroup, fetchByID(file, commit)...); err != nil {
		return gitRefuses(err)
	}
	out, err = r.git(ctx, bare, onGroup, "rev-list", "--parents", "-n1", commit, "--")
	if err != nil {
		return gitRefuses(err)
	}
	if parents := strings.Fields(firstLine(out)); len(parents) != 2 || parents[0] != commit || parents[1] != base {
		return refuse("%s is not a single commit on %s: its parents are %s", commit, base, listParents(parents))
	}

	ref := attemptRef(attemptID)
	if _, err := r.git(ctx, bare, onGroup, "update-ref", "--no-deref", ref, commit, zeroID); err != nil {
		if held, ok, herr := r.hasRef(ctx, ref, onGroup); herr == nil && ok && held == commit {
			return nil
		}
		return fmt.Errorf("gitrepo: attempt %s: record %s under %s: %w", attemptID, commit, ref, err)
	}
	return nil
}

// listParents shows at most three of rev-list's parents (an octopus merge
// can have many).
func listParents(fields []string) string {
	if len(fields) < 2 {
		return "none"
	}
	p := fields[1:]
	if len(p) > 3 {
		return strings.Join(p[:3], ", ") + fmt.Sprintf(" and %d more", len(p)-3)
	}
	return strings.Join(p, ", ")
}

func countNonEmpty(lines []string) int {
	n := 0
	for _, l := range lines {
		if l != "" {
			n++
		}
	}
	return n
}

// writeTemp writes data to a new owner-only (0600) file in the repository
// directory, which only the current user can write, and returns its path.
func (r *Repo) writeTemp(prefix string, data []byte) (string, error) {
	f, err := os.CreateTemp(r.path, prefix)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// DropRef deletes an attempt's ref, so that its commit is no longer kept
// (the attempt did not complete, or its result was not published). A
// missing ref is not an error: dropping is idempotent, for recovery's sake.
func (r *Repo) DropRef(ctx context.Context, attemptID string, onGroup func(dadapter.ProcessGroup)) error {
	if err := checkAttempt(attemptID); err != nil {
		return fmt.Errorf("gitrepo: drop ref: %w", err)
	}
	if _, err := r.git(ctx, bareAt(r.path), onGroup, "update-ref", "--no-deref", "-d", attemptRef(attemptID)); err != nil {
		return fmt.Errorf("gitrepo: drop the ref of attempt %s: %w", attemptID, err)
	}
	return nil
}

// HasRef reports the commit an attempt's ref holds, if it has one.
func (r *Repo) HasRef(ctx context.Context, attemptID string) (commit string, ok bool, err error) {
	if err := checkAttempt(attemptID); err != nil {
		return "", false, fmt.Errorf("gitrepo: read ref: %w", err)
	}
	return r.hasRef(ctx, attemptRef(attemptID), nil)
}

// hasRef reads one ref by its exact name. for-each-ref, unlike rev-parse,
// neither guesses at other names nor fails for a missing ref, so a failure
// is a real one.
func (r *Repo) hasRef(ctx context.Context, ref string, onGroup func(dadapter.ProcessGroup)) (string, bool, error) {
	out, err := r.git(ctx, bareAt(r.path), onGroup, "for-each-ref", "--format=%(refname) %(objectname)", ref)
	if err != nil {
		return "", false, fmt.Errorf("gitrepo: read %s: %w", ref, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if name, id, found := strings.Cut(line, " "); found && name == ref {
			if err := checkCommit(ref, id); err != nil {
				return "", false, err
			}
			return id, true, nil
		}
	}
	return "", false, nil
}
