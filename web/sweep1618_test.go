package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Tests for the survivors of the seed-1618 sweep in web/.

// TestReplyStatusIsTheFirstWritten: a reply's status is written once; a
// later WriteHeader (a handler's error path after its reply began) changes
// neither the status the metrics count nor the headers, even once
// shutdown began (which adds Connection: close only to replies not yet
// begun).
// Kills the sweep's web/request.go:replyWriter.WriteHeader:drop-guard:6ad596f0.
func TestReplyStatusIsTheFirstWritten(t *testing.T) {
	rec := httptest.NewRecorder()
	stopping := false
	w := &replyWriter{ResponseWriter: rec, body: &body{}, stopping: func() bool { return stopping }}
	w.WriteHeader(http.StatusConflict)
	stopping = true
	w.WriteHeader(http.StatusInternalServerError)
	if w.status != http.StatusConflict || rec.Code != http.StatusConflict {
		t.Errorf("after a second WriteHeader: status %d, sent %d; want the first, %d", w.status, rec.Code, http.StatusConflict)
	}
	if c := rec.Header().Get("Connection"); c != "" {
		t.Errorf("a begun reply got Connection: %q", c)
	}
}

// TestBodyOfExactlyTheLimitIsRead: a body limit is the most a body may
// hold, so a declared length of exactly the limit is read and decoded;
// only one byte more is 413.
// Kills the sweep's web/request.go:decode:boundary:25f04009.
func TestBodyOfExactlyTheLimitIsRead(t *testing.T) {
	const limit = 64
	body := `{"task": "demo"}`
	body += strings.Repeat(" ", limit-len(body))
	for _, c := range []struct {
		body string
		ok   bool
	}{{body, true}, {body + " ", false}} {
		r := httptest.NewRequest("POST", "/api/runner", bytes.NewReader([]byte(c.body)))
		rec := httptest.NewRecorder()
		var v struct {
			Task string `json:"task"`
		}
		ok := decode(rec, r, limit, &v)
		if ok != c.ok || (ok && v.Task != "demo") || (!ok && rec.Code != http.StatusRequestEntityTooLarge) {
			t.Errorf("a body of %d bytes (limit %d): decoded %v (%+v), reply %d", len(c.body), limit, ok, v, rec.Code)
		}
	}
}
