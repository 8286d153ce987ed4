package app

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/web"
)

// TestCommitDiffThatCannotOpenTheRepositoryIsAnError: the diff view's
// commit diff (web.Options.CommitDiff) answers "an error before the first
// write" as one: a task with no repository, or whose runner-owned
// repository cannot be opened (here the runner owner is not a token), is
// an error naming why, and nothing is written.
func TestCommitDiffThatCannotOpenTheRepositoryIsAnError(t *testing.T) {
	for _, c := range []struct {
		name string
		a    *App
		task web.Task
		want string
	}{
		{"no repository", &App{root: t.TempDir(), token: "0123456789abcdef0123456789abcdef"}, web.Task{Name: "t"}, "the task has no repository"},
		{"the runner-owned repository cannot be opened", &App{root: t.TempDir(), token: "not-a-token"}, web.Task{Name: "t", Repository: t.TempDir()},
			"is not 32 lowercase hex digits"},
	} {
		var w bytes.Buffer
		cut, err := c.a.commitDiff(context.Background(), &w, c.task, "base", "commit", 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || cut || w.Len() != 0 {
			t.Errorf("%s: cut %v, err %v, wrote %q; want the error %q and nothing written", c.name, cut, err, w.String(), c.want)
		}
	}
}
