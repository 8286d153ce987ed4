package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codeboost/codeboost/store"
)

// Retention keeps the diagnostics directory under its cap ("Safety
// findings and partial output", Retention). Unreferenced files go first,
// oldest first. Then the oldest referenced file: its row's diagnostic_ref
// is cleared and noted in one transaction, and only after that commit is
// the file deleted, so no row ever points at a missing file.
//
// The directory's listing, its sizes and the removals are file I/O, and
// run off the loop (issue 20: the loop every coordinator shares does no
// file I/O); what needs the loop's state, the references and the held
// attempts, is read on the loop, in the turn that decides. One retention
// runs at a time: one asked for while another runs runs after it, on a
// fresh listing. Two at once would each decide on their own listing, and
// the second, whose references were read before the first cleared one,
// would clear that row again (a second note) or, reading afresh, count a
// file the first removed and clear another to make up for it (F-317).
//
// A file of an attempt this coordinator still holds (a job, or a marker)
// is not unreferenced yet: its export is saved before its terminal write
// references it, and another attempt's retention may run in between (two
// exports answered together). Removing it then would leave that row
// pointing at a missing file. The held set is read when the removals are
// decided; an attempt not held then is never held again (a rerun is a new
// attempt, with a file of its own), so the removals that follow, off the
// loop, cannot take a file that a later terminal write references.

type diagFile struct {
	name string
	size int64
	mod  int64
}

// retentionRun is one retention's state, from its listing to its last
// removal.
type retentionRun struct {
	dir   string
	files []diagFile // the listing, oldest first
	total int64      // the listed files' sizes, less what was removed
}

// retention starts a retention, or, while one runs, asks for another after
// it. It returns at once; the work goes on in later turns.
func (c *Coordinator) retention() {
	if c.retaining {
		c.retainAgain = true
		return
	}
	c.retaining = true
	r := &retentionRun{dir: c.diagnosticsDir()}
	var err error
	c.goWork(func() { err = r.list(c) }, func() {
		if err != nil || r.total <= c.cfg.DiagnosticsCap {
			c.retentionDone()
			return
		}
		c.removeUnreferenced(r)
	})
}

// retentionDone ends a retention and starts the one asked for meanwhile.
func (c *Coordinator) retentionDone() {
	c.retaining = false
	if c.retainAgain {
		c.retainAgain = false
		c.retention()
	}
}

// list reads the directory's files and sizes, off the loop. A failed
// listing may be incomplete: the next retention decides.
func (r *retentionRun) list(c *Coordinator) error {
	entries, err := c.listDiagnostics(r.dir)
	if err != nil {
		return err
	}
	c.fp.Hook("runner/before-diag-sizes")
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".diff") {
			continue // never follow a link or touch what is not ours
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		r.files = append(r.files, diagFile{e.Name(), info.Size(), info.ModTime().UnixNano()})
		r.total += info.Size()
	}
	sort.Slice(r.files, func(a, b int) bool {
		if r.files[a].mod != r.files[b].mod {
			return r.files[a].mod < r.files[b].mod
		}
		return r.files[a].name < r.files[b].name
	})
	return nil
}

// removeUnreferenced decides, on the loop, which unreferenced files go
// (oldest first, until the rest fit the cap), removes them off the loop,
// and goes on to the referenced ones (which clears none if the removals
// were enough).
func (c *Coordinator) removeUnreferenced(r *retentionRun) {
	var refs map[string]string
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { refs, err = tx.DiagnosticRefs(); return err }); err != nil {
		// Without the references every file would look unreferenced:
		// nothing is removed, and the next retention decides.
		c.trace("retention could not read the references: %v", err)
		c.retentionDone()
		return
	}
	held := c.heldDiagnostics()
	var gone []diagFile
	projected := r.total
	for _, f := range r.files {
		if projected <= c.cfg.DiagnosticsCap {
			break
		}
		if _, ok := refs[f.name]; ok || held[f.name] {
			continue
		}
		gone = append(gone, f)
		projected -= f.size
	}
	c.removeFiles(r, gone, "unreferenced", func() { c.clearReferenced(r, refs) })
}

// clearReferenced clears the references of the oldest referenced files
// until the rest fit the cap, each in its own transaction, and removes
// those files only after their rows no longer name them. A clear that
// fails ends the retention there: the files whose rows were cleared
// already are still removed, the rest kept.
func (c *Coordinator) clearReferenced(r *retentionRun, refs map[string]string) {
	var cleared []diagFile
	projected := r.total
	for _, f := range r.files {
		if projected <= c.cfg.DiagnosticsCap {
			break
		}
		attemptID, ok := refs[f.name]
		if !ok {
			continue
		}
		c.fp.Hook("runner/before-retention")
		if err := c.deps.Capability.Update(func(tx *store.Tx) error { return tx.ClearDiagnosticRef(attemptID) }); err != nil {
			c.trace("retention could not clear %s: %v", f.name, err)
			break
		}
		c.traceAttempt(attemptID, "retention cleared the reference to %s on %s", f.name, attemptID)
		cleared = append(cleared, f)
		projected -= f.size
	}
	c.removeFiles(r, cleared, "referenced", c.retentionDone)
}

// removeFiles removes files off the loop, then, on the loop, counts and
// traces each one gone (a file gone already counts) and calls then. With
// no file it still takes the hop off the loop and back: one path.
func (c *Coordinator) removeFiles(r *retentionRun, files []diagFile, what string, then func()) {
	removed := make([]bool, len(files))
	c.goWork(func() {
		for i, f := range files {
			err := os.Remove(filepath.Join(r.dir, f.name))
			removed[i] = err == nil || errors.Is(err, fs.ErrNotExist)
		}
	}, func() {
		for i, f := range files {
			if removed[i] {
				r.total -= f.size
				c.trace("retention removed %s %s", what, f.name)
			}
		}
		then()
	})
}

// listDiagnostics is os.ReadDir of the diagnostics directory. Failpoint
// runner/diag-listing stands for a listing that fails after reading its
// entries (an I/O error on the directory's last read): os.ReadDir then
// returns what it read along with the error.
func (c *Coordinator) listDiagnostics(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err == nil && c.fp.Fire("runner/diag-listing") {
		err = errors.New("failpoint runner/diag-listing")
	}
	return entries, err
}

// heldDiagnostics names the diagnostics files of the attempts this
// coordinator still holds, whose terminal write may yet reference them.
func (c *Coordinator) heldDiagnostics() map[string]bool {
	held := make(map[string]bool, len(c.jobs)+len(c.markers))
	for _, j := range c.jobs {
		held[j.attemptID+".diff"] = true
	}
	for _, m := range c.markers {
		held[m.attemptID+".diff"] = true
	}
	return held
}
