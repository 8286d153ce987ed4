package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The error codes of replies the Store does not word (its refusals carry
// their own).
const (
	codeShuttingDown = "shutting-down"
	codeBadInput     = "bad-input"
	codeTooLarge     = "too-large"
	codeNotFound     = "not-found"
	codeMethod       = "method-not-allowed"
	codeStorage      = "storage-error"
	// codeBusy: a bounded resource (the diff view's reads) is in use;
	// the answer carries Retry-After.
	codeBusy = "busy"
	// codeGitHubUnavailable: a merge click's GitHub read before admission
	// did not answer; nothing was recorded, so the screen may resend.
	codeGitHubUnavailable = "github-unavailable"
)

// errDestroyed is what a body read returns once step 3 destroyed the
// request.
var errDestroyed = errors.New("web: request destroyed at the drain limit")

// request is one admitted request as the drain sees it: its context,
// which step 3 cancels, and its body, which step 3 destroys while it is
// still being read.
type request struct {
	w      *replyWriter
	r      *http.Request
	cancel context.CancelFunc
	body   *body
}

func newRequest(w http.ResponseWriter, r *http.Request) *request {
	ctx, cancel := context.WithCancel(r.Context())
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	b := &body{rc: r.Body, declared: r.ContentLength > 0 || len(r.TransferEncoding) > 0, conn: conn}
	r = r.WithContext(ctx)
	r.Body = b
	req := &request{r: r, cancel: cancel, body: b}
	req.w = &replyWriter{ResponseWriter: w, body: b}
	return req
}

// fail replies with an error body, outside any route.
func (q *request) fail(status int, code, message string) {
	writeError(q.w, status, code, message)
}

func (q *request) destroyIfReading() { q.body.destroy() }

// body tracks whether a declared request body has been read to its end, so
// that a reply sent before then says Connection: close, and so that step 3
// can destroy a request still reading one.
type body struct {
	rc       io.ReadCloser
	declared bool
	conn     net.Conn // the real connection, when served over one

	mu        sync.Mutex
	done      bool // read to its end (or never declared)
	destroyed bool
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.destroyed {
		b.mu.Unlock()
		return 0, errDestroyed
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.destroyed {
		return n, errDestroyed
	}
	if err == io.EOF {
		b.done = true
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// unread reports whether the request declared a body not yet read to its
// end.
func (b *body) unread() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.declared && !b.done
}

// destroy ends a request still reading its body: its connection closes (a
// blocked read returns), and every later read fails.
func (b *body) destroy() {
	b.mu.Lock()
	if !b.declared || b.done || b.destroyed {
		b.mu.Unlock()
		return
	}
	b.destroyed = true
	conn := b.conn
	b.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	b.rc.Close()
}

// replyWriter adds Connection: close to a reply sent before a declared body
// was read to its end: net/http would otherwise keep the connection busy
// discarding the rest, where shutdown's idle-connection close cannot reach
// it.
type replyWriter struct {
	http.ResponseWriter
	body   *body
	status int
}

func (w *replyWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if w.body.unread() {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *replyWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush lets the live-output stream push each event.
func (w *replyWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *replyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errorBody is every error reply's shape.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var e errorBody
	e.Error.Code, e.Error.Message = code, message
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"storage-error","message":"the reply could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// errTooLarge is readBody's answer to a body over its limit.
var errTooLarge = errors.New("web: body too large")

// readBody reads the whole body, at most limit bytes. A body over the limit
// is read to its end and discarded before the 413 goes out, so that a
// client still sending is not reset before it reads the reply and the
// connection stays usable; a request still sending at the drain limit is
// destroyed like any other.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return nil, err
		}
		return nil, errTooLarge
	}
	return b, nil
}

// decode reads a JSON body of at most limit bytes into v, strictly: an
// unknown field or trailing data is bad input. It writes the error reply
// itself and reports whether v was filled.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	// A body must arrive within the request timeout, so that a client that
	// stops sending does not hold a request open outside shutdown either.
	// It is a socket deadline, so it is set on the OS's clock, not the
	// injected one; a request served in-process has no socket, and
	// ErrNotSupported leaves it without one. The server has no ReadTimeout
	// of its own: it would also cut the live-output streams.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(RequestTimeout))
	defer rc.SetReadDeadline(time.Time{})
	raw, err := readBody(r, limit)
	switch {
	case errors.Is(err, errTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, "the request body is over its limit")
		return false
	case err != nil:
		// The body could not be read: the client went away, or step 3
		// destroyed the request. Nobody reads this reply.
		writeError(w, http.StatusBadRequest, codeBadInput, "the request body could not be read")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, codeBadInput, "the request body is not valid JSON for this action: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, codeBadInput, "the request body holds more than one JSON value")
		return false
	}
	return true
}
