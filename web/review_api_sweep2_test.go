package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// oneError decodes body as exactly one JSON error reply: a handler that
// answered an error and then went on would append a second reply.
func oneError(t *testing.T, what string, body []byte) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: the body is not one JSON error reply (%v): %s", what, err, body)
	}
	return e
}

// TestReviewLoadOfAnUnknownTaskIsOne404: GET /api/review for a task the
// configuration does not name answers 404 not-found and nothing else; the
// load does not go on to read or write a task that is not there.
// Sweep survivor (seed 20261203): web/review_api.go:Server.getReview:drop-guard:0ca12934.
func TestReviewLoadOfAnUnknownTaskIsOne404(t *testing.T) {
	f := newFixture(t, 1)
	rec := f.do("GET", "/api/review?task=nope", nil)
	if e := oneError(t, "GET /api/review?task=nope", rec.Body.Bytes()); rec.Code != 404 || e.Error.Code != codeNotFound {
		t.Fatalf("unknown task: %d %s", rec.Code, rec.Body)
	}
}

// TestReviewLoadNeverHidesAFailedRead: the review load is "never a partial
// view": whichever of its statements fails, it answers 500 storage-error,
// and a load whose statements all ran is the whole view (here the plan's
// items and a note, which a swallowed read error would leave out).
// Sweep survivors (seed 20261203): web/review_api.go:Server.getReview:ignore-error:31d5f59c~5
// and web/review_api.go:Server.getReview:ignore-error:31d5f59c~8.
func TestReviewLoadNeverHidesAFailedRead(t *testing.T) {
	f := newFixture(t, 2)
	if err := f.w.Store.Update(func(tx *store.Tx) error {
		_, err := tx.ChangeNote(f.key, f.actionID(), 1, "keep the nil check")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	base := f.do("GET", "/api/review?task=demo", nil)
	if base.Code != 200 || !strings.Contains(base.Body.String(), "keep the nil check") || !strings.Contains(base.Body.String(), "item 2") {
		t.Fatalf("review load: %d %s", base.Code, base.Body)
	}
	reviewLoadIsWholeOr500(t, f, base)
}

// reviewLoadIsWholeOr500 fails each of the review load's first 40
// statements in turn: each load answers 500 storage-error or exactly the
// unfaulted view base, never a partial one.
func reviewLoadIsWholeOr500(t *testing.T, f *fixture, base *httptest.ResponseRecorder) {
	t.Helper()
	for k := 0; k < 40; k++ {
		if err := f.w.FP.Enable("store/statement", fmt.Sprintf("%d*off->1*return", k)); err != nil {
			t.Fatal(err)
		}
		rec := f.do("GET", "/api/review?task=demo", nil)
		f.w.FP.Disable("store/statement")
		if rec.Code == 500 && strings.Contains(rec.Body.String(), codeStorage) {
			continue
		}
		if rec.Code != 200 || rec.Body.String() != base.Body.String() {
			t.Errorf("statement %d failing: %d %s, want 500 %s or the whole view %s", k+1, rec.Code, rec.Body, codeStorage, base.Body)
		}
	}
}

// TestReviewLoadWarnsWhenHeadCannotBeRead: a HEAD that cannot be read
// does not fail the review load, but it is not silent either: the server
// logs the warning that names the task and the error.
// Sweep survivor (seed 20261203): web/review_api.go:Server.getReview:ignore-error:31d5f59c~2.
func TestReviewLoadWarnsWhenHeadCannotBeRead(t *testing.T) {
	f := newFixture(t, 1)
	var logged bytes.Buffer
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock, Tasks: []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}},
		Head: func(Task) (string, error) { return "", errors.New("git: not a repository") },
		Log:  slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	if rec := f.do("GET", "/api/review?task=demo", nil); rec.Code != 200 {
		t.Fatalf("review load: %d %s", rec.Code, rec.Body)
	}
	if s := logged.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "the repository's HEAD could not be read") ||
		!strings.Contains(s, "task=demo") || !strings.Contains(s, "git: not a repository") {
		t.Fatalf("log: %q", s)
	}
}
