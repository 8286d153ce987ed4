package web

import (
	"errors"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
)

// TestDiagnosticsReaderTakesOnlyAPlainFileName: a saved partial output is
// read by its ref, a plain file name in the diagnostics directory: a path,
// a name of the directory itself or its parent, and an empty ref are
// refused before anything is opened; a missing file is fs.ErrNotExist (the
// diff view's 404 "is gone"); a link, even to a file inside, is not read.
func TestDiagnosticsReaderTakesOnlyAPlainFileName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "partial.log"), []byte("the diff"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("partial.log", filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	read := DiagnosticsReader(dir)
	for _, ref := range []string{"", ".", "..", "../partial.log", "sub/partial.log", "/etc/passwd"} {
		if b, err := read(ref); err == nil || !strings.Contains(err.Error(), "is not a file name") {
			t.Errorf("read(%q) = %q, %v; want it refused as not a file name", ref, b, err)
		}
	}
	if _, err := read("missing.log"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read of a missing file: %v, want fs.ErrNotExist", err)
	}
	if b, err := read("link.log"); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("read of a link: %q, %v; want it refused", b, err)
	}
	if b, err := read("partial.log"); err != nil || string(b) != "the diff" {
		t.Errorf("read of the file: %q, %v", b, err)
	}
}

// TestNewNeedsARunnerAStoreAndAClock: a server without any of the three
// is refused when it is built, not at its first request.
// A task name the API could not carry (CheckTaskName's rule) is refused
// when the server is built, as a name given twice is.
func TestNewNeedsARunnerAStoreAndAClock(t *testing.T) {
	if s, err := New(Options{}); err == nil || err.Error() != "web: Runner, Store and Clock are required" {
		t.Errorf("New with no options: %v, %v", s, err)
	}
	w := newSimWorld(t)
	id := store.Identity{RepositoryID: "repo", TaskID: "t1", PlanID: "plan"}
	for name, tasks := range map[string][]Task{
		"a name with a slash": {{Name: "a/b", Identity: id}},
		"a name given twice":  {{Name: "demo", Identity: id}, {Name: "demo", Identity: id}},
	} {
		if s, err := New(Options{Runner: w.Runner, Store: w.Store, Clock: w.Clock, Tasks: tasks}); err == nil {
			t.Errorf("New with %s: %v", name, s)
		}
	}
}

// TestReplyThatCannotBeEncodedIsAStorageError: a reply JSON cannot encode
// (a NaN) is answered 500 with the storage error's words, never a 200 with
// an empty or broken body.
func TestReplyThatCannotBeEncodedIsAStorageError(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]float64{"cost": math.NaN()})
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"storage-error"`) ||
		rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("reply %d %q (%q)", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
}

// brokenClient is a response the client stops reading: its first writes
// go through (ok of them), every later one fails, as a write to a closed
// connection does.
type brokenClient struct {
	header http.Header
	mu     sync.Mutex
	ok     int
}

func (b *brokenClient) Header() http.Header { return b.header }
func (b *brokenClient) WriteHeader(int)     {}
func (b *brokenClient) Flush()              {}
func (b *brokenClient) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ok == 0 {
		return 0, errors.New("write: broken pipe")
	}
	b.ok--
	return len(p), nil
}

// TestOutputStreamEndsWhenItsClientIsGone: a live output stream whose
// write fails (the client went away without its request ending, as a
// half-closed connection does) ends at that write, at its first event or
// at a later one, instead of holding the request and its hub subscription
// until the attempt ends.
func TestOutputStreamEndsWhenItsClientIsGone(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	waitRunning(w, a)
	w.emit(a, "reading parse.go\n")
	for _, ok := range []int{0, 1} {
		client := &brokenClient{header: http.Header{}, ok: ok}
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.srv.Handler().ServeHTTP(client, httptest.NewRequest("GET", "/api/output?task=parser-fix&attempt="+a, nil))
		}()
		if ok > 0 {
			// Once the stream has written the tail, a new chunk is its
			// next write.
			waitUntil(t, "the stream's first write", func() bool { client.mu.Lock(); defer client.mu.Unlock(); return client.ok == 0 })
			w.emit(a, "$ go test ./...\n")
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream still runs 10 s after a write to its client failed (writes that went through: %d)", ok)
		}
	}
	w.settle(a, dadapter.Settlement{ExitCode: 0, Output: []byte(`{"summary":"done"}`)})
}
