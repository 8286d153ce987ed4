package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
	"github.com/codeboost/codeboost/ids"
)

// CreateTaskClone clones src.Commit (src.Repository's HEAD when it names
// none) from the runner-owned repository into a fresh directory under
// parent, materializing it there first. Every git call is its own process
// group, reported through onGroup and stopped on abort; an aborted or failed
// clone removes its partial directory (gitrepo.Clone).
//
// The contract gives this call no runner owner, and the runner-owned
// repository is per runner, so it is read from parent, which must lie
// under <RunnerRoot>/<runner owner>/ (the runner's attempt directories do:
// <RunnerRoot>/<owner>/attempts/<attempt>).
func (d *D) CreateTaskClone(ctx context.Context, parent string, src dadapter.Source, onGroup func(dadapter.ProcessGroup), done func(dadapter.Clone, error)) {
	go func() {
		c, err := d.clone(ctx, parent, src, onGroup)
		if err != nil {
			done(dadapter.Clone{}, fmt.Errorf("docker: task clone: %w", err))
			return
		}
		done(c, nil)
	}()
}

func (d *D) clone(ctx context.Context, parent string, src dadapter.Source, onGroup func(dadapter.ProcessGroup)) (dadapter.Clone, error) {
	owner, err := d.runnerOf(parent)
	if err != nil {
		return dadapter.Clone{}, err
	}
	if src.Commit != "" && !isCommitID(src.Commit) {
		return dadapter.Clone{}, fmt.Errorf("the source commit %.80q is not 40 lowercase hex digits", src.Commit)
	}
	repo, err := gitrepo.Open(ctx, d.opt.RunnerRoot, owner, src.Repository)
	if err != nil {
		return dadapter.Clone{}, err
	}
	head := src.Commit
	if head == "" {
		if head, err = repo.ResolveHead(ctx); err != nil {
			return dadapter.Clone{}, err
		}
	}
	if err := repo.Materialize(ctx, head, onGroup); err != nil {
		return dadapter.Clone{}, err
	}
	dir, err := repo.Clone(ctx, parent, head, onGroup)
	if err != nil {
		return dadapter.Clone{}, err
	}
	return dadapter.Clone{Dir: dir, Head: head}, nil
}

// runnerOf reads the runner owner from a directory under
// <RunnerRoot>/<owner>/.
func (d *D) runnerOf(dir string) (string, error) {
	rel, err := filepath.Rel(filepath.Clean(d.opt.RunnerRoot), filepath.Clean(dir))
	owner, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	if err != nil || !filepath.IsAbs(dir) || !ids.ValidToken(owner) || owner == rel {
		return "", fmt.Errorf("the clone's parent %.200q is not under %s/<runner owner>/", dir, d.opt.RunnerRoot)
	}
	return owner, nil
}
