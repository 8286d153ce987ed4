package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
	"github.com/codeboost/codeboost/dadapter/gitrepo"
	"github.com/codeboost/codeboost/words"
)

// commit runs CommitTaskChanges and waits for its done.
func commit(t *testing.T, ctx context.Context, d *D, fs dadapter.TaskFilesystems) (dadapter.Bundle, error) {
	t.Helper()
	return answered(t, "CommitTaskChanges", func(done func(dadapter.Bundle, error)) { d.CommitTaskChanges(ctx, fs, done) })
}

// TestCommitBundle: the commit is one commit on the base, by codeboost,
// holding the agent's work (the edit, the new file and link, the
// deletion; not the ignored file), taken into the runner-owned repository
// under the attempt's ref, in a bundle gitrepo.TakeBundle accepts; the
// user's repository is not written, and neither is task storage (a second
// commit of the same work is the same commit when made at the same
// second). ReleaseTaskCommit drops the ref once the storage is gone.
func TestCommitBundle(t *testing.T) {
	s := newSeeded(t)
	before := treeHash(t, s.repo)
	s.edit()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	start := time.Now()
	b, err := s.d.commit(context.Background(), s.st, now)
	t.Logf("commit took %v, bundle %d bytes", time.Since(start).Round(time.Millisecond), len(b.Data))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.d.commit(context.Background(), s.st, now); err != nil || again.Commit != b.Commit {
		t.Errorf("a second commit: %s (%v), want %s", again.Commit, err, b.Commit)
	}
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}

	repo, err := gitrepo.Open(context.Background(), s.root, s.st.owner.RunnerOwner, s.repo)
	if err != nil {
		t.Fatal(err)
	}
	if held, ok, err := repo.HasRef(context.Background(), s.st.owner.AttemptID); err != nil || !ok || held != b.Commit {
		t.Errorf("the attempt's ref holds %q (%v, %v), want %s: the commit taken in", held, ok, err, b.Commit)
	}
	// The bundle is one gitrepo.TakeBundle takes on its own, too.
	if err := repo.TakeBundle(context.Background(), dtest.NewID(), s.head, b.Commit, b.Data, nil); err != nil {
		t.Fatalf("TakeBundle: %v", err)
	}
	show := git(t, repo.Path(), "--git-dir="+repo.Path(), "show", "-s", "--format=%P|%an <%ae>|%cn <%ce>|%ct|%s", b.Commit)
	want := s.head + "|codeboost <codeboost@localhost>|codeboost <codeboost@localhost>|1893553445|codeboost: attempt " + s.st.owner.AttemptID + "\n"
	if show != want {
		t.Errorf("commit %s:\n%s\nwant\n%s", b.Commit, show, want)
	}
	files := git(t, repo.Path(), "--git-dir="+repo.Path(), "ls-tree", "-r", "--name-only", b.Commit)
	if files != ".gitignore\nREADME.md\nlink\nnew-link\nnotes/new.txt\nrun.sh\nsrc/main.go\n" {
		t.Errorf("the commit's files:\n%s", files)
	}
	if got := git(t, repo.Path(), "--git-dir="+repo.Path(), "show", b.Commit+":README.md"); got != "A repository.\nEdited by the agent.\n" {
		t.Errorf("README.md in the commit: %q", got)
	}
	if after := treeHash(t, s.repo); after != before {
		t.Errorf("the user's repository changed")
	}

	// Released (after the storage is gone), the attempt's ref is dropped;
	// a second release costs nothing.
	s.remove(s.d, s.st)
	for range 2 {
		done := make(chan error, 1)
		s.d.ReleaseTaskCommit(s.st, func(err error) { done <- err })
		if err := waitFor(t, "ReleaseTaskCommit", done, time.Minute); err != nil {
			t.Errorf("ReleaseTaskCommit: %v", err)
		}
	}
	if _, ok, err := repo.HasRef(context.Background(), s.st.owner.AttemptID); ok || err != nil {
		t.Errorf("the attempt's ref after the release: %v, %v", ok, err)
	}
}

// TestCommitNoChanges: storage whose work tree is the base's has no
// commit to make: ErrNoChanges and an empty bundle. An ignored file is not
// a change.
func TestCommitNoChanges(t *testing.T) {
	s := newSeeded(t)
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, map[string]string{"build/out.log": "ignored\n"})
	b, err := commit(t, context.Background(), s.d, s.st)
	if !errors.Is(err, ErrNoChanges) || b.Commit != "" || b.Data != nil {
		t.Errorf("commit of an unchanged work tree: %+v, %v; want ErrNoChanges", b, err)
	}
}

