package web

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandlerLeavesCallersRequest: the handler reads the caller's body
// through its own tracking wrapper on a copy of the request, and leaves the
// caller's *http.Request as it was. net/http's Handler rule is "Except for
// reading the body, handlers should not modify the provided Request", and
// net/http's server type-checks that request's Body after the handler
// (its expect-continue and discard decisions).
//
// Sweep survivor (seed 20261203): web/request.go:newRequest:swap-steps:55aac949.
func TestHandlerLeavesCallersRequest(t *testing.T) {
	f := newFixture(t, 1)
	body := io.NopCloser(strings.NewReader(`{"task":"demo","action":"start","actionId":"` + f.actionID() + `"}`))
	req := httptest.NewRequest("POST", "/api/runner", nil)
	req.Body, req.ContentLength = body, 1
	ctx := req.Context()
	f.srv.Handler().ServeHTTP(httptest.NewRecorder(), req)
	if req.Body != body {
		t.Errorf("the caller's request Body was replaced by %T", req.Body)
	}
	if req.Context() != ctx {
		t.Errorf("the caller's request context was replaced")
	}
}
