package web

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/store"
)

// Tests for the survivors of the seed-60221 sweep in web/.

// questionsReadFails is Ask whose read of the task's questions meets a
// failed Store read (the store/view failpoint, for that one read): the
// question's admission, done by the real Ask, commits first.
type questionsReadFails struct {
	*ask.Coordinator
	fp *failpoints.Set
}

func (q questionsReadFails) Questions(planKey string) ([]store.Question, error) {
	if err := q.fp.Enable("store/view", "1*return"); err != nil {
		return nil, err
	}
	defer q.fp.Disable("store/view")
	return q.Coordinator.Questions(planKey)
}

// TestQuestionReadFailureIsReportedAsItself: a question Ask admitted whose
// reply cannot be built, because the read of the task's questions failed,
// is a storage error (500, never a 200 without the question), and the
// server log names that read's failure: the operator reading the log must
// learn that the Store failed, not that the saved question went missing
// from a list that was never read. The same action sent again is then
// answered from the saved question, as the error reply tells the user to
// do.
// Sweep survivor (seed 60221): web/questions_api.go:Server.postQuestion:ignore-error:31d5f59c.
func TestQuestionReadFailureIsReportedAsItself(t *testing.T) {
	f := newFixture(t, 2)
	var log syncBuffer
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock,
		Tasks:     []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}},
		Questions: questionsReadFails{Coordinator: f.w.Ask, fp: f.w.FP},
		Log:       slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	if err := f.w.Ask.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.w.Loop.Drain()
	<-f.w.Ask.Opened()

	q := QuestionRequest{Task: "demo", ActionID: f.actionID(), Text: "why this order?"}
	rec := f.send("POST", "/api/questions", mustJSON(t, q), false)
	wantOneError(t, "POST /api/questions with a failed questions read", rec, http.StatusInternalServerError, codeStorage)
	logged := log.String()
	if !strings.Contains(logged, "failpoint store/view") || strings.Contains(logged, errMissingQuestion.Error()) {
		t.Errorf("the log does not name the failed read of the questions:\n%s", logged)
	}

	// The question was saved: the same action is answered from it.
	qs, err := f.w.Ask.Questions(f.key)
	if err != nil || len(qs) != 1 {
		t.Fatalf("questions after the admission: %v %+v; want the one asked", err, qs)
	}
	srv, err = New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: f.w.Clock,
		Tasks: []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}}, Questions: f.w.Ask})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	rec = f.send("POST", "/api/questions", mustJSON(t, q), false)
	var reply QuestionReply
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || rec.Code != http.StatusOK || !reply.Replayed || reply.Question.ID != qs[0].ID {
		t.Fatalf("the same action again: %d %s (%v); want 200, replayed, question %s", rec.Code, rec.Body, err, qs[0].ID)
	}
}

// TestReplyBegunByItsBodySaysConnectionClose: a handler that writes its
// body without choosing a status first (the metrics endpoint, promhttp,
// does) still begins its reply through replyWriter's WriteHeader, so the
// rule "a reply sent before a declared body was read to its end says
// Connection: close" holds for it too: otherwise net/http keeps the
// connection busy discarding the unread body, out of reach of shutdown's
// idle-connection close. The status it began with (200) is the one
// recorded for the metrics.
// Sweep survivor (seed 60221): web/request.go:replyWriter.Write:negate:7cd618cb.
func TestReplyBegunByItsBodySaysConnectionClose(t *testing.T) {
	f := newFixture(t, 1)
	rec := f.send("GET", "/metrics", bytes.Repeat([]byte("x"), 1024), false)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "codeboost_") {
		t.Fatalf("GET /metrics with a body: %d %.200s", rec.Code, rec.Body)
	}
	if c := rec.Result().Header.Get("Connection"); c != "close" {
		t.Errorf("GET /metrics left its declared body unread and answered with Connection %q; want close", c)
	}
	rec = f.send("GET", "/metrics", nil, false)
	if c := rec.Result().Header.Get("Connection"); rec.Code != http.StatusOK || c != "" {
		t.Errorf("GET /metrics without a body: %d, Connection %q; want 200 on a connection kept alive", rec.Code, c)
	}

	// Unit level: the first Write begins the reply with 200 through
	// WriteHeader, which records the status and adds the header.
	direct := httptest.NewRecorder()
	w := &replyWriter{ResponseWriter: direct, body: &body{declared: true}, stopping: func() bool { return false }}
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if c := direct.Result().Header.Get("Connection"); w.status != http.StatusOK || c != "close" {
		t.Errorf("after a first Write: recorded status %d, Connection %q; want 200 and close", w.status, c)
	}
}
