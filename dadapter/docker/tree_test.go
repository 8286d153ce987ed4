package docker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// checkTaskTree runs CheckTaskTree and waits for its done.
func checkTaskTree(t *testing.T, ctx context.Context, d *D, fs dadapter.TaskFilesystems, head string, ops ...dadapter.FileOperation) (dadapter.TaskTree, error) {
	t.Helper()
	return answered(t, "CheckTaskTree", func(done func(dadapter.TaskTree, error)) { d.CheckTaskTree(ctx, fs, head, ops, done) })
}

// gitlinked allocates task storage on s's adapter from a commit of s's
// repository that adds a gitlink at vendor/lib (where the fake agent's
// edit-submodule mode writes), and returns it with its head.
func (s *seeded) gitlinked() (*storage, string) {
	s.t.Helper()
	git(s.t, s.repo, "update-index", "--add", "--cacheinfo", "160000,"+s.head+",vendor/lib")
	git(s.t, s.repo, "commit", "-q", "-m", "a submodule")
	head := strings.TrimSpace(git(s.t, s.repo, "rev-parse", "HEAD"))
	fs, err := allocate(s.t, context.Background(), s.d, newOwner(s.st.owner.RunnerOwner), dadapter.Source{Repository: s.repo, Commit: head}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	st := fs.(*storage)
	s.t.Cleanup(func() {
		if _, err := s.d.heldStorage(st); err == nil {
			s.remove(s.d, st)
		}
	})
	return st, head
}

// gitlinkedListing is what the script lists of gitlinked's head (userRepo
// and the gitlink), for the tests that need no Docker.
var gitlinkedListing = strings.Join([]string{
	"100644 blob 0000000000000000000000000000000000000001\t.gitignore",
	"100644 blob 0000000000000000000000000000000000000002\tREADME.md",
	"100644 blob 0000000000000000000000000000000000000003\tgone.txt",
	"120000 blob 0000000000000000000000000000000000000004\tlink",
	"100755 blob 0000000000000000000000000000000000000005\trun.sh",
	"100644 blob 0000000000000000000000000000000000000006\tsrc/main.go",
	"160000 commit 0000000000000000000000000000000000000007\tvendor/lib",
}, "\x00") + "\x00"

// fitting are operations that fit gitlinked's head.
var fitting = []dadapter.FileOperation{
	{Op: "modify", Path: "README.md"},
	{Op: "modify", Path: "src/main.go"},
	{Op: "delete", Path: "gone.txt"},
	{Op: "create", Path: "notes/new.md"},
	{Op: "create", Path: "src/new.go"},
	{Op: "rename", Path: "run.sh", To: "bin/run.sh"},
}

// unfit are operations gitlinked's head refuses, each with what the
// refusal must say: the path it names (quoted) and why.
var unfit = []struct {
	op   dadapter.FileOperation
	want []string
}{
	{dadapter.FileOperation{Op: "create", Path: "README.md"}, []string{`"README.md" already exists`}},
	{dadapter.FileOperation{Op: "create", Path: "src"}, []string{`"src" already exists`, "a directory"}},
	{dadapter.FileOperation{Op: "create", Path: "vendor/lib"}, []string{`"vendor/lib" already exists`, "a submodule"}},
	{dadapter.FileOperation{Op: "create", Path: "vendor/lib/planted.txt"}, []string{`"vendor/lib/planted.txt" is inside "vendor/lib"`, "a submodule"}},
	{dadapter.FileOperation{Op: "create", Path: "link/x"}, []string{`"link/x" is inside "link"`, "a symbolic link"}},
	{dadapter.FileOperation{Op: "create", Path: "README.md/x"}, []string{`"README.md/x" is inside "README.md"`, "a file"}},
	{dadapter.FileOperation{Op: "modify", Path: "missing.txt"}, []string{`"missing.txt" is not in the head`}},
	{dadapter.FileOperation{Op: "modify", Path: "link"}, []string{`"link" is a symbolic link`}},
	{dadapter.FileOperation{Op: "modify", Path: "vendor/lib"}, []string{`"vendor/lib" is a submodule`}},
	{dadapter.FileOperation{Op: "modify", Path: "src"}, []string{`"src" is a directory`}},
	{dadapter.FileOperation{Op: "modify", Path: "vendor/lib/x.go"}, []string{`"vendor/lib/x.go" is inside "vendor/lib"`}},
	{dadapter.FileOperation{Op: "delete", Path: "missing.txt"}, []string{`"missing.txt" is not in the head`}},
	{dadapter.FileOperation{Op: "delete", Path: "link"}, []string{`"link" is a symbolic link`}},
	{dadapter.FileOperation{Op: "delete", Path: "vendor/lib"}, []string{`"vendor/lib" is a submodule`}},
	{dadapter.FileOperation{Op: "rename", Path: "README.md", To: "src/main.go"}, []string{`"src/main.go" already exists`}},
	{dadapter.FileOperation{Op: "rename", Path: "missing.txt", To: "x.txt"}, []string{`"missing.txt" is not in the head`}},
	{dadapter.FileOperation{Op: "rename", Path: "link", To: "x.txt"}, []string{`"link" is a symbolic link`}},
	{dadapter.FileOperation{Op: "rename", Path: "README.md", To: "vendor/lib/README.md"}, []string{`"vendor/lib/README.md" is inside "vendor/lib"`}},
}

// misshapen are operations no head fits, refused before any container
// runs, each with what the refusal must say.
var misshapen = []struct {
	op   dadapter.FileOperation
	want string
}{
	{dadapter.FileOperation{Op: "create", Path: "../x"}, `"../x": not a path inside the repository`},
	{dadapter.FileOperation{Op: "create", Path: ".."}, `"..": not a path inside the repository`},
	{dadapter.FileOperation{Op: "modify", Path: ".git/config"}, `".git/config": a path inside Git's metadata`},
	{dadapter.FileOperation{Op: "create", Path: "sub/.GIT/hooks/x"}, `"sub/.GIT/hooks/x": a path inside Git's metadata`},
	{dadapter.FileOperation{Op: "create", Path: "a//b"}, `"a//b": not a clean path ("a/b")`},
	{dadapter.FileOperation{Op: "create", Path: "a/./b"}, `"a/./b": not a clean path`},
	{dadapter.FileOperation{Op: "create", Path: "a/../b"}, `"a/../b": not a clean path`},
	{dadapter.FileOperation{Op: "create", Path: "a/"}, `"a/": not a clean path`},
	{dadapter.FileOperation{Op: "create", Path: "/etc/passwd"}, `"/etc/passwd": an absolute path`},
	{dadapter.FileOperation{Op: "create", Path: ""}, `"" (an empty path)`},
	{dadapter.FileOperation{Op: "create", Path: "."}, `".": not a path inside the repository`},
	{dadapter.FileOperation{Op: "create", Path: "a\x00b"}, `"a\x00b": a path with a NUL byte`},
	{dadapter.FileOperation{Op: "copy", Path: "README.md"}, `"copy" of "README.md" is not an operation`},
	{dadapter.FileOperation{Op: "", Path: "README.md"}, `"" of "README.md" is not an operation`},
	{dadapter.FileOperation{Op: "modify", Path: "README.md", To: "b.md"}, `a modify of "README.md" has a new path "b.md"`},
	{dadapter.FileOperation{Op: "rename", Path: "README.md"}, `a rename of "README.md" to "" (an empty path)`},
	{dadapter.FileOperation{Op: "rename", Path: "README.md", To: "../b.md"}, `a rename of "README.md" to "../b.md": not a path inside`},
}

// TestCheckTaskTree: fresh storage seeded from a head with a gitlink is a
// clean copy of it: fitting operations of every kind answer the head and
// its gitlink, and each operation that does not fit the head (a create of
// what is there, a modify, delete or rename of what is not a regular file,
// a rename onto what is there, a path inside a submodule, through a link
// or below a file) is refused, naming its path; so is an operation no
// head fits, before any container runs. No tree container is left, and
// the storage is not written (a second check answers the same).
func TestCheckTaskTree(t *testing.T) {
	s := newSeeded(t)
	st, head := s.gitlinked()
	start := time.Now()
	tr, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting...)
	t.Logf("the check took %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	want := dadapter.TaskTree{Head: head, Gitlinks: []string{"vendor/lib"}}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("CheckTaskTree answered %#v, want %#v", tr, want)
	}
	for _, c := range unfit {
		_, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting[0], c.op)
		wantRefusal(t, fmt.Sprintf("%s %q %q", c.op.Op, c.op.Path, c.op.To), err, c.want...)
		if err != nil && !strings.Contains(err.Error(), "operation 2, a "+c.op.Op+": ") {
			t.Errorf("%v does not name the operation it refuses (the second, a %s)", err, c.op.Op)
		}
	}
	blind := s.noHelper(st)
	for _, c := range misshapen {
		_, err := checkTaskTree(t, context.Background(), blind, st, head, fitting[0], c.op)
		wantRefusal(t, fmt.Sprintf("%q %q %q", c.op.Op, c.op.Path, c.op.To), err, "task tree refused: operation 2: ", c.want)
	}
	if h := s.helpers(st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
	if again, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting...); err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("a second check: %#v, %v; want %#v", again, err, want)
	}
}

