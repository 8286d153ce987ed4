package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// TestAuditChanges: each rule of the file-scope audit on its own. A clean
// manifest (edits, deletions, new files, links inside the work tree) is no
// finding; each thing the contract names, and each thing a commit would
// silently leave out or that reaches past the work tree, is one, in the
// audit's own words.
//
// kills: mutant/link-escape-unchecked mutant/audit-skips-gitlink-content
func TestAuditChanges(t *testing.T) {
	clean := []dadapter.Change{{Path: "README.md", Kind: dadapter.ChangeModified}, {Path: "old.txt", Kind: dadapter.ChangeDeleted},
		{Path: "notes/new.txt", Kind: dadapter.ChangeAdded}}
	cases := []struct {
		name string
		m    dadapter.ChangeManifest
		err  error
		want string // "" for no finding; else a part of the finding
	}{
		{"nothing changed", dadapter.ChangeManifest{}, nil, ""},
		{"a clean edit", dadapter.ChangeManifest{Changes: clean}, nil, ""},
		{"a link inside the tree", dadapter.ChangeManifest{Symlinks: []dadapter.Symlink{
			{Path: "docs/readme", Target: "../README.md"}, {Path: "a/b/c", Target: "../../x/./y"}, {Path: "l", Target: "src/.gitkeep"}}}, nil, ""},
		{"inspection refused", dadapter.ChangeManifest{}, errors.New("helper gone"), "the inspection of what the agent changed refused: helper gone"},
		{"metadata changed", dadapter.ChangeManifest{MetadataChanged: true, Changes: clean}, nil, "changed the repository's metadata"},
		{"an ignored file", dadapter.ChangeManifest{Changes: clean, Ignored: []string{"build/out.o"}}, nil, "files the repository ignores: build/out.o"},
		{"gitlink content", dadapter.ChangeManifest{GitlinkContent: []string{"vendor/lib"}}, nil, "inside a submodule directory: vendor/lib"},
		{"a nested repository", dadapter.ChangeManifest{Nested: []string{"tools/x"}}, nil, "a nested repository: tools/x"},
		{"a .git entry", dadapter.ChangeManifest{DotGit: []string{"sub/.GIT"}}, nil, "an entry named .git: sub/.GIT"},
		{"a fifo", dadapter.ChangeManifest{Special: []string{"pipe"}}, nil, "a fifo or socket: pipe"},
		{"a refused path", dadapter.ChangeManifest{Refused: []string{"git~1"}}, nil, "a path Git will not add: git~1"},
		{"an absolute link", dadapter.ChangeManifest{Symlinks: []dadapter.Symlink{{Path: "etc", Target: "/etc/passwd"}}}, nil, "points outside the work tree: etc -> /etc/passwd"},
		{"a link above the root", dadapter.ChangeManifest{Symlinks: []dadapter.Symlink{{Path: "a/up", Target: "../../secret"}}}, nil, "a/up -> ../../secret"},
		{"a link into the metadata", dadapter.ChangeManifest{Symlinks: []dadapter.Symlink{{Path: "cfg", Target: "./.Git/config"}}}, nil, "cfg -> ./.Git/config"},
		{"an empty link", dadapter.ChangeManifest{Symlinks: []dadapter.Symlink{{Path: "e", Target: ""}}}, nil, "e -> "},
		{"a cut manifest", dadapter.ChangeManifest{Changes: clean, Cut: true}, nil, "too many to audit"},
		{"many paths are counted", dadapter.ChangeManifest{Ignored: []string{"a", "b", "c", "d", "e"}}, nil, "ignores: a, b, c and 2 more"},
		{"every kind is said", dadapter.ChangeManifest{Ignored: []string{"i"}, Nested: []string{"n"}}, nil, "ignores: i; the agent made a nested repository: n"},
	}
	for _, c := range cases {
		got := auditChanges(c.m, c.err)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: finding %q, want none", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: finding %q, want one saying %q", c.name, got, c.want)
		}
	}
}