// TestCloneAtCommit: CreateTaskClone makes a fresh clone under the attempt
// directory, at the commit (the user's HEAD when none is named), from the
// runner-owned repository, reporting each git call's process group; an
// aborted one leaves nothing under its parent; a parent outside the runner
// root is refused; the user's repository is not written.
func TestCloneAtCommit(t *testing.T) {
	w := newWorld(t)
	d := w.adapter(nil)
	repo, head := userRepo(t)
	before := treeHash(t, repo)
	runner := dtest.NewToken()
	for _, c := range []string{head, ""} {
		parent := filepath.Join(w.root, runner, "attempts", dtest.NewID())
		if err := os.MkdirAll(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		var g groups
		start := time.Now()
		got, err := clone(t, context.Background(), d, parent, dadapter.Source{Repository: repo, Commit: c}, g.report)
		t.Logf("clone took %v", time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if got.Head != head || filepath.Dir(got.Dir) != parent || g.count() == 0 {
			t.Errorf("clone %+v with %d groups: want head %s, a directory under %s, and its groups", got, g.count(), head, parent)
		}
		if at := strings.TrimSpace(git(t, got.Dir, "rev-parse", "HEAD")); at != head {
			t.Errorf("the clone is at %s, want %s", at, head)
		}
		if data, err := os.ReadFile(filepath.Join(got.Dir, "src", "main.go")); err != nil || string(data) != "package main\n\nfunc main() {}\n" {
			t.Errorf("src/main.go in the clone: %q, %v", data, err)
		}
	}

	parent := filepath.Join(w.root, runner, "attempts", dtest.NewID())
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var g groups
	if _, err := clone(t, ctx, d, parent, dadapter.Source{Repository: repo, Commit: head}, func(p dadapter.ProcessGroup) {
		if g.report(p); g.count() == 2 { // the clone's fetch
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("aborted clone: %v, want Canceled", err)
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) > 0 {
		t.Errorf("the aborted clone left %v (%v)", entries, err)
	}
	if _, err := clone(t, context.Background(), d, t.TempDir(), dadapter.Source{Repository: repo, Commit: head}, nil); err == nil {
		t.Errorf("a clone outside the runner root was made")
	}
	if after := treeHash(t, repo); after != before {
		t.Errorf("the user's repository changed")
	}
}

type cloned struct {
	c   dadapter.Clone
	err error
}

func clone(t *testing.T, ctx context.Context, d *D, parent string, src dadapter.Source, onGroup func(dadapter.ProcessGroup)) (dadapter.Clone, error) {
	t.Helper()
	done := make(chan cloned, 1)
	d.CreateTaskClone(ctx, parent, src, onGroup, func(c dadapter.Clone, err error) { done <- cloned{c, err} })
	r := waitFor(t, "CreateTaskClone", done, 2*time.Minute)
	return r.c, r.err
}

// TestCommitOverTheLimit is issue 19's agent that writes a 2 GiB file (a
// sparse one here) and exits 0, against a commit limit of 1 MiB: the
// commit is refused with dadapter.CommitTooLarge, in the diagnostic's
// words and with the size measured from the inodes before git reads any
// file (so in seconds, with nothing taken into the runner-owned
// repository); the partial output is still exported, naming the file; and
// the limit is exact: changes of exactly the limit are committed, one byte
// more is refused. Removing the storage leaves nothing on the engine
// (newWorld's leak check).
func TestCommitOverTheLimit(t *testing.T) {
	s := newSeeded(t)
	ctx := context.Background()
	limited := func(limit int64) *D {
		d := s.adapter(nil, func(o *Options) { o.CommitLimit = limit })
		lend(t, d, s.st)
		return d
	}
	const readme = "A repository.\nEdited by the agent.\n"
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, map[string]string{"README.md": readme})
	s.asAgent(s.st, "truncate -s 2G /task/big.bin")
	start := time.Now()
	_, err := commit(t, ctx, limited(1<<20), s.st)
	t.Logf("the refusal took %v", time.Since(start).Round(time.Millisecond))
	var big *dadapter.CommitTooLarge
	if !errors.As(err, &big) || big.Bytes != 2<<30+int64(len(readme)) || big.Limit != 1<<20 {
		t.Fatalf("commit of 2 GiB over a 1 MiB limit: %v (%+v), want CommitTooLarge", err, big)
	}
	if want := words.CommitOverLimit(2<<30+int64(len(readme)), 1<<20); !strings.HasSuffix(err.Error(), want) {
		t.Errorf("the refusal says %q, want %q", err, want)
	}
	repo, err := gitrepo.Open(ctx, s.root, s.st.owner.RunnerOwner, s.repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := repo.HasRef(ctx, s.st.owner.AttemptID); ok || err != nil {
		t.Errorf("the attempt's ref after the refusal: %v, %v", ok, err)
	}
	r, err := export(t, ctx, s.d, s.st, DefaultExportMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if d := string(r.Diff); !strings.Contains(d, "codeboost: not diffed, a changed file over 8 MiB: big.bin\n") || !strings.Contains(d, "+Edited by the agent.") {
		t.Errorf("the partial output:\n%s", d)
	}

	s.asAgent(s.st, "rm /task/big.bin")
	if _, err := commit(t, ctx, limited(int64(len(readme))-1), s.st); !errors.As(err, &big) || big.Bytes != int64(len(readme)) {
		t.Errorf("changes one byte over the limit: %v, want CommitTooLarge of %d bytes", err, len(readme))
	}
	if b, err := commit(t, ctx, limited(int64(len(readme))), s.st); err != nil || b.Commit == "" {
		t.Errorf("changes of exactly the limit: %+v, %v", b.Commit, err)
	}
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}
