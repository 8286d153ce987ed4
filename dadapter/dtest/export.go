package dtest

import (
	"bytes"
	"context"
	"slices"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// partialOutput: "Partial output": exportTaskDiff "returns { diff,
// truncated }: at most maxBytes … of raw diff bytes", and the bound "cuts
// the output inside the container"; ExportTaskDiff "exports at most
// maxBytes of partial output" (dadapter.D). The notice lines the export
// writes (files it will not diff) are part of the diff, so they count
// inside the bound; truncation itself is reported by Truncated, not by
// bytes. A cut diff is the first maxBytes of the whole one. Then
// CommitTaskChanges "takes a completed writable attempt's work out of task
// storage as a bundle", whose Leaves are "the paths of every leaf entry …
// of Commit's tree, sorted" (dadapter.Bundle): the seed's files and the
// file the edit agent made, whole (the tree is far below MaxTreeLeaves).
func partialOutput(s *suite) {
	a := s.prepared(s.impl.Owner())
	if r := s.await(s.start(a, s.input(a, "edit"))); r.StopReason != words.StopNone || r.ExitCode != 0 {
		s.t.Fatalf("the edit agent: stop reason %q, exit %d; want none, 0", r.StopReason, r.ExitCode)
	}
	ctx := context.Background()
	full, err := s.export(ctx, a.fs, 1<<20)
	if err != nil {
		s.t.Fatalf("ExportTaskDiff: %v", err)
	}
	if len(full.Diff) == 0 || full.Truncated {
		s.t.Fatalf("export after the edit agent: %d bytes, truncated %v; want the agent's changes, whole", len(full.Diff), full.Truncated)
	}
	if exact, err := s.export(ctx, a.fs, len(full.Diff)); err != nil {
		s.t.Errorf("ExportTaskDiff bounded at its own size: %v", err)
	} else if exact.Truncated || !bytes.Equal(exact.Diff, full.Diff) {
		s.t.Errorf("bounded at its own size (%d): %d bytes, truncated %v; want the whole diff, not truncated", len(full.Diff), len(exact.Diff), exact.Truncated)
	}
	for _, max := range []int{len(full.Diff) - 1, 16} {
		cut, err := s.export(ctx, a.fs, max)
		switch {
		case err != nil:
			s.t.Errorf("ExportTaskDiff(%d): %v", max, err)
		case !cut.Truncated:
			s.t.Errorf("a %d-byte diff bounded at %d: not reported truncated", len(full.Diff), max)
		case len(cut.Diff) > max:
			s.t.Errorf("bounded at %d: %d bytes", max, len(cut.Diff))
		case !bytes.HasPrefix(full.Diff, cut.Diff):
			s.t.Errorf("bounded at %d: %q is not the start of the whole diff", max, cut.Diff)
		}
	}
	b, err := s.commit(a.fs)
	if err != nil {
		s.t.Errorf("CommitTaskChanges: %v", err)
	} else if b.Commit == "" || b.Commit == a.fs.Base() {
		s.t.Errorf("bundle commit %q: want a new commit over base %q", b.Commit, a.fs.Base())
	} else {
		s.wantLeaves(b, ".gitignore", "README.md", "new.txt")
	}
	s.remove(a.fs)
}

// wantLeaves requires b's Leaves to be whole, sorted and to hold every
// path of want. Other paths are the harness's business: a seed may hold
// more files than Source promises.
func (s *suite) wantLeaves(b dadapter.Bundle, want ...string) {
	s.t.Helper()
	switch {
	case b.LeavesCut:
		s.t.Errorf("bundle leaves reported cut (%d listed): want the whole tree", len(b.Leaves))
	case !slices.IsSorted(b.Leaves):
		s.t.Errorf("bundle leaves %q: not sorted", b.Leaves)
	}
	for _, p := range want {
		if !slices.Contains(b.Leaves, p) {
			s.t.Errorf("bundle leaves %q: %s is missing", b.Leaves, p)
		}
	}
}

// exportAborted: ExportTaskDiff's "ctx carries the 60-second deadline"
// (dadapter.D); "On abort or at its deadline it stops the client and
// removes the export container before it settles" ("Partial output and
// interrupted rebases"). An export whose context is done fails and leaves
// no helper behind.
func exportAborted(s *suite) {
	owner := s.impl.Owner()
	a := s.prepared(owner)
	if _, err := s.export(cancelled(), a.fs, 1<<20); err == nil {
		s.t.Errorf("an export whose context was cancelled first succeeded")
	}
	if left := of(s.objects(owner), RoleHelper, a.id); len(left) > 0 {
		s.t.Errorf("an aborted export left:\n\t%s", join(left))
	}
	s.remove(a.fs)
}

// removal: "RemoveTaskFilesystems removes task storage" (dadapter.D): after
// it, nothing of the attempt is labelled for the runner, and the storage
// can no longer be exported or committed ("The task filesystem is never
// reused").
func removal(s *suite) {
	owner := s.impl.Owner()
	a := s.prepared(owner)
	if len(of(s.objects(owner), RoleStorage, a.id)) == 0 {
		s.t.Fatalf("no storage object for attempt %s before the removal", a.id)
	}
	s.remove(a.fs)
	if left := s.objects(owner); len(left) > 0 {
		s.t.Errorf("left after RemoveTaskFilesystems:\n\t%s", join(left))
	}
	if _, err := s.export(context.Background(), a.fs, 1<<20); err == nil {
		s.t.Errorf("ExportTaskDiff of removed storage succeeded")
	}
	if _, err := s.commit(a.fs); err == nil {
		s.t.Errorf("CommitTaskChanges of removed storage succeeded")
	}
}

// commitReleased: ReleaseTaskCommit "drops the attempt's ref in the
// runner-owned repository: F calls it after the terminal write and the
// storage's removal … Dropping a ref that is not there succeeds. It is
// never cancelled" (dadapter.D). Its done is called once, like every
// callback (suite.finish).
func commitReleased(s *suite) {
	a := s.prepared(s.impl.Owner())
	if r := s.await(s.start(a, s.input(a, "edit"))); r.ExitCode != 0 {
		s.t.Fatalf("the edit agent exited %d", r.ExitCode)
	}
	if _, err := s.commit(a.fs); err != nil {
		s.t.Fatalf("CommitTaskChanges: %v", err)
	}
	s.remove(a.fs)
	if err := s.release(a.fs); err != nil {
		s.t.Errorf("ReleaseTaskCommit after the storage's removal: %v", err)
	}
	if err := s.release(a.fs); err != nil {
		s.t.Errorf("ReleaseTaskCommit of a ref already dropped: %v", err)
	}
}
