package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/codeboost/codeboost/strictjson"
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

func newRequest(w http.ResponseWriter, r *http.Request, stopping func() bool) *request {
	ctx, cancel := context.WithCancel(r.Context())
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	b := &body{rc: r.Body, declared: r.ContentLength > 0 || len(r.TransferEncoding) > 0, conn: conn}
	r = r.WithContext(ctx)
	r.Body = b
	req := &request{r: r, cancel: cancel, body: b}
	req.w = &replyWriter{ResponseWriter: w, body: b, stopping: stopping}
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
// it. Once shutdown began (step 1) every reply says it, so that no
// connection outlives its last reply.
type replyWriter struct {
	http.ResponseWriter
	body     *body
	stopping func() bool
	status   int
}

func (w *replyWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if w.body.unread() || w.stopping() {
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

// readBody reads the whole body, at most limit bytes, and reads no more
// than limit+1 of a body that has no declared length: past that it stops
// with errTooLarge, and the body's rest is never read. Reading the rest to
// its end (so that a client still sending is not reset before it reads the
// 413) would let one request declaring 100 GB keep the server reading for
// the whole request timeout (issue 19); the refusal closes the connection
// instead, which the contract accepts for a refusal sent before its body
// ends ("A refusal that closes the connection can still reset a client
// sending a large body before it reads the reply"). http.MaxBytesReader
// tells net/http the limit was hit, so it closes the connection gently (it
// stops writing, then waits briefly before the close) instead of reading
// on to find the next request.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(unwrap(w), r.Body, limit))
	if _, over := errors.AsType[*http.MaxBytesError](err); over {
		return nil, errTooLarge
	}
	return b, err
}

// unwrap is the writer net/http made, under the server's own wrappers: the
// one http.MaxBytesReader can tell that the limit was hit.
func unwrap(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// decode reads a JSON body of at most limit bytes into v, strictly
// (strictjson: keys match exactly, once each, none unknown, one value).
// It writes the error reply itself and reports whether v was filled.
//
// A body over its limit is 413 with Connection: close, and nothing more of
// it is read: a declared length over the limit is refused before any byte
// is read, and a body without one is cut once it passes the limit. The
// connection's read deadline is then moved to now, so that net/http's own
// close of the body (which would read up to 256 KiB more, looking for the
// next request) reads nothing either.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	rc := http.NewResponseController(w)
	if r.ContentLength > limit {
		tooLarge(w, rc)
		return false
	}
	// A body must arrive within the request timeout, so that a client that
	// stops sending does not hold a request open outside shutdown either.
	// It is a socket deadline, so it is set on the OS's clock, not the
	// injected one; a request served in-process has no socket, and
	// ErrNotSupported leaves it without one. The server has no ReadTimeout
	// of its own: it would also cut the live-output streams.
	_ = rc.SetReadDeadline(time.Now().Add(RequestTimeout))
	raw, err := readBody(w, r, limit)
	switch {
	case errors.Is(err, errTooLarge):
		tooLarge(w, rc)
		return false
	case err != nil:
		// The body could not be read: the client went away, or step 3
		// destroyed the request. Nobody reads this reply.
		writeError(w, http.StatusBadRequest, codeBadInput, "the request body could not be read")
		return false
	}
	_ = rc.SetReadDeadline(time.Time{})
	if err := strictjson.Unmarshal(raw, v); err != nil {
		writeError(w, http.StatusBadRequest, codeBadInput, "the request body is not valid JSON for this action: "+err.Error())
		return false
	}
	return true
}

// tooLarge answers 413 to a body left unread (replyWriter adds Connection:
// close) and stops every later read of the connection.
func tooLarge(w http.ResponseWriter, rc *http.ResponseController) {
	writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, "the request body is over its limit")
	_ = rc.SetReadDeadline(time.Now())
}
