package dtest

import (
	"context"
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// The contract sentence every inspect case checks a part of (publication
// step 2): "For a writable attempt, the audit reads D's change manifest
// (#66): F … after settled calls inspectTaskChanges with [the snapshot] and
// the storage's metadataBaseline, which F recorded at allocation. Any
// agent commit, metadata change, change to a declared link's target,
// nested gitlink content, new file that base's own ignore rules ignore, or
// an inspection that refuses, sends the task to needs human with no tests
// and no commit." The audit is the runner's; D owes it an exact manifest:
// "Changes is what a commit of the work tree would hold; every other list
// names something the commit would leave out or that git does not show"
// (dadapter.ChangeManifest).

// inspectListsTheAgentsChanges: after the "edit" agent settles, the
// manifest lists exactly its work, README.md modified and new.txt added,
// and nothing in the lists the audit refuses; the inspection "reads and
// never changes the storage" (dadapter.D), so a second one is the same.
func inspectListsTheAgentsChanges(s *suite) {
	a := s.settledAgent("edit")
	edited := dadapter.ChangeManifest{Changes: []dadapter.Change{
		{Path: "README.md", Kind: dadapter.ChangeModified},
		{Path: "new.txt", Kind: dadapter.ChangeAdded},
	}}
	s.wantManifest(a, edited)
	s.wantManifest(a, edited)
	s.remove(a.fs)
}

// inspectIgnored: "new file that base's own ignore rules ignore": the
// "write-ignored" agent's file, which Source's .gitignore ignores, is
// listed as ignored and is not a change (a commit would leave it out).
func inspectIgnored(s *suite) {
	a := s.settledAgent("write-ignored")
	s.wantManifest(a, dadapter.ChangeManifest{Ignored: []string{"fakeagent.log"}})
	s.remove(a.fs)
}

// inspectNested: a nested repository the "nest-repo" agent made is listed
// as one (its .git too, an entry named .git below the root), and nothing
// in it is a change: git shows none of it, and a commit would leave it out.
func inspectNested(s *suite) {
	a := s.settledAgent("nest-repo")
	s.wantManifest(a, dadapter.ChangeManifest{Nested: []string{"vendor/x"}, DotGit: []string{"vendor/x/.git"}})
	s.remove(a.fs)
}

// inspectRemovedRefused: "an inspection that refuses": storage that was
// removed cannot be inspected, and D says so with an error, never with a
// manifest (an empty one would read as an agent that changed nothing).
func inspectRemovedRefused(s *suite) {
	a := s.prepared(s.impl.Owner())
	s.remove(a.fs)
	if m, err := s.inspect(context.Background(), a.fs); err == nil {
		s.t.Errorf("InspectTaskChanges of removed storage answered %s, want an error", manifestString(m))
	}
}

// settledAgent runs the fake agent in mode on a fresh attempt and waits
// until it has settled, having exited 0 on its own.
func (s *suite) settledAgent(mode string) *attempt {
	s.t.Helper()
	a := s.prepared(s.impl.Owner())
	if r := s.await(s.start(a, s.input(a, mode))); r.StopReason != words.StopNone || r.ExitCode != 0 {
		s.t.Fatalf("the %s agent: stop reason %q, exit %d (%s); want none, 0", mode, r.StopReason, r.ExitCode, r.Diagnostic)
	}
	return a
}

// wantManifest inspects a's storage and requires the manifest to be want,
// with no inspection container of the attempt left when done is called.
func (s *suite) wantManifest(a *attempt, want dadapter.ChangeManifest) {
	s.t.Helper()
	m, err := s.inspect(context.Background(), a.fs)
	if err != nil {
		s.t.Fatalf("InspectTaskChanges: %v", err)
	}
	if got, want := manifestString(m), manifestString(want); got != want {
		s.t.Errorf("manifest:\n\t%s\nwant\n\t%s", got, want)
	}
	if left := of(s.objects(a.owner), RoleHelper, a.id); len(left) > 0 {
		s.t.Errorf("the inspection left:\n\t%s", join(left))
	}
}

// manifestString shows every field of m, an empty list and a nil one
// alike: how an implementation spells "none" is not the contract's.
func manifestString(m dadapter.ChangeManifest) string {
	return fmt.Sprintf("metadata changed %v, changes %q, symlinks %q, ignored %q, nested %q, gitlink content %q, .git %q, special %q, refused %q, cut %v",
		m.MetadataChanged, m.Changes, m.Symlinks, m.Ignored, m.Nested, m.GitlinkContent, m.DotGit, m.Special, m.Refused, m.Cut)
}

func (s *suite) inspect(ctx context.Context, fs dadapter.TaskFilesystems) (dadapter.ChangeManifest, error) {
	s.t.Helper()
	done := track[result[dadapter.ChangeManifest]](s, "InspectTaskChanges(%s) done", fs.Owner().AttemptID)
	s.d().InspectTaskChanges(ctx, fs, func(m dadapter.ChangeManifest, err error) {
		done.add(result[dadapter.ChangeManifest]{m, err})
	})
	r := wait(s, done)
	return r.v, r.err
}