// noHelper is an adapter that holds st but has no helper image: a check
// it answers with a refusal refused before any container was made.
func (s *seeded) noHelper(st *storage) *D {
	d := s.adapter(nil, func(o *Options) { o.HelperImage = "codeboost-no-such-image:1" })
	lend(s.t, d, st)
	return d
}

// wantRefusal requires err to be ErrTaskTreeRefused saying each of want.
func wantRefusal(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, dadapter.ErrTaskTreeRefused) {
		t.Errorf("%s: %v, want ErrTaskTreeRefused", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestCheckTaskTreeUnclean: a work tree that is not a clean copy of the
// head is refused, naming what differs: an edited file, a deleted one, an
// untracked file, an ignored file and directory, a fifo, an entry named
// .git, content in a submodule directory, a missing submodule directory.
// Each is undone before the next, and the tree is clean again at the end.
// Metadata that is not its baseline is refused too, as the metadata
// change it is.
func TestCheckTaskTreeUnclean(t *testing.T) {
	s := newSeeded(t)
	st, head := s.gitlinked()
	for _, c := range []struct {
		name        string
		write       map[string]string // written as the agent
		run         string            // run as the agent, after write
		want        string            // the refusal names it
		undo        string            // run as the agent
		undoWriting map[string]string // written as the agent, after undo
	}{
		{name: "edited", write: map[string]string{"README.md": "Edited.\n"}, want: `"README.md" (modified)`,
			undoWriting: map[string]string{"README.md": "A repository.\n"}},
		{name: "deleted", run: "rm /task/gone.txt", want: `"gone.txt" (deleted)`,
			undoWriting: map[string]string{"gone.txt": "to be deleted\n"}},
		{name: "untracked", write: map[string]string{"notes/new.txt": "new\n"}, want: `"notes/new.txt" (untracked)`, undo: "rm -r /task/notes"},
		{name: "ignored", write: map[string]string{"x.log": "log\n"}, want: `"x.log" (ignored)`, undo: "rm /task/x.log"},
		{name: "ignored-directory", write: map[string]string{"build/out.o": "object\n"}, want: `"build" (ignored)`, undo: "rm -r /task/build"},
		{name: "fifo", write: map[string]string{"pipe": "|fifo"}, want: `"pipe" (a fifo or socket)`, undo: "rm /task/pipe"},
		{name: "dotgit", write: map[string]string{"junk/.git/x": "x\n"}, want: `"junk/.git" (an entry named .git)`, undo: "rm -r /task/junk"},
		{name: "gitlink-content", write: map[string]string{"vendor/lib/planted.txt": "planted\n"},
			want: `"vendor/lib" (content in a submodule directory)`, undo: "rm /task/vendor/lib/planted.txt"},
		{name: "gitlink-missing", run: "rmdir /task/vendor/lib", want: `"vendor/lib" (deleted)`, undo: "mkdir /task/vendor/lib"},
	} {
		if len(c.write) > 0 {
			s.writeIn(st.keeper, taskDir, 1000, 1000, c.write)
		}
		if c.run != "" {
			s.asAgent(st, c.run)
		}
		_, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting...)
		wantRefusal(t, c.name, err, "the work tree is not a clean copy of the head", c.want)
		t.Logf("%s: %v", c.name, err)
		if c.undo != "" {
			s.asAgent(st, c.undo)
		}
		if len(c.undoWriting) > 0 {
			s.writeIn(st.keeper, taskDir, 1000, 1000, c.undoWriting)
		}
	}
	if _, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting...); err != nil {
		t.Errorf("the work tree with every change undone: %v, want it clean", err)
	}

	s.writeIn(st.keeper, metaDir, 0, 0, map[string]string{"config": "[core]\n\tfsmonitor = /task/evil\n"})
	_, err := checkTaskTree(t, context.Background(), s.d, st, head, fitting...)
	wantRefusal(t, "metadata changed", err, "the task storage's metadata changed since it was seeded")
	if !errors.Is(err, ErrMetadataChanged) {
		t.Errorf("metadata changed: %v, want ErrMetadataChanged too", err)
	}
	if h := s.helpers(st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}

// TestCheckTaskTreeFails: a head that is not the storage's base is a
// refusal, made before any container runs; a check that cannot run is an
// error that is not one: a listing over its bound, a context ended first,
// storage this D no longer holds (ErrNotHeld). A work tree that is not
// clean is still refused when its manifest is over the bound, without
// its paths.
func TestCheckTaskTreeFails(t *testing.T) {
	s := newSeeded(t)
	id := s.st.owner.AllocationID
	blind := s.noHelper(s.st)
	_, err := checkTaskTree(t, context.Background(), blind, s.st, strings.Repeat("1", 40))
	wantRefusal(t, "another head", err, `head "1111111111111111111111111111111111111111" is not the storage's base `+s.head)
	_, err = checkTaskTree(t, context.Background(), blind, s.st, "")
	wantRefusal(t, "no head", err, `head "" is not the storage's base`)
	if _, err := checkTaskTree(t, context.Background(), blind, s.st, s.head); err == nil || errors.Is(err, dadapter.ErrTaskTreeRefused) {
		t.Errorf("a check whose container cannot be made: %v, want a failure that is no refusal", err)
	}

	if _, err := s.d.checkTree(context.Background(), s.st, s.head, nil, 100); err == nil || errors.Is(err, dadapter.ErrTaskTreeRefused) ||
		!strings.Contains(err.Error(), "the listing of the head's tree is over 100 bytes") {
		t.Errorf("a listing over its bound: %v, want a failure that is no refusal", err)
	}
	if _, err := checkTaskTree(t, cancelled(), s.d, s.st, s.head); !errors.Is(err, context.Canceled) || errors.Is(err, dadapter.ErrTaskTreeRefused) {
		t.Errorf("a check whose context ended first: %v, want Canceled", err)
	}
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, map[string]string{"new.txt": "new\n"})
	_, err = s.d.checkTree(context.Background(), s.st, s.head, nil, 5)
	wantRefusal(t, "an unclean tree over the bound", err, "its change manifest is over 5 bytes")
	if h := s.helpers(id); len(h) > 0 {
		t.Errorf("left: %v", h)
	}

	s.remove(s.d, s.st)
	_, err = checkTaskTree(t, context.Background(), s.d, s.st, s.head)
	if !errors.Is(err, ErrNotHeld) || errors.Is(err, dadapter.ErrTaskTreeRefused) {
		t.Errorf("a check of removed storage: %v, want ErrNotHeld and no refusal", err)
	}
}

