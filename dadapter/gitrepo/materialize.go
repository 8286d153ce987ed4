package gitrepo

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
)

// Materialize makes commit, with its history, available in the runner-owned
// repository (the contract's ensureCommit). A commit already there, a base
// fetched earlier or a runner commit, costs one check. Otherwise it is
// fetched from the user's repository by ID, which creates no ref, tag or
// FETCH_HEAD here and writes nothing there: a ref here would be a second
// record of the task's head besides the Store's.
func (r *Repo) Materialize(ctx context.Context, commit string, onGroup func(dadapter.ProcessGroup)) error {
	if err := checkCommit("commit", commit); err != nil {
		return err
	}
	if r.hasCommit(ctx, commit, onGroup) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gitrepo: materialize %s: %w", commit, err)
	}
	if _, err := r.git(ctx, bareAt(r.path), onGroup, fetchByID(r.userRepo, commit)...); err != nil {
		return fmt.Errorf("gitrepo: fetch %s from %s: %w", commit, r.userRepo, err)
	}
	// A fetch by ID succeeds for any object, a tree or a blob too.
	if !r.hasCommit(ctx, commit, onGroup) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gitrepo: materialize %s: %w", commit, err)
		}
		return fmt.Errorf("gitrepo: %s in %s is not a commit", commit, r.userRepo)
	}
	return nil
}

// hasCommit reports whether commit is here as a commit. Any failure counts
// as absent: the fetch that follows then says what is wrong.
func (r *Repo) hasCommit(ctx context.Context, commit string, onGroup func(dadapter.ProcessGroup)) bool {
	return r.start(ctx, bareAt(r.path), onGroup, "cat-file", "-e", commit+"^{commit}").Success()
}

// ResolveHead reads the user repository's HEAD commit, without writing
// anything there.
func (r *Repo) ResolveHead(ctx context.Context) (string, error) {
	out, err := r.git(ctx, treeAt(r.userRepo), nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("gitrepo: read HEAD of %s: %w", r.userRepo, err)
	}
	head := firstLine(out)
	if err := checkCommit("HEAD", head); err != nil {
		return "", fmt.Errorf("gitrepo: read HEAD of %s: %w", r.userRepo, err)
	}
	return head, nil
}
