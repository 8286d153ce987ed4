package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// sseEvents reads a Server-Sent Events stream into "event data" lines,
// sending each as it arrives; the channel closes when the stream does.
func sseEvents(t *testing.T, url string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				out <- event + " " + strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

func next(t *testing.T, events <-chan string, what string) string {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatalf("the stream closed before %s", what)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	return ""
}

// TestOutputStreamFollowsTheAttempt: GET /api/output sends the kept tail,
// then each chunk as D reads it, then "end" when the attempt settles; a
// settled attempt has no stream; a foreign attempt ID is 404.
func TestOutputStreamFollowsTheAttempt(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	w.emit(a, "reading parse.go\n")
	url := w.url + "/api/output?task=parser-fix&attempt=" + a
	events := sseEvents(t, url)
	if e := next(t, events, "the tail"); e != `output "reading parse.go\n"` {
		t.Fatalf("first event %q", e)
	}
	w.emit(a, "$ go test ./...\n")
	if e := next(t, events, "the next chunk"); e != `output "$ go test ./...\n"` {
		t.Fatalf("second event %q", e)
	}
	w.settle(a, dadapter.Settlement{ExitCode: 0, Output: []byte(`{"summary":"done"}`)})
	if e := next(t, events, "the end"); !strings.HasPrefix(e, "end") {
		t.Fatalf("after settlement: %q", e)
	}
	// The settlement's terminal write may land a moment after the end
	// event: wait for the row, so the first 404 is the one for an attempt
	// that is no longer running.
	waitUntil(t, "the attempt's terminal row", func() bool {
		at, err := w.store.Attempt(a)
		return err == nil && words.Terminal(at.State)
	})
	// Each 404 says which thing is not there. Sweep survivors (seed 1618):
	// web/stream.go:Server.getOutput:drop-guard:e7f674b0 and
	// web/stream.go:Server.taskAttempt:drop-guard:0ca12934.
	for _, c := range []struct{ what, url, want string }{
		{"a settled attempt's stream", url, "attempt " + a + " has no live output (it is not running)"},
		{"a foreign attempt's stream", w.url + "/api/output?task=parser-fix&attempt=00000000-0000-4000-8000-000000000000",
			"task parser-fix has no attempt 00000000-0000-4000-8000-000000000000"},
		{"a task that is not configured", w.url + "/api/output?task=nope&attempt=" + a, `no configured task is called "nope"`},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		var e errorBody
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 404 || derr != nil || e.Error.Code != codeNotFound || e.Error.Message != c.want {
			t.Errorf("%s: %d %+v (%v), want 404 %s %q", c.what, resp.StatusCode, e.Error, derr, codeNotFound, c.want)
		}
	}
}

// TestOutputStreamsCloseAtStopping: every live-output stream ends at
// shutdown step 1, so that no stream holds the drain open.
//
// kills: mutant/http-streams-outlive-stopping
func TestOutputStreamsCloseAtStopping(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	w.emit(a, "thinking\n")
	events := sseEvents(t, w.url+"/api/output?task=parser-fix&attempt="+a)
	next(t, events, "the tail")
	waitUntil(t, "the stream to be admitted", func() bool { return w.srv.Active() == 1 })
	w.srv.SetStopping()
	if e := next(t, events, "the end at stopping"); !strings.HasPrefix(e, "end") {
		t.Fatalf("at stopping: %q", e)
	}
	select {
	case <-w.srv.BeginDrain():
	case <-time.After(10 * time.Second):
		t.Fatal("the drain waits on a live-output stream")
	}
}

// TestOutputStreamHEADEndsAtOnce: a HEAD request for a running attempt's
// stream (the mux routes HEAD to GET /api/output) gets the stream's
// headers and no body; the first event's write is refused (a HEAD reply
// has no body), and the stream must end there rather than follow the
// attempt with writes that all fail, holding a request open until the
// attempt settles or shutdown ends it.
func TestOutputStreamHEADEndsAtOnce(t *testing.T) {
	w := newUIWorld(t, worldOptions{tasks: []uiTask{parserFix}})
	w.approveAll("parser-fix")
	a := w.start("parser-fix")
	w.emit(a, "reading parse.go\n")
	resp, err := http.Head(w.url + "/api/output?task=parser-fix&attempt=" + a)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitUntil(t, "the HEAD request to end", func() bool { return w.srv.Active() == 0 })
}
