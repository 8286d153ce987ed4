package runner

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/dadapter"
)

// TestAuditSaysEveryFindingInItsOrder: a manifest with a finding of every
// kind gets one reason that says each, in the order auditChanges' comment
// lists them (what the repository ignores and its rules, a submodule's
// content, a nested repository, a .git entry, a fifo or socket, a path Git
// will not add, an escaping link, a cut listing), so the audit's reason is
// the same text for the same tree. Sweep survivor (seed 5150):
// runner/audit.go:auditChanges:swap-steps:942ba448 (two kinds swapped).
func TestAuditSaysEveryFindingInItsOrder(t *testing.T) {
	kinds := []dadapter.ChangeManifest{
		{Ignored: []string{"build/out.o"}},
		{Changes: []dadapter.Change{{Path: "sub/.gitignore", Kind: dadapter.ChangeAdded}}},
		{GitlinkContent: []string{"vendor/lib"}},
		{Nested: []string{"tools/x"}},
		{DotGit: []string{"sub/.GIT"}},
		{Special: []string{"pipe"}},
		{Refused: []string{"git~1"}},
		{Symlinks: []dadapter.Symlink{{Path: "etc", Target: "/etc/passwd"}}},
		{Cut: true},
	}
	var all dadapter.ChangeManifest
	var want []string
	for _, k := range kinds {
		one := auditChanges(k, nil)
		if one == "" || strings.Contains(one, "; ") {
			t.Fatalf("%+v: finding %q, want exactly one", k, one)
		}
		want = append(want, one)
		all.Ignored = append(all.Ignored, k.Ignored...)
		all.Changes = append(all.Changes, k.Changes...)
		all.GitlinkContent = append(all.GitlinkContent, k.GitlinkContent...)
		all.Nested = append(all.Nested, k.Nested...)
		all.DotGit = append(all.DotGit, k.DotGit...)
		all.Special = append(all.Special, k.Special...)
		all.Refused = append(all.Refused, k.Refused...)
		all.Symlinks = append(all.Symlinks, k.Symlinks...)
		all.Cut = all.Cut || k.Cut
	}
	if got := auditChanges(all, nil); got != strings.Join(want, "; ") {
		t.Fatalf("every kind at once:\n got %q\nwant %q", got, strings.Join(want, "; "))
	}
}
