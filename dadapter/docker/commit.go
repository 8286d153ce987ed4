package docker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
)

// bundleBytes bounds a commit's bundle, which is held in memory on its way
// to the runner-owned repository; the container stops writing one byte
// past it. The files in it are within the commit limit already: the rest
// is room for git's trees, headers and incompressible data.
func bundleBytes(commitLimit int64) int {
	if commitLimit > math.MaxInt32<<8 { // no bundle this large fits in memory anyway
		commitLimit = math.MaxInt32 << 8
	}
	return int(commitLimit + commitLimit/64 + 16<<20)
}

// committer is the author and committer of every commit D makes: the
// commit is codeboost's, the attempt it came from is in its message.
const (
	committerName  = "codeboost"
	committerEmail = "codeboost@localhost"
)

// ErrNoChanges is CommitTaskChanges' answer when the work tree's tree is
// the base's: there is no commit to make, and an empty one would only say
// so less plainly. The Bundle is then empty.
var ErrNoChanges = errors.New("the work tree is the base's: no commit to make")

// CommitTaskChanges takes a completed writable attempt's work out of task
// storage as a bundle and into the runner-owned repository: in a helper
// container locked down like the export's, the work tree is staged into a
// temporary index (what the export diffs, files over 8 MiB included) and
// committed with parent the base, codeboost as author and committer, dated
// now by the D's clock (the container's is not asked), and bundled with
// exactly one ref, the commit, and the base as its prerequisite. The
// runner-owned repository takes it in under refs/codeboost/attempts/<id>
// only if it is a single commit on the base (gitrepo.TakeBundle), and the
// commit's tree is listed from there (gitrepo.ListTree) for the Bundle's
// Leaves. The metadata is checked against the baseline first; nothing is
// written to task storage, and the user's repository is not touched.
func (d *D) CommitTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.Bundle, error)) {
	go func() {
		b, err := d.commit(ctx, fs, time.Now())
		if err != nil {
			done(dadapter.Bundle{}, fmt.Errorf("docker: commit: %w", err))
			return
		}
		done(b, nil)
	}()
}

func (d *D) commit(ctx context.Context, fs dadapter.TaskFilesystems, now time.Time) (dadapter.Bundle, error) {
	s, err := d.readable(ctx, fs)
	if err != nil {
		return dadapter.Bundle{}, err
	}
	date := fmt.Sprintf("@%d +0000", now.Unix())
	maxBundle := bundleBytes(d.opt.CommitLimit)
	out, err := d.runHelper(ctx, s, helperRun{
		kind: KindCommit,
		env: append(s.scriptEnv(maxBundle+1),
			"GIT_AUTHOR_NAME="+committerName, "GIT_AUTHOR_EMAIL="+committerEmail, "GIT_AUTHOR_DATE="+date,
			"GIT_COMMITTER_NAME="+committerName, "GIT_COMMITTER_EMAIL="+committerEmail, "GIT_COMMITTER_DATE="+date,
			"CB_MESSAGE="+commitMessage(s.owner), "CB_COMMIT_LIMIT="+strconv.FormatInt(d.opt.CommitLimit, 10)),
		args:        []string{"commit"},
		stdoutLimit: maxBundle + 1,
	})
	if err != nil {
		return dadapter.Bundle{}, fmt.Errorf("task storage %s: %w", s.owner.AllocationID, err)
	}
	if out.exitCode == exitOverLimit {
		n, err := strconv.ParseInt(strings.TrimSpace(string(out.stdout)), 10, 64)
		if err != nil {
			return dadapter.Bundle{}, fmt.Errorf("task storage %s: the changes are over the commit limit, measured as %.40q", s.owner.AllocationID, out.stdout)
		}
		return dadapter.Bundle{}, &dadapter.CommitTooLarge{Bytes: n, Limit: d.opt.CommitLimit}
	}
	if err := scriptFailure(s, out); err != nil {
		return dadapter.Bundle{}, err
	}
	if out.overflow || len(out.stdout) > maxBundle {
		return dadapter.Bundle{}, fmt.Errorf("task storage %s: the commit's bundle is over %d bytes", s.owner.AllocationID, maxBundle)
	}
	commit, err := bundleRef(out.stdout, s.base)
	if err != nil {
		return dadapter.Bundle{}, fmt.Errorf("task storage %s: %w", s.owner.AllocationID, err)
	}
	repo, err := s.runnerRepo(ctx, d.opt.RunnerRoot)
	if err != nil {
		return dadapter.Bundle{}, err
	}
	if err := repo.TakeBundle(ctx, s.owner.AttemptID, s.base, commit, out.stdout, nil); err != nil {
		return dadapter.Bundle{}, err
	}
	// A listing that fails leaves the ref just written: the attempt then
	// does not complete, so F's release drops it (ReleaseTaskCommit), as it
	// does a refused publication's.
	leaves, cut, err := repo.ListTree(ctx, commit, dadapter.MaxTreeLeaves, nil)
	if err != nil {
		return dadapter.Bundle{}, err
	}
	return dadapter.Bundle{Commit: commit, Data: out.stdout, Leaves: leaves, LeavesCut: cut}, nil
}

// runnerRepo opens the runner-owned repository the storage's commits go
// into: its runner's, for the repository it was seeded from.
func (s *storage) runnerRepo(ctx context.Context, root string) (*gitrepo.Repo, error) {
	if s.repository == "" {
		return nil, fmt.Errorf("task storage %s does not name the repository it was seeded from", s.owner.AllocationID)
	}
	return gitrepo.Open(ctx, root, s.owner.RunnerOwner, s.repository)
}

// commitMessage says which attempt a commit came from.
func commitMessage(o dadapter.StorageOwner) string {
	return "codeboost: attempt " + o.AttemptID
}

// bundleRef reads a bundle's header and returns the commit of its one ref,
// checking that base is its only prerequisite: the bundle's own word on
// what it carries, rather than a second channel from the container.
func bundleRef(bundle []byte, base string) (string, error) {
	r := bufio.NewReader(bytes.NewReader(bundle))
	sig, err := r.ReadString('\n')
	if err != nil || sig != "# v2 git bundle\n" {
		return "", errors.New("the commit's output is not a v2 git bundle")
	}
	var refs, prereqs []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", errors.New("the commit's bundle has no end to its header")
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		if p, ok := strings.CutPrefix(line, "-"); ok {
			id, _, _ := strings.Cut(p, " ")
			prereqs = append(prereqs, id)
			continue
		}
		refs = append(refs, line)
	}
	if len(refs) != 1 || len(prereqs) != 1 || prereqs[0] != base {
		return "", fmt.Errorf("the commit's bundle has refs %q and prerequisites %q, want one ref on %s", refs, prereqs, base)
	}
	commit, _, _ := strings.Cut(refs[0], " ")
	if !isCommitID(commit) {
		return "", fmt.Errorf("the commit's bundle names %.60q, not a commit ID", commit)
	}
	return commit, nil
}
