package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/codeboost/codeboost/dadapter"
)

// emptyTree is the ID of the tree with no entries, which ListTree diffs a
// commit's tree against.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// maxTreeBytes bounds the listing ListTree reads: a scope checkpoint is one
// bounded row, so a listing past it is cut like one with too many paths,
// and a tree of absurdly long paths costs no more memory than this.
const maxTreeBytes = 64 << 20

// ListTree lists the leaf entries (files, links and gitlinks) of commit's
// tree in the runner-owned repository: their paths, slash-separated,
// relative to the root and sorted. When there are more than max of them,
// or their listing is over 64 MiB, it answers nil and cut, so that a
// listing is whole or absent, never a prefix that would pass for a tree.
//
// The listing is diff-tree's of the empty tree against commit's rather than
// ls-tree's, because only a diff can write to a FIFO (--output), and
// procgroup keeps just the first 64 KiB of standard output. The empty tree
// is written first (mktree of nothing), as git's built-in one is not
// promised to every version. Submodule ignore rules are overridden, so a
// commit's .gitmodules cannot hide a gitlink from the listing.
func (r *Repo) ListTree(ctx context.Context, commit string, max int, onGroup func(dadapter.ProcessGroup)) (leaves []string, cut bool, err error) {
	if err := checkCommit("commit", commit); err != nil {
		return nil, false, fmt.Errorf("gitrepo: list tree: %w", err)
	}
	if max < 0 {
		return nil, false, fmt.Errorf("gitrepo: list tree: max %d is negative", max)
	}
	bare := bareAt(r.path)
	out, err := r.git(ctx, bare, onGroup, "mktree")
	if err != nil {
		return nil, false, fmt.Errorf("gitrepo: list the tree of %s: write the empty tree: %w", commit, err)
	}
	if got := firstLine(out); got != emptyTree {
		return nil, false, fmt.Errorf("gitrepo: list the tree of %s: the empty tree was written as %q, want %s", commit, bounded(got), emptyTree)
	}
	listing, over, err := readBounded(ctx, r.path, maxTreeBytes, func(ctx context.Context, fifo string) error {
		res := r.start(ctx, bare, onGroup, "diff-tree", "-r", "-z", "--name-only", "--no-renames",
			"--ignore-submodules=none", "--output="+fifo, emptyTree, commit+"^{commit}", "--")
		return failure(ctx, "diff-tree", res)
	})
	if err != nil {
		return nil, false, fmt.Errorf("gitrepo: list the tree of %s: %w", commit, err)
	}
	if over {
		return nil, true, nil
	}
	leaves, cut, err = splitLeaves(listing, max)
	if err != nil {
		return nil, false, fmt.Errorf("gitrepo: list the tree of %s: %w", commit, err)
	}
	return leaves, cut, nil
}

// splitLeaves reads a NUL-terminated list of paths into a sorted slice, or
// answers cut when there are more than max. An empty path is no leaf git
// would list, so it means the listing is not what was asked for.
func splitLeaves(listing []byte, max int) (leaves []string, cut bool, err error) {
	if len(listing) == 0 {
		return []string{}, false, nil
	}
	if listing[len(listing)-1] != 0 {
		return nil, false, errors.New("the listing does not end with a NUL")
	}
	n := bytes.Count(listing, []byte{0})
	if n > max {
		return nil, true, nil
	}
	leaves = make([]string, 0, n)
	for _, p := range bytes.Split(listing[:len(listing)-1], []byte{0}) {
		if len(p) == 0 {
			return nil, false, errors.New("the listing holds an empty path")
		}
		leaves = append(leaves, string(p))
	}
	sort.Strings(leaves)
	return leaves, false, nil
}
