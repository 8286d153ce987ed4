package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
)

// export runs ExportTaskDiff and waits for its done.
func export(t *testing.T, ctx context.Context, d *D, fs dadapter.TaskFilesystems, maxBytes int) (dadapter.ExportResult, error) {
	t.Helper()
	return answered(t, "ExportTaskDiff", func(done func(dadapter.ExportResult, error)) { d.ExportTaskDiff(ctx, fs, maxBytes, done) })
}

// helpers lists the export, inspect, tree and commit containers labelled
// with allocation ID id.
func (w *world) helpers(id string) []string {
	var out []string
	for _, o := range w.labelled(id) {
		for _, k := range []Kind{KindExport, KindInspect, KindTree, KindCommit} {
			if strings.HasPrefix(o, "container "+string(k)+" ") {
				out = append(out, o)
			}
		}
	}
	return out
}

// edit is what the tests' agent does to the work tree, as uid 1000: an
// edit, a new file in a new directory, a new link, a deletion, and an
// ignored file.
func (s *seeded) edit() {
	s.t.Helper()
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, map[string]string{
		"README.md":     "A repository.\nEdited by the agent.\n",
		"notes/new.txt": "A new file.\n",
		"new-link":      "->notes/new.txt",
		"build/out.log": "ignored\n",
	})
	s.asAgent(s.st, "rm /task/gone.txt")
}

// TestExportEditsAndNewFiles: the export is the raw diff from the base to
// the work tree: the edit, the deletion, and the new untracked file and
// link, with no notice but for the ignored directory. It leaves no export
// container, and writes nothing to task storage (the metadata still
// matches its baseline, and a second export is the same).
func TestExportEditsAndNewFiles(t *testing.T) {
	s := newSeeded(t)
	s.edit()
	start := time.Now()
	r, err := export(t, context.Background(), s.d, s.st, 1<<20)
	t.Logf("export took %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	diff := string(r.Diff)
	for _, want := range []string{
		"codeboost: not diffed, an ignored path: build/\n",
		"diff --git a/README.md b/README.md\n",
		"+Edited by the agent.\n",
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n",
		"diff --git a/new-link b/new-link\nnew file mode 120000\n",
		"diff --git a/notes/new.txt b/notes/new.txt\nnew file mode 100644\n",
		"+A new file.\n",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, diff)
		}
	}
	if r.Truncated || strings.Count(diff, "codeboost:") != 1 {
		t.Errorf("truncated %v, %d notices; want the whole diff and one notice", r.Truncated, strings.Count(diff, "codeboost:"))
	}
	if h := s.helpers(s.st.owner.AllocationID); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
	again, err := export(t, context.Background(), s.d, s.st, 1<<20)
	if err != nil || !bytes.Equal(again.Diff, r.Diff) {
		t.Errorf("a second export differs (%v):\n%s", err, again.Diff)
	}
}

// withGitSkipped adds to files what Git skips or will not take, in the
// seeded fixture's writeIn form: an untracked nested repository, an entry
// named .git beside a file, a path Git will not add, a fifo and a file
// the seed's .gitignore ignores. The export's notices and the
// inspection's lists are both measured on it.
func withGitSkipped(files map[string]string) map[string]string {
	for name, data := range map[string]string{
		"nested/.git/HEAD":       "ref: refs/heads/main\n",
		"nested/.git/objects/.k": "",
		"nested/.git/refs/.k":    "",
		"nested/inner.txt":       "inside the nested repository\n",
		"junk/.git/x":            "not a repository\n",
		"junk/beside.txt":        "beside a .git entry\n",
		"sub/.gitmodules":        "->elsewhere",
		"pipe":                   "|fifo",
		"x.log":                  "ignored\n",
	} {
		files[name] = data
	}
	return files
}

// TestExportNotices: what the diff leaves out is named in codeboost: lines
// before it: a changed file over 8 MiB (whose bytes are not in the diff),
// an untracked nested repository, an untracked path git will not add, an
// entry named .git, a fifo, an ignored path, and a changed file whose ident
// attribute is set.
func TestExportNotices(t *testing.T) {
	s := newSeeded(t)
	big := strings.Repeat("x", bigFileBytes+1)
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, withGitSkipped(map[string]string{
		"big.bin":        "B" + big,
		".gitattributes": "*.id ident\n",
		"f.id":           "$Id$\n",
	}))
	r, err := export(t, context.Background(), s.d, s.st, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	notices, rest := splitNotices(string(r.Diff))
	want := []string{
		"codeboost: not diffed, a changed file over 8 MiB: big.bin",
		"codeboost: not diffed, an untracked nested repository: nested",
		"codeboost: not diffed, an untracked path Git will not add: sub/.gitmodules",
		"codeboost: not diffed, an entry named .git: junk/.git",
		"codeboost: not diffed, an entry named .git: nested/.git",
		"codeboost: not diffed, a fifo or socket: pipe",
		"codeboost: not diffed, an ignored path: x.log",
		"codeboost: shown as Git stores it (ident or working-tree-encoding): f.id",
	}
	slices.Sort(want)
	slices.Sort(notices)
	if !slices.Equal(notices, want) {
		t.Errorf("notices:\n\t%s\nwant\n\t%s", strings.Join(notices, "\n\t"), strings.Join(want, "\n\t"))
	}
	if strings.Contains(rest, "BBBB") || strings.Contains(rest, "inside the nested") || !strings.Contains(rest, "+beside a .git entry") {
		t.Errorf("the diff after the notices:\n%.2000s", rest)
	}
}