// cancelled is a context already cancelled.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestStartMountsGitlinks: started with the checked tree, an agent that
// edits and then writes inside the submodule directory (edit-submodule)
// cannot do the second: the directory is an empty read-only mount, so
// that write fails, and the storage's manifest after settlement holds the
// edit and no gitlink content (the mount left nothing in the work tree). Started without the tree, the
// same agent writes there and the manifest lists it: the mount, not the
// agent, stopped it. Start refuses a tree of another head, and a gitlink
// that is not a clean relative path, allocating nothing.
func TestStartMountsGitlinks(t *testing.T) {
	s := newSeeded(t)
	st, head := s.gitlinked()
	tr, err := checkTaskTree(t, context.Background(), s.d, st, head)
	if err != nil {
		t.Fatal(err)
	}
	in := s.input(st, "edit-submodule")
	in.Clone.Head, in.Tree = head, tr
	inv := start(t, s.d, in)
	r := inv.await(time.Minute)
	t.Logf("with the tree: exit %d, output %q", r.ExitCode, inv.sink.String())
	if out := inv.sink.String(); r.ExitCode != 0 || !strings.Contains(out, "refused=true") || !strings.Contains(out, "read-only file system") {
		t.Errorf("the agent exited %d and wrote %q; want its write inside vendor/lib refused, and its edit done", r.ExitCode, out)
	}
	m, err := inspect(t, context.Background(), s.d, st)
	if err != nil {
		t.Fatal(err)
	}
	edited := []dadapter.Change{{Path: "README.md", Kind: dadapter.ChangeModified}, {Path: "new.txt", Kind: dadapter.ChangeAdded}}
	checkManifest(t, m, dadapter.ChangeManifest{Changes: edited})

	// What the engine made of the mount: a tmpfs, read-only.
	in = s.input(st, "sleep")
	in.Clone.Head, in.Tree = head, tr
	sleeper := start(t, s.d, in)
	sleeper.awaitOutput("fakeagent: sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.cli.ContainerInspect(ctx, s.onlyAgent(in.AttemptID), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mounted []string
	for _, mt := range res.Container.Mounts {
		mounted = append(mounted, fmt.Sprintf("%s %s rw=%v", mt.Destination, mt.Type, mt.RW))
	}
	if !slices.Contains(mounted, "/task/vendor/lib tmpfs rw=false") {
		t.Errorf("the agent's mounts %q lack a read-only tmpfs at /task/vendor/lib", mounted)
	}
	sleeper.h.Cancel(words.StopCancelled)
	sleeper.await(time.Minute)

	for why, change := range map[string]func(*dadapter.InvocationInput){
		"a tree of another head": func(in *dadapter.InvocationInput) { in.Tree.Head = strings.Repeat("1", 40) },
		"a clone of another head": func(in *dadapter.InvocationInput) {
			in.Clone.Head = strings.Repeat("1", 40)
		},
		"gitlinks without a head": func(in *dadapter.InvocationInput) { in.Tree.Head = "" },
		"a gitlink outside /task": func(in *dadapter.InvocationInput) { in.Tree.Gitlinks = []string{"../etc"} },
		"a gitlink in the .git":   func(in *dadapter.InvocationInput) { in.Tree.Gitlinks = []string{".git/modules"} },
		"a gitlink that is /task": func(in *dadapter.InvocationInput) { in.Tree.Gitlinks = []string{"."} },
		"a gitlink named twice":   func(in *dadapter.InvocationInput) { in.Tree.Gitlinks = []string{"vendor/lib", "vendor/lib"} },
		"an empty gitlink path":   func(in *dadapter.InvocationInput) { in.Tree.Gitlinks = []string{""} },
	} {
		in := s.input(st, "succeed")
		in.Clone.Head, in.Tree = head, dadapter.TaskTree{Head: head, Gitlinks: []string{"vendor/lib"}}
		change(&in)
		h, err := s.d.Start(in)
		if err == nil || h != nil {
			t.Errorf("Start accepted %s (handle %v)", why, h)
			if h != nil {
				h.Cancel("")
			}
			continue
		}
		t.Logf("refused %s: %v", why, err)
	}
	if left := s.agents(st.owner.AttemptID); len(left) > 0 {
		t.Errorf("the refused starts left agent containers %v", left)
	}

	plain := start(t, s.d, s.input(st, "edit-submodule"))
	if r := plain.await(time.Minute); r.ExitCode != 0 {
		t.Errorf("without the tree the agent exited %d (%q), want 0", r.ExitCode, plain.sink.String())
	}
	m, err = inspect(t, context.Background(), s.d, st)
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, m, dadapter.ChangeManifest{Changes: edited, GitlinkContent: []string{"vendor/lib"}})
}

