package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// Diagnostics files are kept per database, in
// <DiagnosticsDir>/<owner>/diagnostics: retention reads references only from
// its own Store, so runners of databases sharing a directory never see each
// other's files. Each file is written owner-only through an exclusive
// temporary file and renamed to <attemptId>.diff, so a retry overwrites
// instead of duplicating.

func (c *Coordinator) diagnosticsDir() string {
	return filepath.Join(c.cfg.DiagnosticsDir, c.cfg.Owner, "diagnostics")
}

// exportPartial runs D's bounded export under its own deadline (never cut
// short by a stop) and saves it; done gets the file name or the diagnostic
// of a failed export.
func (c *Coordinator) exportPartial(j *job, done func(ref, exportErr string)) {
	ctx, cancel := context.WithCancel(context.Background())
	finished := false // the first of the deadline and D's answer decides
	answered := false // D's answer came first: the deadline no longer applies, and its save decides
	finish := func(ref, exportErr string) {
		if finished {
			return
		}
		finished = true
		cancel()
		done(ref, exportErr)
	}
	// At the deadline the export is aborted and F goes on at once: shutdown
	// and recovery never wait on an export past its deadline, even when D's
	// export never returns.
	timer := c.afterFunc(c.cfg.ExportTimeout, func() {
		if !finished && !answered {
			c.traceAttempt(j.attemptID, "export failed %s: export deadline passed", j.attemptID)
			finish("", words.PartialExportFailedBecause("export deadline passed"))
		}
	})
	c.traceAttempt(j.attemptID, "export %s", j.attemptID)
	c.deps.D.ExportTaskDiff(ctx, j.storage, c.cfg.ExportMax, func(r dadapter.ExportResult, err error) {
		c.post(func() {
			timer.Stop()
			if finished {
				return // the deadline already decided; a late answer is dropped
			}
			answered = true
			if err != nil {
				c.traceAttempt(j.attemptID, "export failed %s: %v", j.attemptID, err)
				finish("", words.PartialExportFailedBecause(err.Error()))
				return
			}
			data := r.Diff
			if r.Truncated {
				data = append(append([]byte{}, data...), []byte("\ncodeboost: the diff was cut at its byte limit\n")...)
			}
			// D answered in time: what is left is F's own write, which
			// runs off the loop (a write and an fsync take time, and the
			// loop is every coordinator's) and reports back.
			var ref string
			save := c.saveDiagnostic(j.attemptID)
			c.goWork(func() { ref, err = save(data) }, func() {
				if err != nil {
					c.traceAttempt(j.attemptID, "export not saved %s: %v", j.attemptID, err)
					finish("", words.PartialExportFailedBecause(err.Error()))
					return
				}
				c.traceAttempt(j.attemptID, "export saved %s %s", j.attemptID, ref)
				finish(ref, "")
			})
		})
	})
}

// saveDiagnostic returns the write of attemptID's <attemptId>.diff,
// owner-only, through an exclusive temporary file, stamped with the
// injected clock so that retention's "oldest first" is replayable. The
// loop-owned parts (the temporary name's token, the clock) are read when
// it is made, on the loop; the returned func touches only the file system,
// so it may run off the loop.
func (c *Coordinator) saveDiagnostic(attemptID string) func(data []byte) (string, error) {
	dir, token, now := c.diagnosticsDir(), c.deps.IDs.Token(), c.deps.Clock.Now()
	return func(data []byte) (string, error) { return writeDiagnostic(dir, attemptID, token, now, data) }
}

func writeDiagnostic(dir, attemptID, token string, now time.Time, data []byte) (string, error) {
	if !ids.ValidUUID(attemptID) {
		return "", fmt.Errorf("attempt ID %q is not safe as a file name", attemptID)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := attemptID + ".diff"
	tmp := filepath.Join(dir, "."+attemptID+"."+token+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if serr := f.Sync(); werr == nil {
		werr = serr
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chtimes(tmp, now, now)
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, name))
	}
	if werr != nil {
		os.Remove(tmp)
		return "", werr
	}
	return name, nil
}

type diagFile struct {
	name string
	size int64
	mod  int64
}

// retention keeps the diagnostics directory under its cap. Unreferenced
// files go first, oldest first. Then the oldest referenced file: its row's
// diagnostic_ref is cleared and noted in one transaction, and only after that
// commit is the file deleted, so no row ever points at a missing file.
//
// A file of an attempt this coordinator still holds (a job, or a marker)
// is not unreferenced yet: its export is saved before its terminal write
// references it, and another attempt's retention may run in between (two
// exports answered together). Removing it then would leave that row
// pointing at a missing file.
func (c *Coordinator) retention() {
	dir := c.diagnosticsDir()
	entries, err := c.listDiagnostics(dir)
	if err != nil {
		return // the listing may be incomplete: the next retention decides
	}
	c.fp.Hook("runner/before-diag-sizes")
	var files []diagFile
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".diff") {
			continue // never follow a link or touch what is not ours
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, diagFile{e.Name(), info.Size(), info.ModTime().UnixNano()})
		total += info.Size()
	}
	if total <= c.cfg.DiagnosticsCap {
		return
	}
	sort.Slice(files, func(a, b int) bool {
		if files[a].mod != files[b].mod {
			return files[a].mod < files[b].mod
		}
		return files[a].name < files[b].name
	})
	var refs map[string]string
	if err := c.deps.Store.View(func(tx *store.Tx) (err error) { refs, err = tx.DiagnosticRefs(); return err }); err != nil {
		return
	}
	held := c.heldDiagnostics()
	for _, f := range files {
		if total <= c.cfg.DiagnosticsCap {
			return
		}
		if _, ok := refs[f.name]; ok || held[f.name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
			c.trace("retention removed unreferenced %s", f.name)
		}
	}
	for _, f := range files {
		if total <= c.cfg.DiagnosticsCap {
			return
		}
		attemptID, ok := refs[f.name]
		if !ok {
			continue
		}
		path := filepath.Join(dir, f.name)
		c.fp.Hook("runner/before-retention")
		if err := c.deps.Capability.Update(func(tx *store.Tx) error { return tx.ClearDiagnosticRef(attemptID) }); err != nil {
			c.trace("retention could not clear %s: %v", f.name, err)
			return
		}
		c.traceAttempt(attemptID, "retention cleared the reference to %s on %s", f.name, attemptID)
		if err := os.Remove(path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
			c.trace("retention removed referenced %s", f.name)
		}
	}
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

// DiagnosticsDir is where this runner saves partial output
// (<diagnosticsDir or root>/<owner>/diagnostics), for the diff view.
func (c *Coordinator) DiagnosticsDir() string { return c.diagnosticsDir() }

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
