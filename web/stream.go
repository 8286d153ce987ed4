package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// getOutput is GET /api/output?task=NAME&attempt=ID: a running attempt's
// live output as Server-Sent Events. The first event is the kept tail,
// each later one a chunk as D reads it; "end" says the output ended (the
// attempt settled), and the stream closes. Nothing here is kept: the tail
// is bounded by the output hub and dropped when the attempt settles, and
// every stream closes at shutdown step 1 so the drain is not held open.
func (s *Server) getOutput(w http.ResponseWriter, r *http.Request) {
	t, a, ok := s.taskAttempt(w, r)
	if !ok {
		return
	}
	if s.opt.Output == nil || a.State != "running" {
		writeError(w, http.StatusNotFound, codeNotFound, "attempt "+a.ID+" has no live output (it is not running)")
		return
	}
	backlog, updates, stop, ok := s.opt.Output.Follow(a.ID)
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "attempt "+a.ID+" has no live output")
		return
	}
	defer stop()
	_ = t
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// The mux routes HEAD here too. net/http discards a HEAD reply's
		// body without an error, so a stream would follow the attempt
		// writing nothing until it settled: the headers are the answer.
		return
	}
	rc := http.NewResponseController(w)
	send := func(event string, data []byte) bool {
		b, _ := json.Marshal(string(data))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("output", backlog) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case chunk, open := <-updates:
			if !open {
				send("end", nil)
				return
			}
			if !send("output", chunk) {
				return
			}
		}
	}
}

// maxDiffBytes bounds what the diff view sends: the export is at most
// 1 MiB already, and a commit's diff is cut here.
const maxDiffBytes = 2 << 20

// maxDiffReads bounds the diff views read at once. Each runs git on the
// host; past the bound a request is answered 503 at once rather than
// queued, so a burst of views of a large commit costs at most this many
// git processes (issue 19: three at once reached 6.4 GB).
const maxDiffReads = 2

// The diff view's own words.
const (
	diffCutLine     = "\ncodeboost: the diff was cut at 2 MiB\n"
	diffBrokenLine  = "\ncodeboost: the diff could not be read to its end; the server log says why\n"
	diffBusyMessage = "Too many diffs are being read at once; try again in a moment."
)

// getDiff is GET /api/diff?task=NAME&attempt=ID, as plain text: the commit
// a completed attempt made (read from the runner-owned repository against
// the commit its storage was seeded from, streamed as git writes it), else
// its saved partial output (its diagnostic file, named only by the
// attempt's own diagnostic_ref, read from the Store, never by the
// request). Either is cut at maxDiffBytes with a line saying so. 404 means
// no such attempt or nothing saved; a read that fails is a 500.
func (s *Server) getDiff(w http.ResponseWriter, r *http.Request) {
	t, a, ok := s.taskAttempt(w, r)
	if !ok {
		return
	}
	select {
	case s.diffReads <- struct{}{}:
		defer func() { <-s.diffReads }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeBusy, diffBusyMessage)
		return
	}
	commit, err := s.attemptCommit(a)
	if err != nil {
		s.storageError(w, "GET /api/diff", err)
		return
	}
	out := &diffWriter{w: w}
	if commit != "" && s.opt.CommitDiff != nil && a.StorageBase != "" {
		cut, err := s.opt.CommitDiff(r.Context(), out, t, a.StorageBase, commit, maxDiffBytes)
		switch {
		case err != nil && r.Context().Err() != nil:
			// The client went away: nobody reads an answer.
		case err != nil && !out.started:
			s.log.Error("diff view: the commit could not be read", "attempt", a.ID, "commit", commit, "err", err)
			writeError(w, http.StatusInternalServerError, codeStorage,
				"the commit "+commit+" of "+a.ID+" could not be read from the runner-owned repository; the server log says why")
		case err != nil:
			s.log.Error("diff view: the commit's diff broke off", "attempt", a.ID, "commit", commit, "err", err)
			io.WriteString(out, diffBrokenLine)
		case cut:
			io.WriteString(out, diffCutLine)
		default:
			out.start()
		}
		return
	}
	if a.DiagnosticRef == "" || s.opt.Diagnostics == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "attempt "+a.ID+" has no commit and no saved partial output")
		return
	}
	b, err := s.opt.Diagnostics(a.DiagnosticRef)
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, codeNotFound, "the saved partial output of "+a.ID+" is gone")
		return
	}
	if err != nil {
		s.log.Error("diff view: the saved partial output could not be read", "attempt", a.ID, "err", err)
		writeError(w, http.StatusInternalServerError, codeStorage, "the saved partial output of "+a.ID+" could not be read; the server log says why")
		return
	}
	if len(b) > maxDiffBytes {
		b = append(b[:maxDiffBytes:maxDiffBytes], diffCutLine...)
	}
	out.Write(b)
}

// diffWriter answers 200 with the diff view's headers at its first write,
// so that a read that fails before writing anything can still answer an
// error.
type diffWriter struct {
	w       http.ResponseWriter
	started bool
}

func (d *diffWriter) start() {
	if d.started {
		return
	}
	d.started = true
	h := d.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	d.w.WriteHeader(http.StatusOK)
}

func (d *diffWriter) Write(p []byte) (int, error) {
	d.start()
	return d.w.Write(p)
}

// attemptCommit is the commit an attempt's ledger entry records, or "".
func (s *Server) attemptCommit(a store.Attempt) (commit string, err error) {
	err = s.opt.Store.View(func(tx *store.Tx) error {
		entries, err := tx.History(a.PlanKey)
		for _, e := range entries {
			if e.AttemptID == a.ID {
				commit = e.Commit
			}
		}
		return err
	})
	return commit, err
}

// taskAttempt resolves ?task=NAME&attempt=ID to a configured task and one
// of its own attempts; anything else is 400 or 404.
func (s *Server) taskAttempt(w http.ResponseWriter, r *http.Request) (Task, store.Attempt, bool) {
	q := r.URL.Query()
	t, ok := s.tasks[q.Get("task")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(q.Get("task")))
		return Task{}, store.Attempt{}, false
	}
	id := q.Get("attempt")
	if !ids.ValidUUID(id) {
		writeError(w, http.StatusBadRequest, codeBadInput, "attempt is not an attempt ID")
		return Task{}, store.Attempt{}, false
	}
	a, err := s.opt.Store.Attempt(id)
	if err != nil || a.PlanKey != t.Identity.Key() {
		writeError(w, http.StatusNotFound, codeNotFound, "task "+t.Name+" has no attempt "+id)
		return Task{}, store.Attempt{}, false
	}
	return t, a, true
}

// DiagnosticsReader reads saved partial output under dir (the runner's
// <diagnosticsDir>/<owner>/diagnostics): ref must be a plain file name in
// it, never a path, and never a symlink.
func DiagnosticsReader(dir string) func(ref string) ([]byte, error) {
	return func(ref string) ([]byte, error) {
		if ref == "" || ref != filepath.Base(ref) || ref == "." || ref == ".." {
			return nil, fmt.Errorf("diagnostic ref %q is not a file name", ref)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		fi, err := root.Lstat(ref)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("diagnostic %q is not a regular file", ref)
		}
		return root.ReadFile(ref)
	}
}