// TestParseTree: the script's listing of the head's tree is read exactly,
// directories implied; a listing that is cut, or has a record or mode
// the adapter does not know, is refused rather than read in part. The
// operation tables above fit the listing as they fit the real head. No
// Docker: the script's side is the tests above.
func TestParseTree(t *testing.T) {
	tree, err := parseTree([]byte(gitlinkedListing))
	if err != nil {
		t.Fatal(err)
	}
	want := headTree{".gitignore": entryFile, "README.md": entryFile, "gone.txt": entryFile, "link": entryLink,
		"run.sh": entryFile, "src": entryDir, "src/main.go": entryFile, "vendor": entryDir, "vendor/lib": entryGitlink}
	if !reflect.DeepEqual(tree, want) {
		t.Errorf("tree:\n\t%v\nwant\n\t%v", tree, want)
	}
	if g := tree.gitlinks(); !reflect.DeepEqual(g, []string{"vendor/lib"}) {
		t.Errorf("gitlinks %q, want vendor/lib", g)
	}
	if tr, err := parseTree(nil); err != nil || len(tr) != 0 {
		t.Errorf("an empty head: %v, %v; want an empty tree", tr, err)
	}
	for name, bad := range map[string]string{
		"cut":          "100644 blob 01\tREADME.md",
		"no tab":       "100644 blob 01 README.md\x00",
		"no path":      "100644 blob 01\t\x00",
		"a tree":       "040000 tree 01\tsrc\x00",
		"a wrong type": "160000 blob 01\tvendor/lib\x00",
		"a mode":       "100664 blob 01\tREADME.md\x00",
	} {
		if tr, err := parseTree([]byte(bad)); err == nil {
			t.Errorf("%s: %v, want an error", name, tr)
		}
	}

	for _, op := range fitting {
		if err := checkOperation(op); err != nil {
			t.Errorf("%+v: %v", op, err)
		} else if err := tree.fit(op); err != nil {
			t.Errorf("%+v: %v, want it to fit", op, err)
		}
	}
	for _, c := range unfit {
		if err := checkOperation(c.op); err != nil {
			t.Errorf("%+v: %v, want a well-shaped operation", c.op, err)
			continue
		}
		err := tree.fit(c.op)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want it refused saying %q", c.op, err, w)
			}
		}
	}
	for _, c := range misshapen {
		if err := checkOperation(c.op); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want it refused saying %q", c.op, err, c.want)
		}
	}
}

