package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/codeboost/codeboost/dadapter"
)

// Clone makes a task clone of commit, which must already be in the
// runner-owned repository (Materialize it first): a fresh directory
// "clone-*" under parent, with commit's whole history and its tree checked
// out, HEAD detached at commit. A failed or aborted clone removes its
// directory.
//
// It is git init plus a fetch by ID, not git clone. The repository holds no
// ref to a base commit, so git clone would find nothing to copy, and git
// 2.39 has no --revision. A fetch always goes through upload-pack and copies
// the objects, as clone --no-local does, so the clone has no alternates
// file and no hard links into the runner-owned repository: an agent that
// rewrites its clone's objects cannot reach ours.
func (r *Repo) Clone(ctx context.Context, parent, commit string, onGroup func(dadapter.ProcessGroup)) (string, error) {
	if err := checkCommit("commit", commit); err != nil {
		return "", err
	}
	if !filepath.IsAbs(parent) {
		return "", fmt.Errorf("gitrepo: clone parent %q is not an absolute path", bounded(parent))
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("gitrepo: clone %s: %w", commit, err)
	}
	dir, err := os.MkdirTemp(parent, "clone-")
	if err != nil {
		return "", fmt.Errorf("gitrepo: clone %s: %w", commit, err)
	}
	steps := [][]string{
		{"init", "--quiet", "--", dir},
		fetchByID(r.path, commit),
		{"checkout", "--quiet", "--detach", commit, "--"},
	}
	at := place{}
	for _, args := range steps {
		if _, err := r.git(ctx, at, onGroup, args...); err != nil {
			err = fmt.Errorf("gitrepo: clone %s into %s: %w", commit, dir, err)
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("gitrepo: remove the partial clone: %w", rmErr))
			}
			return "", err
		}
		at = treeAt(dir)
	}
	return dir, nil
}
