package web

import (
	"encoding/json"
	"fmt"
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
// 1 MiB already.
const maxDiffBytes = 2 << 20

// getDiff is GET /api/diff?task=NAME&attempt=ID: a stopped attempt's
// partial output (its saved diagnostic file), as plain text. The file is
// named only by the attempt's own diagnostic_ref, read from the Store,
// never by the request.
func (s *Server) getDiff(w http.ResponseWriter, r *http.Request) {
	t, a, ok := s.taskAttempt(w, r)
	if !ok {
		return
	}
	b, ok := s.attemptDiff(w, t, a)
	if !ok {
		return
	}
	if len(b) > maxDiffBytes {
		b = b[:maxDiffBytes]
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
}

// attemptDiff is what the diff view shows of an attempt: the commit a
// completed attempt made (from the runner-owned repository, against the
// commit its storage was seeded from), else its saved partial output.
func (s *Server) attemptDiff(w http.ResponseWriter, t Task, a store.Attempt) ([]byte, bool) {
	if commit, err := s.attemptCommit(a); err != nil {
		s.storageError(w, "GET /api/diff", err)
		return nil, false
	} else if commit != "" && s.opt.CommitDiff != nil && a.StorageBase != "" {
		b, err := s.opt.CommitDiff(t, a.StorageBase, commit)
		if err != nil {
			s.log.Warn("diff view: the commit could not be read", "attempt", a.ID, "commit", commit, "err", err)
			writeError(w, http.StatusNotFound, codeNotFound, "the commit "+commit+" of "+a.ID+" could not be read")
			return nil, false
		}
		return b, true
	}
	if a.DiagnosticRef == "" || s.opt.Diagnostics == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "attempt "+a.ID+" has no commit and no saved partial output")
		return nil, false
	}
	b, err := s.opt.Diagnostics(a.DiagnosticRef)
	if err != nil {
		s.log.Warn("diff view: the saved partial output could not be read", "attempt", a.ID, "err", err)
		writeError(w, http.StatusNotFound, codeNotFound, "the saved partial output of "+a.ID+" could not be read")
		return nil, false
	}
	return b, true
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
