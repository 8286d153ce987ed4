package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/store"
)

// Questions is what the server needs of Ask (package ask): admission of a
// question as a user action, and the task's questions for the screen.
type Questions interface {
	Ask(ctx context.Context, r ask.Request) (store.Response, error)
	Questions(planKey string) ([]store.Question, error)
}

// maxQuestionBody bounds POST /api/questions: one note's text and its
// JSON, with room for escaping.
const maxQuestionBody = 64 << 10

// QuestionRequest is POST /api/questions's body: the question's text, on
// a plan item of the current revision or (no item) on the whole plan.
type QuestionRequest struct {
	Task     string `json:"task"`
	ActionID string `json:"actionId"`
	Item     *int   `json:"item,omitempty"`
	Text     string `json:"text"`
}

// QuestionRow is one question as the screen shows it.
type QuestionRow struct {
	ID        string    `json:"id"`
	Item      *int      `json:"item"`
	Text      string    `json:"text"`
	State     string    `json:"state"`
	Answer    string    `json:"answer,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Retryable bool      `json:"retryable"`
	AskedAt   time.Time `json:"askedAt"`
}

// QuestionReply is POST /api/questions's answer: the action's outcome and
// the question it saved (a replay returns the same one).
type QuestionReply struct {
	Outcome  string      `json:"outcome"`
	Replayed bool        `json:"replayed,omitempty"`
	Question QuestionRow `json:"question"`
}

// QuestionsReply is GET /api/questions: the task's questions, oldest
// first.
type QuestionsReply struct {
	Questions []QuestionRow `json:"questions"`
}

func questionRow(q store.Question) QuestionRow {
	return QuestionRow{ID: q.ID, Item: q.Item, Text: q.Text, State: q.State, Answer: q.Answer, Reason: q.Reason,
		Retryable: q.Retryable, AskedAt: q.CreatedAt}
}

// postQuestion is POST /api/questions: Ask admits the question as one
// user action (its note and its pending row commit with the action's
// row), then answers it with a read-only question attempt of D. A
// question the server admitted before shutdown reaches Ask after
// admission stopped: it is saved and answered "Server stopped", with 200;
// one that reaches the closed write gate is 503 and saved nothing.
func (s *Server) postQuestion(w http.ResponseWriter, r *http.Request) {
	var a QuestionRequest
	if !decode(w, r, maxQuestionBody, &a) {
		return
	}
	t, ok := s.actionTarget(w, a.Task, a.ActionID)
	if !ok {
		return
	}
	key := t.Identity.Key()
	resp, err := s.opt.Questions.Ask(r.Context(), ask.Request{PlanKey: key, ActionID: a.ActionID, Item: a.Item, Text: a.Text})
	if err != nil || resp.Outcome == "refused" {
		s.reply(w, r, t, ask.ActionKind, resp, err)
		return
	}
	qs, err := s.opt.Questions.Questions(key)
	if err != nil {
		s.storageError(w, "POST /api/questions", err)
		return
	}
	for _, q := range qs {
		if q.ID == resp.AttemptID {
			s.metrics.outcome(resp.Outcome)
			writeJSON(w, http.StatusOK, QuestionReply{Outcome: resp.Outcome, Replayed: resp.Replayed, Question: questionRow(q)})
			return
		}
	}
	s.storageError(w, "POST /api/questions", errMissingQuestion)
}

// getQuestions is GET /api/questions?task=NAME.
func (s *Server) getQuestions(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tasks[r.URL.Query().Get("task")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no configured task is called "+quote(r.URL.Query().Get("task")))
		return
	}
	qs, err := s.opt.Questions.Questions(t.Identity.Key())
	if err != nil {
		s.storageError(w, "GET /api/questions", err)
		return
	}
	out := QuestionsReply{Questions: []QuestionRow{}}
	for _, q := range qs {
		out.Questions = append(out.Questions, questionRow(q))
	}
	writeJSON(w, http.StatusOK, out)
}

var errMissingQuestion = errors.New("the saved question is not in the task's questions")
