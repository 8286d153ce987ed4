package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	attemptA = "3f2b8c1e-9a4d-4e2b-8c1a-5d6e7f809a1b"
	attemptB = "0c1d2e3f-4a5b-4c6d-9e7f-8091a2b3c4d5"
)

// work is a scratch clone of the user's repository where a test makes the
// commits an agent would, and bundles them as D's commitTaskChanges would.
type work struct {
	t   *testing.T
	dir string
}

func newWork(t *testing.T, u userRepo) work {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	hostGit(t, u.dir, "clone", "-q", "--", u.dir, dir)
	return work{t: t, dir: dir}
}

// commitOn checks out at (detached) and commits one change per file.
func (w work) commitOn(at string, files ...string) string {
	w.t.Helper()
	hostGit(w.t, w.dir, "checkout", "-q", "--detach", at)
	for _, f := range files {
		write(w.t, filepath.Join(w.dir, f), "agent wrote "+f+"\n")
		hostGit(w.t, w.dir, "add", "--", f)
		hostGit(w.t, w.dir, "commit", "-q", "-m", "agent: "+f)
	}
	return hostGit(w.t, w.dir, "rev-parse", "HEAD")
}

// bundle points each ref at its commit and bundles the refs, excluding
// base's history.
func (w work) bundle(base string, refs map[string]string) []byte {
	w.t.Helper()
	args := []string{"bundle", "create", "-q", filepath.Join(w.dir, "out.bundle"), "^" + base}
	for ref, commit := range refs {
		hostGit(w.t, w.dir, "update-ref", ref, commit)
		args = append(args, ref)
	}
	hostGit(w.t, w.dir, args...)
	b, err := os.ReadFile(filepath.Join(w.dir, "out.bundle"))
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// leftovers lists temporary files TakeBundle or Diff left behind.
func leftovers(t *testing.T, r *Repo) []string {
	t.Helper()
	var left []string
	for _, p := range []string{"bundle-*", "diff-*"} {
		m, _ := filepath.Glob(filepath.Join(r.Path(), p))
		left = append(left, m...)
	}
	return left
}

func TestTakeBundleAcceptsOneCommitOnBase(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	w := newWork(t, u)
	x := w.commitOn(u.c3, "x.txt")
	b := w.bundle(u.c3, map[string]string{"refs/heads/x": x})

	var g groups
	if err := r.TakeBundle(ctx, attemptA, u.c3, x, b, g.on); err != nil {
		t.Fatal(err)
	}
	if g.count() == 0 {
		t.Fatal("no process group reported")
	}
	if got, ok, err := r.HasRef(ctx, attemptA); err != nil || !ok || got != x {
		t.Fatalf("HasRef = %s, %v, %v; want %s", got, ok, err, x)
	}
	if refs := refsIn(t, r.Path()); len(refs) != 1 || refs[0] != "refs/codeboost/attempts/"+attemptA {
		t.Fatalf("refs = %v, want only the attempt's", refs)
	}
	// Taking it again is a no-op; another commit under the same attempt
	// is refused and the ref keeps the first.
	if err := r.TakeBundle(ctx, attemptA, u.c3, x, b, nil); err != nil {
		t.Fatalf("taking the same bundle again: %v", err)
	}
	y := w.commitOn(u.c3, "y.txt")
	if err := r.TakeBundle(ctx, attemptA, u.c3, y, w.bundle(u.c3, map[string]string{"refs/heads/y": y}), nil); err == nil {
		t.Fatal("a second commit replaced the attempt's ref")
	}
	if got, _, _ := r.HasRef(ctx, attemptA); got != x {
		t.Fatalf("the attempt's ref holds %s, want %s", got, x)
	}
	// The commit is usable: a clone of it has the agent's file.
	dir, err := r.Clone(ctx, t.TempDir(), x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// Every refused bundle is ErrBadBundle and leaves no ref.
func TestTakeBundleRefuses(t *testing.T) {
	u := newUserRepo(t)
	w := newWork(t, u)
	x := w.commitOn(u.c3, "x.txt")
	good := w.bundle(u.c3, map[string]string{"refs/heads/x": x})
	two := w.commitOn(u.c3, "one.txt", "two.txt")
	side := w.commitOn(u.c2, "side.txt")
	hostGit(t, w.dir, "checkout", "-q", "--detach", u.c3)
	hostGit(t, w.dir, "merge", "-q", "--no-ff", "-m", "merge", side)
	merge := hostGit(t, w.dir, "rev-parse", "HEAD")

	for _, tc := range []struct {
		name         string
		base, commit string
		bundle       []byte
		unmaterial   bool   // the base was never materialized
		why          string // in the error
	}{
		{"two commits on base", u.c3, two, w.bundle(u.c3, map[string]string{"refs/heads/t": two}), false, "not a single commit"},
		{"a merge", u.c3, merge, w.bundle(u.c3, map[string]string{"refs/heads/m": merge}), false, "not a single commit"},
		{"two refs", u.c3, x, w.bundle(u.c3, map[string]string{"refs/heads/x": x, "refs/heads/x2": x}), false, "2 refs"},
		{"ref names another commit", u.c3, u.c2, good, false, "its ref names " + x},
		{"another base", u.c2, x, good, false, "not a single commit"},
		{"garbage", u.c3, x, []byte("this is not a bundle\n"), false, "does not look like"},
		{"empty", u.c3, x, nil, false, "bundle"},
		{"missing prerequisites", u.c3, x, good, true, "prerequisite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openRepo(t, u)
			ctx := context.Background()
			if !tc.unmaterial {
				if err := r.Materialize(ctx, u.c3, nil); err != nil {
					t.Fatal(err)
				}
			}
			err := r.TakeBundle(ctx, attemptA, tc.base, tc.commit, tc.bundle, nil)
			if !errors.Is(err, ErrBadBundle) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("err = %v, want ErrBadBundle saying %q", err, tc.why)
			}
			t.Log(err)
			if refs := refsIn(t, r.Path()); len(refs) != 0 {
				t.Fatalf("refs left: %v", refs)
			}
			if _, ok, err := r.HasRef(ctx, attemptA); ok || err != nil {
				t.Fatalf("HasRef = %v, %v after a refusal", ok, err)
			}
			if left := leftovers(t, r); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

func TestTakeBundleChecksInput(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	for _, tc := range []struct {
		attempt, base, commit string
		want                  error
	}{
		{"3F2B8C1E-9A4D-4E2B-8C1A-5D6E7F809A1B", u.c3, u.c2, nil},
		{"../../heads/main", u.c3, u.c2, nil},
		{attemptA, "HEAD", u.c2, ErrBadCommit},
		{attemptA, u.c3, "main", ErrBadCommit},
	} {
		var g groups
		err := r.TakeBundle(ctx, tc.attempt, tc.base, tc.commit, []byte("x"), g.on)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || g.count() != 0 {
			t.Errorf("TakeBundle(%q, %q, %q): err = %v after %d git calls", tc.attempt, tc.base, tc.commit, err, g.count())
		}
	}
}

func TestDropRefIsIdempotent(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	w := newWork(t, u)
	x := w.commitOn(u.c3, "x.txt")
	b := w.bundle(u.c3, map[string]string{"refs/heads/x": x})
	for _, id := range []string{attemptA, attemptB} {
		if err := r.TakeBundle(ctx, id, u.c3, x, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if err := r.DropRef(ctx, attemptA, nil); err != nil {
			t.Fatalf("DropRef #%d: %v", i+1, err)
		}
	}
	if _, ok, err := r.HasRef(ctx, attemptA); ok || err != nil {
		t.Fatalf("HasRef after DropRef = %v, %v", ok, err)
	}
	if got, ok, _ := r.HasRef(ctx, attemptB); !ok || got != x {
		t.Fatal("DropRef removed another attempt's ref")
	}
	if err := r.DropRef(ctx, "not-a-uuid", nil); err == nil {
		t.Fatal("DropRef accepted a bad attempt ID")
	}
	if _, _, err := r.HasRef(ctx, "refs/heads/main"); err == nil {
		t.Fatal("HasRef accepted a bad attempt ID")
	}
}
