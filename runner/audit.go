package runner

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// This file is the runner's own audit of what an agent left in task
// storage: publication step 2's file-scope audit of a writable attempt
// that completed, and "A failed run"'s audit of one that ended badly on
// its own. Both read D's change manifest (inspectTaskChanges) and judge it
// here, so that the rules live in one place whichever D measured.

// auditNames is how many paths of one kind a finding names before it
// counts the rest: the finding is a bounded text on the row.
const auditNames = 3

// auditChanges judges D's change manifest, or the inspection's refusal
// (err): "" when the agent's work may be committed, else the safety
// finding. Each rule is the contract's: "Any agent commit, metadata
// change, … nested gitlink content, new file that base's own ignore rules
// ignore (#87 decision 2), or an inspection that refuses, sends the task
// to needs human with no tests and no commit." The rest are what a commit
// would silently leave out or what would reach past the work tree: a
// nested repository, an entry named .git, a fifo or socket, a path git
// will not add, a link that points outside the repository or into its
// metadata, and a manifest too long to read whole.
func auditChanges(m dadapter.ChangeManifest, err error) string {
	if err != nil {
		return "the inspection of what the agent changed refused: " + err.Error()
	}
	if m.MetadataChanged {
		// Nothing else is listed: git over changed metadata is not trusted.
		return "the agent changed the repository's metadata (.git): a commit, a staged change or rewritten history"
	}
	var found []string
	add := func(what string, paths []string) {
		if len(paths) > 0 {
			found = append(found, what+": "+names(paths))
		}
	}
	add("the agent wrote files the repository ignores", m.Ignored)
	add("the agent changed the repository's ignore rules, so files the base ignores could be committed", ignoreRules(m.Changes))
	add("the agent wrote inside a submodule directory", m.GitlinkContent)
	add("the agent made a nested repository", m.Nested)
	add("the agent made an entry named .git", m.DotGit)
	add("the agent made a fifo or socket", m.Special)
	add("the agent made a path Git will not add", m.Refused)
	var escaping []string
	for _, l := range m.Symlinks {
		if linkEscapes(l) {
			escaping = append(escaping, l.Path+" -> "+l.Target)
		}
	}
	add("the agent made a link that points outside the work tree", escaping)
	if m.Cut {
		found = append(found, fmt.Sprintf("the agent changed more than %d paths of one kind, too many to audit", dadapter.MaxManifestPaths))
	}
	return strings.Join(found, "; ")
}

// ignoreRules lists the changed .gitignore files. D lists new files
// against the work tree's ignore rules, which are the base's own only
// while the agent left every .gitignore alone: one that it edited,
// deleted or added (a nested one can un-ignore with "!") could let a file
// the base ignores reach the commit unseen. So any such change is the
// finding "new file that base's own ignore rules ignore" could not be
// ruled out; a person judges it.
func ignoreRules(changes []dadapter.Change) []string {
	var out []string
	for _, c := range changes {
		if path.Base(c.Path) == ".gitignore" {
			out = append(out, c.Path)
		}
	}
	return out
}

// linkEscapes reports whether a link's target leaves the work tree or
// reaches into the repository's metadata: an absolute target, one that
// climbs above the root, or one through .git. A link inside the tree is
// an ordinary change, which the commit records as a link.
func linkEscapes(l dadapter.Symlink) bool {
	if l.Target == "" || path.IsAbs(l.Target) {
		return true
	}
	p := path.Join(path.Dir(l.Path), l.Target)
	if p == ".." || strings.HasPrefix(p, "../") {
		return true
	}
	first, _, _ := strings.Cut(p, "/")
	return strings.EqualFold(first, ".git")
}

// names lists up to auditNames paths and counts the rest.
func names(paths []string) string {
	if len(paths) <= auditNames {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:auditNames], ", "), len(paths)-auditNames)
}

// auditsFailedRun reports whether a writable attempt that did not publish
// gets "A failed run"'s audit: it ended badly on its own (a non-zero
// exit, a D stop reason, or a result that is not this attempt's) with no
// first reason. "A run a person stopped, that went stale, hit the time
// limit or was shut down is not audited": the first three carry a first
// reason, and the time limit is D's own stop reason.
func (c *Coordinator) auditsFailedRun(j *job, s dadapter.Settlement) bool {
	return j.writable && j.storage != nil && j.h.First == "" &&
		s.StopReason != words.StopTimeout && s.StopReason != words.StopShutdown && s.StopReason != words.StopCancelled
}

// inspect asks D for the change manifest of j's task storage and hands
// the audit's finding ("" for none) and the manifest to then, on the
// loop. The inspection only reads the storage, and publication's guards
// all run after it, so a stop that arrives meanwhile is seen by the
// terminal write.
func (c *Coordinator) inspect(j *job, then func(finding string, m dadapter.ChangeManifest)) {
	c.traceAttempt(j.attemptID, "inspection %s", j.attemptID)
	c.deps.D.InspectTaskChanges(context.Background(), j.storage, func(m dadapter.ChangeManifest, err error) {
		c.post(func() {
			f := auditChanges(m, err)
			if f != "" {
				c.traceAttempt(j.attemptID, "safety finding %s: %s", j.attemptID, f)
			}
			then(f, m)
		})
	})
}
