package web

import (
	"strings"
	"testing"
)

// TestPlanRequestReadsSayAStorageError: a planning request read whose Store
// read fails (here the Store is closed) answers 500 storage-error, never
// 200 with an empty request or list, which would read as "nothing here".
// Sweep survivors (seed 5150):
// web/plan_requests_api.go:Server.getPlanRequest:ignore-error:31d5f59c and
// web/plan_requests_api.go:Server.getPlanRequests:ignore-error:31d5f59c.
func TestPlanRequestReadsSayAStorageError(t *testing.T) {
	f := planFixture(t, true)
	f.w.Store.Close()
	for _, path := range []string{"/api/plan/suggestions/00000000-0000-4000-8000-000000000999", "/api/plan/requests?task=demo"} {
		rec := f.do("GET", path, nil)
		if rec.Code != 500 || !strings.Contains(rec.Body.String(), codeStorage) {
			t.Errorf("GET %s with the Store closed: %d %s, want 500 %s", path, rec.Code, rec.Body, codeStorage)
		}
	}
}