// TestUnclean: a refusal of an unclean tree names its first paths, each
// with what it is, and counts the rest.
func TestUnclean(t *testing.T) {
	stream := func(fields ...string) []byte { return []byte(strings.Join(fields, "\x00") + "\x00") }
	got := unclean(helperOutput{stdout: stream("M", "a", "D", "b", "A", "c\nd", "ignored", "x.log", "submodule", "vendor/lib", "dotgit", "j/.git", "special", "p")}, 1000)
	want := `"a" (modified), "b" (deleted), "c\nd" (untracked), "x.log" (ignored), "vendor/lib" (content in a submodule directory) and 2 more`
	if got != want {
		t.Errorf("unclean:\n\t%s\nwant\n\t%s", got, want)
	}
	// Each list in the order the refusal names them; exactly maxNamed
	// paths are all named, with no count after them.
	for _, c := range []struct {
		fields []string
		want   string
	}{
		{[]string{"ignored", "i", "nested", "n", "submodule", "s", "dotgit", "g/.git", "special", "f"},
			`"i" (ignored), "n" (an untracked nested repository), "s" (content in a submodule directory), "g/.git" (an entry named .git), "f" (a fifo or socket)`},
		{[]string{"special", "f", "refused", "r"}, `"f" (a fifo or socket), "r" (a path git will not add)`},
	} {
		if got := unclean(helperOutput{stdout: stream(c.fields...)}, 1000); got != c.want {
			t.Errorf("unclean:\n\t%s\nwant\n\t%s", got, c.want)
		}
	}
	if got := unclean(helperOutput{stdout: stream("A", "a"), overflow: true}, 3); got != "its change manifest is over 3 bytes" {
		t.Errorf("over the bound: %s", got)
	}
}