// splitNotices splits an export into its notice lines and the diff.
func splitNotices(diff string) (notices []string, rest string) {
	for strings.HasPrefix(diff, "codeboost: ") {
		line, after, _ := strings.Cut(diff, "\n")
		notices, diff = append(notices, line), after
	}
	return notices, diff
}

// TestExportTruncated: an export bounded below its size is its first
// maxBytes bytes, reported Truncated; bounded at exactly its size, it is
// whole. The line saying it was cut is F's to add.
func TestExportTruncated(t *testing.T) {
	s := newSeeded(t)
	s.edit()
	full, err := export(t, context.Background(), s.d, s.st, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{0, 16, 100, len(full.Diff) - 1, len(full.Diff)} {
		r, err := export(t, context.Background(), s.d, s.st, max)
		wantCut := max < len(full.Diff)
		switch {
		case err != nil:
			t.Errorf("maxBytes %d: %v", max, err)
		case r.Truncated != wantCut || len(r.Diff) != min(max, len(full.Diff)) || !bytes.HasPrefix(full.Diff, r.Diff):
			t.Errorf("maxBytes %d of %d: %d bytes, truncated %v; want a prefix, truncated %v", max, len(full.Diff), len(r.Diff), r.Truncated, wantCut)
		}
	}
	if _, err := export(t, context.Background(), s.d, s.st, 1<<20+1); err == nil {
		t.Errorf("maxBytes over 1 MiB accepted")
	}
}

// TestExportMetadataChanged: an export of storage whose metadata is not
// what the allocation seeded (written behind the agent's back, through the
// keeper) is refused before git reads it, and so is a commit.
func TestExportMetadataChanged(t *testing.T) {
	for name, change := range map[string]map[string]string{
		"config":   {"config": "[core]\n\tfsmonitor = /task/evil\n"},
		"new-ref":  {"refs/heads/extra": strings.Repeat("0", 40) + "\n"},
		"new-link": {"HEAD2": "->HEAD"},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSeeded(t)
			s.writeIn(s.st.keeper, metaDir, 0, 0, change)
			if _, err := export(t, context.Background(), s.d, s.st, 1<<20); !errors.Is(err, ErrMetadataChanged) {
				t.Errorf("export: %v, want ErrMetadataChanged", err)
			}
			if _, err := commit(t, context.Background(), s.d, s.st); !errors.Is(err, ErrMetadataChanged) {
				t.Errorf("commit: %v, want ErrMetadataChanged", err)
			}
		})
	}
}

// TestExportDeadline: an export whose context ends (a deadline already
// passed, or an abort while git runs over a large tree) fails with the
// context's error, and its container is removed before done.
func TestExportDeadline(t *testing.T) {
	s := newSeeded(t)
	id := s.st.owner.AllocationID
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	time.Sleep(2 * time.Millisecond)
	if _, err := export(t, ctx, s.d, s.st, 1<<20); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("export past its deadline: %v, want DeadlineExceeded", err)
	}
	if h := s.helpers(id); len(h) > 0 {
		t.Errorf("left: %v", h)
	}

	files := map[string]string{}
	for i := range 20000 {
		files[fmt.Sprintf("many/f%05d", i)] = fmt.Sprintln(i)
	}
	s.writeIn(s.st.keeper, taskDir, 1000, 1000, files)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { // abort once the export container runs
		for ctx.Err() == nil {
			res, err := s.cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).
				Add("label", LabelAllocation+"="+id).Add("label", LabelKind+"="+string(KindExport))})
			if err == nil && len(res.Items) > 0 {
				time.Sleep(200 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	if _, err := export(t, ctx, s.d, s.st, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("export aborted while it runs: %v, want Canceled", err)
	}
	t.Logf("the aborted export ended %v after it started", time.Since(start).Round(time.Millisecond))
	if h := s.helpers(id); len(h) > 0 {
		t.Errorf("left: %v", h)
	}
}
