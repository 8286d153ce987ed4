package docker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
)

// inspect runs InspectTaskChanges and waits for its done.
func inspect(t *testing.T, ctx context.Context, d *D, fs dadapter.TaskFilesystems) (dadapter.ChangeManifest, error) {
	t.Helper()
	return answered(t, "InspectTaskChanges", func(done func(dadapter.ChangeManifest, error)) { d.InspectTaskChanges(ctx, fs, done) })
}

// checkManifest fails the test unless got is want, naming both.
func checkManifest(t *testing.T, got, want dadapter.ChangeManifest) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("manifest:\n\t%#v\nwant\n\t%#v", got, want)
	}
}

// TestInspectChanges: the manifest of the tests' usual agent (s.edit) is
// exactly its work: the edit, the deletion, the new file and link (with
// its target), a link retargeted and a file that became a link; the
// ignored file is listed as ignored and is not a change. It leaves no
// inspect container and writes nothing to task storage (the metadata
// still matches its baseline, and a second inspection is the same).
func TestInspectChanges(t *testing.T) {
	s := newSeeded(t)
	s.edit()
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, map[string]string{
		"link":   "->src/main.go",
		"run.sh": "->README.md",
	})
	start := time.Now()
	m, err := inspect(t, context.Background(), s.d, s.st)
	t.Logf("inspection took %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{
		Changes: []dadapter.Change{
			{Path: "README.md", Kind: dadapter.ChangeModified},
			{Path: "gone.txt", Kind: dadapter.ChangeDeleted},
			{Path: "link", Kind: dadapter.ChangeModified},
			{Path: "new-link", Kind: dadapter.ChangeAdded},
			{Path: "notes/new.txt", Kind: dadapter.ChangeAdded},
			{Path: "run.sh", Kind: dadapter.ChangeTypeChanged},
		},
		Symlinks: []dadapter.Symlink{
			{Path: "link", Target: "src/main.go"},
			{Path: "new-link", Target: "notes/new.txt"},
			{Path: "run.sh", Target: "README.md"},
		},
		Ignored: []string{"build"},
	})
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
	if again, err := inspect(t, context.Background(), s.d, s.st); err != nil || !reflect.DeepEqual(again, m) {
		t.Errorf("a second inspection differs (%v): %#v", err, again)
	}
}

// TestInspectNotices: what git skips or will not take is listed apart
// from the changes, path by path: an untracked nested repository (and its
// .git), an entry named .git, a path git will not add, a fifo, an ignored
// file. Paths and link targets with a newline, a tab or a leading dash
// come back byte for byte.
func TestInspectNotices(t *testing.T) {
	s := newSeeded(t)
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, withGitSkipped(map[string]string{
		"odd\nname.txt":   "a newline in the name\n",
		"tab\there.txt":   "a tab in the name\n",
		"-dash-link":      "->a target\nwith a newline\tand a tab",
		"line\nbreak.log": "ignored, with a newline\n",
	}))
	m, err := inspect(t, context.Background(), s.d, s.st)
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{
		Changes: []dadapter.Change{
			{Path: "-dash-link", Kind: dadapter.ChangeAdded},
			{Path: "junk/beside.txt", Kind: dadapter.ChangeAdded},
			{Path: "odd\nname.txt", Kind: dadapter.ChangeAdded},
			{Path: "tab\there.txt", Kind: dadapter.ChangeAdded},
		},
		Symlinks: []dadapter.Symlink{{Path: "-dash-link", Target: "a target\nwith a newline\tand a tab"}},
		Ignored:  []string{"line\nbreak.log", "x.log"},
		Nested:   []string{"nested"},
		DotGit:   []string{"junk/.git", "nested/.git"},
		Special:  []string{"pipe"},
		Refused:  []string{"sub/.gitmodules"},
	})
}

// TestInspectGitlinkContent: a submodule directory (a gitlink of the
// base, seeded empty) that the agent wrote into is listed: git shows
// nothing of what is in it, and a commit would leave it out.
func TestInspectGitlinkContent(t *testing.T) {
	s := newSeeded(t)
	git(t, s.repo, "update-index", "--add", "--cacheinfo", "160000,"+s.head+",sub")
	git(t, s.repo, "commit", "-q", "-m", "a submodule")
	head := strings.TrimSpace(git(t, s.repo, "rev-parse", "HEAD"))
	fs, err := allocate(t, context.Background(), s.d, newOwner(s.st.owner.RunnerOwner), dadapter.Source{Repository: s.repo, Commit: head}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.remove(s.d, fs) })
	st := fs.(*storage)
	s.writeIn(st.keeper, taskDir, 1000, 1000, map[string]string{"sub/inside.txt": "in the submodule directory\n"})
	m, err := inspect(t, context.Background(), s.d, st)
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{GitlinkContent: []string{"sub"}})
}

// TestInspectMetadataChanged: storage whose metadata is not what the
// allocation seeded (written behind the agent's back, through the keeper)
// is a manifest that says so and lists nothing else, since git must not
// read that metadata; it is not an error.
func TestInspectMetadataChanged(t *testing.T) {
	s := newSeeded(t)
	s.edit()
	s.writeIn(s.st.keeper, metaDir, 0, 0, map[string]string{"config": "[core]\n\tfsmonitor = /task/evil\n"})
	m, err := inspect(t, context.Background(), s.d, s.st)
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{MetadataChanged: true})
}

