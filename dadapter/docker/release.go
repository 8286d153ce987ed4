package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
)

// ReleaseTaskCommit is the runner-owned repository's "Release" row: the
// ref of an attempt that did not complete is dropped, after its storage
// was removed (so the handle need not be held any more; it must still be
// this adapter's). A storage whose repository is unknown (a crash left no
// keeper to read it from) has nothing this adapter could have taken in.
func (d *D) ReleaseTaskCommit(fs dadapter.TaskFilesystems, done func(error)) {
	s, ok := fs.(*storage)
	if !ok || s == nil {
		go done(errors.New("docker: ReleaseTaskCommit: not the Docker adapter's task storage"))
		return
	}
	go func() {
		if s.repository == "" {
			done(nil)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.opt.CallTimeout)
		defer cancel()
		repo, err := s.runnerRepo(ctx, d.opt.RunnerRoot)
		if err == nil {
			err = repo.DropRef(ctx, s.owner.AttemptID, nil)
		}
		if err != nil {
			err = fmt.Errorf("docker: release the commit of %s: %w", s.owner.AttemptID, err)
		}
		done(err)
	}()
}
