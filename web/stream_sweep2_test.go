package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// goneOutput is an Output whose attempt has already left the hub: the
// Store still says running, but Follow finds nothing to follow.
type goneOutput struct{}

func (goneOutput) Follow(string) ([]byte, <-chan []byte, func(), bool) {
	ch := make(chan []byte)
	close(ch)
	return []byte("stale"), ch, func() {}, false
}

func (goneOutput) Close() {}

// waitRunning waits until the Store says the attempt is running: before
// that its stream is 404 for another reason.
func waitRunning(w *uiWorld, attemptID string) {
	w.t.Helper()
	waitUntil(w.t, "attempt "+attemptID+" running", func() bool {
		at, err := w.store.Attempt(attemptID)
		return err == nil && at.State == "running"
	})
}

// TestOutputStreamHeaders: the live-output stream is sent with
// X-Accel-Buffering: no, so that a proxy in front does not hold the
// chunks back; the header must be set before the status line goes out.
// Sweep survivor (seed 20261203): web/stream.go:Server.getOutput:swap-steps:98a1383d.
func TestOutputStreamHeaders(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	waitRunning(w, a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", w.url+"/api/output?task=parser-fix&attempt="+a, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestOutputStreamOfAnAttemptGoneFromTheHub: when the Store still says
// running but the output hub no longer has the attempt (it settled
// between the two reads), the stream is one 404 not-found and no event.
// Sweep survivor (seed 20261203): web/stream.go:Server.getOutput:drop-guard:0ca12934~2.
func TestOutputStreamOfAnAttemptGoneFromTheHub(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	waitRunning(w, a)
	w.srv.opt.Output = goneOutput{}
	rec := httptest.NewRecorder()
	w.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/output?task=parser-fix&attempt="+a, nil))
	resp, body := rec.Result(), rec.Body.Bytes()
	if e := oneError(t, "an attempt gone from the hub", body); resp.StatusCode != 404 || e.Error.Code != codeNotFound ||
		e.Error.Message != "attempt "+a+" has no live output" {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
}

// TestDiagnosticsReaderWithoutItsDirectory: a diagnostics directory that
// is not there (never created, or removed) makes the read an error, never
// a crash of the request.
// Sweep survivor (seed 20261203): web/stream.go:DiagnosticsReader:ignore-error:31d5f59c.
func TestDiagnosticsReaderWithoutItsDirectory(t *testing.T) {
	read := DiagnosticsReader(filepath.Join(t.TempDir(), "missing"))
	if b, err := read("partial.log"); err == nil {
		t.Fatalf("read from a missing directory: %q, no error", b)
	}
}
