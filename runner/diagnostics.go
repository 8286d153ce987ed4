package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
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
			c.goWork(func() {
				if ref, err = save(data); err == nil {
					c.fp.Hook("runner/before-save-answer")
				}
			}, func() {
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

// DiagnosticsDir is where this runner saves partial output
// (<diagnosticsDir or root>/<owner>/diagnostics), for the diff view.
func (c *Coordinator) DiagnosticsDir() string { return c.diagnosticsDir() }
