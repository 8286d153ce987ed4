package dtest

import (
	"context"
	"os"
	"path/filepath"

	"github.com/codeboost/codeboost/dadapter"
)

// storageLabelled: "PrepareTaskFilesystems allocates task storage labelled
// with owner and seeds it from src" (dadapter.D); StorageOwner "labels task
// storage: the runner, the attempt and the caller-chosen allocation ID"; "An
// empty Commit means the repository's HEAD, resolved once by the storage
// allocation and reported as its Base" (dadapter.Source); the metadata
// baseline is "recorded at allocation, needed by export"
// (dadapter.TaskFilesystems). The storage is found under its runner and
// attempt labels, and never under another runner's.
func storageLabelled(s *suite) {
	owner, other := s.impl.Owner(), s.impl.OtherOwner()
	src := s.impl.Source(s.t)
	for _, c := range []struct {
		name   string
		commit string
	}{{"commit-named", src.Commit}, {"head-resolved", ""}} {
		s.run(c.name, func(s *suite) {
			o := dadapter.StorageOwner{RunnerOwner: owner, AttemptID: NewID(), AllocationID: NewID()}
			fs, err := s.prepare(o, dadapter.Source{Repository: src.Repository, Commit: c.commit})
			if err != nil {
				s.t.Fatalf("PrepareTaskFilesystems: %v", err)
			}
			if got := fs.Owner(); got != o {
				s.t.Errorf("Owner() = %+v, want the owner it was allocated for, %+v", got, o)
			}
			if got := fs.Base(); got != src.Commit {
				s.t.Errorf("Base() = %q, want %q", got, src.Commit)
			}
			if fs.MetadataBaseline() == "" {
				s.t.Errorf("no metadata baseline recorded at allocation")
			}
			if len(of(s.objects(owner), RoleStorage, o.AttemptID)) == 0 {
				s.t.Errorf("no storage object labelled with runner %s and attempt %s", owner, o.AttemptID)
			}
			if found := of(s.objects(other), RoleStorage, o.AttemptID); len(found) > 0 {
				s.t.Errorf("storage of runner %s found under runner %s:\n\t%s", owner, other, join(found))
			}
			s.remove(fs)
		})
	}
}

// allocationRefusesBadOwner: prepareTaskFilesystems "takes an owner
// (runnerOwner, attemptId, and a caller-chosen allocationId, a lowercase
// UUID v4)", the runner owner token being "exactly 32 lowercase
// hexadecimal characters … refused before it is used as a label or in any
// path" ("Token in every request", "Runner owner token"). A refused owner
// gets an error and nothing is made.
func allocationRefusesBadOwner(s *suite) {
	owner := s.impl.Owner()
	src := s.impl.Source(s.t)
	for _, c := range []struct {
		name  string
		owner dadapter.StorageOwner
	}{
		{"owner-token-too-short", dadapter.StorageOwner{RunnerOwner: owner[:31], AttemptID: NewID(), AllocationID: NewID()}},
		{"allocation-id-not-a-uuid", dadapter.StorageOwner{RunnerOwner: owner, AttemptID: NewID(), AllocationID: "allocation-1"}},
	} {
		s.run(c.name, func(s *suite) {
			fs, err := s.prepare(c.owner, src)
			if err == nil {
				s.t.Errorf("PrepareTaskFilesystems accepted %+v", c.owner)
				s.remove(fs)
			}
			if left := of(s.objects(owner), RoleStorage, c.owner.AttemptID); len(left) > 0 {
				s.t.Errorf("a refused allocation left:\n\t%s", join(left))
			}
		})
	}
}

// allocationIDNamesOneAllocation: "Each allocation ID names one
// allocation: before creating anything, D refuses an ID held by another
// allocation in the process or still carried by any Docker object (so a
// reuse after a restart is caught)" ("Token in every request").
func allocationIDNamesOneAllocation(s *suite) {
	owner := s.impl.Owner()
	a := s.prepared(owner)
	reuse := func(s *suite, when string) {
		s.t.Helper()
		o := dadapter.StorageOwner{RunnerOwner: owner, AttemptID: NewID(), AllocationID: a.alloc}
		fs, err := s.prepare(o, a.src)
		if err == nil {
			s.t.Errorf("%s: PrepareTaskFilesystems accepted allocation ID %s for a second attempt", when, a.alloc)
			s.remove(fs)
		}
		if left := of(s.objects(owner), RoleStorage, o.AttemptID); len(left) > 0 {
			s.t.Errorf("%s: the refused allocation left:\n\t%s", when, join(left))
		}
	}
	s.run("held-by-this-process", func(s *suite) { reuse(s, "while this process holds it") })
	s.run("carried-after-a-restart", func(s *suite) {
		s.impl.Crash()
		s.impl.Restart()
		reuse(s, "after a restart, with its storage still there")
		s.remove(s.storageOf(s.mustRecover(owner), a.id))
	})
}

// abortedAllocation: "Cancelling ctx aborts it; done is called only after
// everything it started has stopped, and an aborted allocation removes what
// it made" (dadapter.D.PrepareTaskFilesystems).
func abortedAllocation(s *suite) {
	owner := s.impl.Owner()
	o := dadapter.StorageOwner{RunnerOwner: owner, AttemptID: NewID(), AllocationID: NewID()}
	fs, err := s.prepareCtx(cancelled(), o, s.impl.Source(s.t))
	if err == nil {
		s.t.Errorf("an allocation whose context was cancelled first succeeded")
		s.remove(fs)
	}
	if left := of(s.objects(owner), RoleStorage, o.AttemptID); len(left) > 0 {
		s.t.Errorf("an aborted allocation left:\n\t%s", join(left))
	}
}

// taskClone: "CreateTaskClone clones src.Commit from the runner-owned
// repository into a fresh directory under parent. Cancelling ctx stops its
// process group …; done is called only after every member has exited, and
// an aborted clone removes its partial directory" (dadapter.D); a process
// group is "reported in the same turn as the spawn" (dadapter.ProcessGroup),
// so never after done.
func taskClone(s *suite) {
	owner, src := s.impl.Owner(), s.impl.Source(s.t)
	s.run("clone", func(s *suite) {
		parent := s.impl.AttemptDir(s.t, owner, NewID())
		c, late, err := s.cloneIn(context.Background(), parent, src)
		if err != nil {
			s.t.Fatalf("CreateTaskClone: %v", err)
		}
		if c.Head != src.Commit {
			s.t.Errorf("clone head %q, want %q", c.Head, src.Commit)
		}
		if filepath.Dir(c.Dir) != parent {
			s.t.Errorf("clone in %q, want a fresh directory under %q", c.Dir, parent)
		}
		if late {
			s.t.Errorf("a process group was reported after done")
		}
	})
	s.run("aborted", func(s *suite) {
		parent := s.impl.AttemptDir(s.t, owner, NewID())
		if _, _, err := s.cloneIn(cancelled(), parent, src); err == nil {
			s.t.Errorf("a clone whose context was cancelled first succeeded")
		}
		if entries, err := os.ReadDir(parent); err != nil || len(entries) > 0 {
			s.t.Errorf("an aborted clone left %v under its parent (%v)", entries, err)
		}
	})
}