// TestInspectBounds: a list longer than MaxManifestPaths is its first
// MaxManifestPaths paths, sorted, and Cut says so; a manifest over the
// byte bound is refused, not cut.
func TestInspectBounds(t *testing.T) {
	s := newSeeded(t)
	files := map[string]string{}
	for i := range dadapter.MaxManifestPaths + 1 {
		files[fmt.Sprintf("many/f%05d.txt", i)] = fmt.Sprintln(i)
	}
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, files)
	m, err := inspect(t, context.Background(), s.d, s.st)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Changes); !m.Cut || n != dadapter.MaxManifestPaths || m.Changes[0].Path != "many/f00000.txt" ||
		m.Changes[n-1] != (dadapter.Change{Path: fmt.Sprintf("many/f%05d.txt", n-1), Kind: dadapter.ChangeAdded}) {
		t.Errorf("%d changes, cut %v; want the first %d, cut", n, m.Cut, dadapter.MaxManifestPaths)
	}
	if _, err := s.d.inspect(context.Background(), s.st, 1000); err == nil || !strings.Contains(err.Error(), "the change manifest is over 1000 bytes") {
		t.Errorf("a manifest over its bound: %v, want it refused", err)
	}
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}

// TestInspectRefused: the inspection of storage this D no longer holds
// (removed) is refused with ErrNotHeld; one aborted while git runs fails
// with the context's error, its container removed before done.
func TestInspectRefused(t *testing.T) {
	s := newSeeded(t)
	id := s.st.owner.AllocationID
	files := map[string]string{}
	for i := range 20000 {
		files[fmt.Sprintf("many/f%05d", i)] = fmt.Sprintln(i)
	}
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.cancelWhenRunning(ctx, cancel, id, KindInspect)
	start := time.Now()
	if _, err := inspect(t, ctx, s.d, s.st); !errors.Is(err, context.Canceled) {
		t.Errorf("inspection aborted while it runs: %v, want Canceled", err)
	}
	t.Logf("the aborted inspection ended %v after it started", time.Since(start).Round(time.Millisecond))
	if h := s.helpers(id); len(h) > 0 {
		t.Errorf("left: %v", h)
	}

	s.remove(s.d, s.st)
	if _, err := inspect(t, context.Background(), s.d, s.st); !errors.Is(err, ErrNotHeld) {
		t.Errorf("inspection of removed storage: %v, want ErrNotHeld", err)
	}
}

// cancelWhenRunning calls cancel a moment after a helper container of
// kind runs for allocation id, or when ctx ends.
func (w *world) cancelWhenRunning(ctx context.Context, cancel context.CancelFunc, id string, kind Kind) {
	filters := make(client.Filters).Add("label", LabelAllocation+"="+id).Add("label", LabelKind+"="+string(kind))
	for ctx.Err() == nil {
		res, err := w.cli.ContainerList(ctx, client.ContainerListOptions{Filters: filters})
		if err == nil && len(res.Items) > 0 {
			time.Sleep(200 * time.Millisecond)
			cancel()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestParseManifest: the records the script writes are read exactly, each
// list sorted and cut at MaxManifestPaths; a stream that is not records is
// refused rather than read in part. No Docker: the script's side is the
// tests above.
func TestParseManifest(t *testing.T) {
	stream := func(fields ...string) []byte { return []byte(strings.Join(fields, "\x00") + "\x00") }
	m, err := parseManifest(stream("M", "b\nc", "A", "a\tb", "D", "z", "T", "l", "link", "l", "t\n",
		"ignored", "i", "nested", "n", "submodule", "g", "dotgit", "x/.git", "special", "s", "refused", "r"))
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{
		Changes: []dadapter.Change{
			{Path: "a\tb", Kind: dadapter.ChangeAdded}, {Path: "b\nc", Kind: dadapter.ChangeModified},
			{Path: "l", Kind: dadapter.ChangeTypeChanged}, {Path: "z", Kind: dadapter.ChangeDeleted},
		},
		Symlinks: []dadapter.Symlink{{Path: "l", Target: "t\n"}},
		Ignored:  []string{"i"}, Nested: []string{"n"}, GitlinkContent: []string{"g"},
		DotGit: []string{"x/.git"}, Special: []string{"s"}, Refused: []string{"r"},
	})
	if m, err := parseManifest(nil); err != nil || !reflect.DeepEqual(m, dadapter.ChangeManifest{}) {
		t.Errorf("no records: %#v, %v; want an empty manifest", m, err)
	}

	var many []string
	for i := dadapter.MaxManifestPaths; i >= 0; i-- {
		many = append(many, "ignored", fmt.Sprintf("f%05d", i))
	}
	m, err = parseManifest(stream(many...))
	if n := len(m.Ignored); err != nil || !m.Cut || n != dadapter.MaxManifestPaths || m.Ignored[0] != "f00000" || m.Ignored[n-1] != fmt.Sprintf("f%05d", n-1) {
		t.Errorf("%d ignored paths, cut %v (%v); want the first %d, cut", n, m.Cut, err, dadapter.MaxManifestPaths)
	}
	m, err = parseManifest(stream(many[2:]...))
	if err != nil || m.Cut || len(m.Ignored) != dadapter.MaxManifestPaths {
		t.Errorf("exactly %d paths: %d, cut %v (%v); want them all, not cut", dadapter.MaxManifestPaths, len(m.Ignored), m.Cut, err)
	}

	for name, bad := range map[string][]byte{
		"unterminated":   []byte("A\x00a"),
		"no path":        stream("A"),
		"empty path":     stream("A", ""),
		"link no target": stream("link", "l"),
		"git's unknown":  stream("X", "x"),
		"a rename":       stream("R100", "a", "b"),
	} {
		if m, err := parseManifest(bad); err == nil {
			t.Errorf("%s: %#v, want an error", name, m)
		}
	}
}
