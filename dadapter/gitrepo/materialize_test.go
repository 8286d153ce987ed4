package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Materialize fetches by ID: the commit and its history arrive, nothing
// else does, no ref, tag or FETCH_HEAD is made, and the user's repository
// is not written.
func TestMaterializeFetchesByIDOnly(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	before := digest(t, u.dir)

	var g groups
	if err := r.Materialize(ctx, u.c2, g.on); err != nil {
		t.Fatal(err)
	}
	if g.count() < 2 {
		t.Fatalf("%d process groups reported, want the check and the fetch", g.count())
	}
	for id, want := range map[string]bool{u.c2: true, u.c1: true, u.c3: false, u.tagObject: false} {
		if got := hasObject(r.Path(), id); got != want {
			t.Errorf("object %s present = %v, want %v", id, got, want)
		}
	}
	// A commit no ref reaches is fetched too: protocol v2 lets upload-pack
	// serve any object by ID.
	if err := r.Materialize(ctx, u.lost, nil); err != nil {
		t.Fatal(err)
	}
	if !hasObject(r.Path(), u.lost) {
		t.Fatal("the unreachable commit is missing")
	}
	if refs := refsIn(t, r.Path()); len(refs) != 0 {
		t.Fatalf("Materialize left refs %v", refs)
	}
	if after := digest(t, u.dir); after != before {
		t.Fatal("the user's repository changed")
	}

	// A commit that is there already costs one check and no fetch.
	var again groups
	if err := r.Materialize(ctx, u.c2, again.on); err != nil {
		t.Fatal(err)
	}
	if again.count() != 1 {
		t.Fatalf("materializing a present commit ran %d git calls, want 1", again.count())
	}
}

func TestMaterializeRefusesWhatIsNotACommit(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	before := digest(t, u.dir)

	unknown := strings.Repeat("ab", 20)
	err := r.Materialize(ctx, unknown, nil)
	if err == nil || !strings.Contains(err.Error(), unknown) || !strings.Contains(err.Error(), "not our ref") {
		t.Fatalf("unknown commit: err = %v, want one naming the commit and git's reason", err)
	}
	if err := r.Materialize(ctx, u.c3Tree, nil); err == nil || !strings.Contains(err.Error(), "is not a commit") {
		t.Fatalf("a tree: err = %v, want 'is not a commit'", err)
	}
	for _, bad := range []string{"HEAD", "main", strings.ToUpper(u.c3), u.c3[:12], "-" + u.c3[1:]} {
		var g groups
		if err := r.Materialize(ctx, bad, g.on); !errors.Is(err, ErrBadCommit) || g.count() != 0 {
			t.Errorf("Materialize(%q): err = %v after %d git calls, want ErrBadCommit before any", bad, err, g.count())
		}
	}
	if refs := refsIn(t, r.Path()); len(refs) != 0 {
		t.Fatalf("refused fetches left refs %v", refs)
	}
	if digest(t, u.dir) != before {
		t.Fatal("the user's repository changed")
	}
}

func TestMaterializeStopsWithContext(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Materialize(ctx, u.c3, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestResolveHead(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	before := digest(t, u.dir)
	head, err := r.ResolveHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != u.c3 {
		t.Fatalf("ResolveHead = %s, want %s", head, u.c3)
	}
	if digest(t, u.dir) != before {
		t.Fatal("the user's repository changed")
	}

	// A directory inside a repository is not one: git must not search
	// upwards and read the enclosing repository's HEAD.
	sub := filepath.Join(u.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	inner, err := Open(ctx, t.TempDir(), owner, sub)
	if err != nil {
		t.Fatal(err)
	}
	if head, err := inner.ResolveHead(ctx); err == nil {
		t.Fatalf("ResolveHead in a plain subdirectory = %s, want an error", head)
	}
}
