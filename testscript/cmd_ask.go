package testscript

import (
	"context"
	"fmt"
	"strconv"

	"github.com/codeboost/codeboost/ask"
	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for Ask, the question coordinator (package ask): its startup,
// a question asked straight at it (the HTTP route is http-begin POST
// /api/questions), its step-1 stop and step-6 close, and its rows.

func init() {
	register(
		Command{Name: "ask-opened", Kind: Assertion, Usage: "[!] ask-opened",
			Summary: "asserts that Ask's startup, which the process's startup runs after the runner's recovery (the questions an earlier process left failed, Ask's owner's leftovers recovered from D), has ended, and whether questions opened",
			Example: "ask-opened", Run: cmdAskOpened},
		Command{Name: "ask", Kind: Action, Keys: []Key{K("text", Text), K("item", Int), K("as", Name), K("action", ActionName)}, Usage: "[!] ask TASK text=TEXT [item=N] [as=NAME] [action=NAME]",
			Summary: "asks a question as a user action (its note and pending row), and names the question; it then prepares and starts its read-only question attempt",
			Example: "ask T1 'text=why this order?' item=1 as=Q1", Run: cmdAsk},
		Command{Name: "question", Kind: Assertion, Keys: []Key{K("state", Text), K("answer", Text), K("reason", Text), K("retryable", Bool), K("item", IntOrNone)}, Usage: "question NAME state=S [answer=TEXT] [reason=TEXT] [retryable=true|false] [item=N|none]",
			Summary: "asserts a question's durable row",
			Example: "question Q1 state=failed 'reason=Server stopped' retryable=true", Run: cmdQuestion},
		Command{Name: "questions", Kind: Assertion, Usage: "questions TASK N",
			Summary: "asserts the number of the task's questions",
			Example: "questions T1 2", Run: cmdQuestions},
		Command{Name: "ask-closed", Kind: Assertion, Usage: "[!] ask-closed",
			Summary: "asserts whether the process's shutdown has passed step 6's questions.close(): every question in flight aborted, settled, answered through the capability and its storage removed",
			Example: "ask-closed", Run: cmdAskClosed},
	)
}

func cmdAskOpened(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if w.Ask == nil {
		s.fatal(ts, "ask-opened: the process has not started Ask (has its startup reached it?)")
	}
	select {
	case <-w.Ask.Opened():
	default:
		s.fatal(ts, "ask-opened: Ask's recovery has not ended (is a D operation held?)")
	}
	err := w.Ask.OpenErr(context.Background())
	if err == nil {
		fmt.Fprintln(ts.Stdout(), "ask: open")
	}
	s.expect(ts, neg, "ask-opened", err)
}

func cmdAsk(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: ask TASK text=TEXT [item=N] [as=NAME] [action=NAME]")
	}
	r := ask.Request{PlanKey: s.planKey(ts, a.pos[0]), ActionID: s.action(a), Text: a.str("text")}
	if n, ok := a.num("item"); ok {
		r.Item = &n
	}
	if name := a.str("as"); name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := w.Ask.Ask(context.Background(), r)
	if a.str("as") != "" && err != nil {
		w.NameNext("") // nothing was admitted: the name stays free
	}
	printResponse(ts, s, resp)
	s.expect(ts, neg, "ask", err)
}

func (s *scenario) question(ts *gts.TestScript, name string) store.Question {
	w := s.world(ts)
	id, err := w.ID(name)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	var q store.Question
	if err := w.Store.View(func(tx *store.Tx) (err error) {
		q, err = tx.Question(id)
		return err
	}); err != nil {
		ts.Fatalf("question %s: %v", name, err)
	}
	return q
}

func cmdQuestion(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: question NAME state=S [answer=TEXT] [reason=TEXT] [retryable=BOOL] [item=N|none]")
	}
	q := s.question(ts, a.pos[0])
	item := "none"
	if q.Item != nil {
		item = strconv.Itoa(*q.Item)
	}
	got := map[string]string{"state": q.State, "answer": q.Answer, "reason": q.Reason,
		"retryable": strconv.FormatBool(q.Retryable), "item": item}
	fmt.Fprintf(ts.Stdout(), "question %s: state=%s retryable=%v item=%s\n", a.pos[0], q.State, q.Retryable, item)
	for _, k := range []string{"state", "answer", "reason", "retryable", "item"} {
		if want, ok := a.lookup(k); ok && got[k] != want {
			s.fatal(ts, "question %s: %s is %q, want %q", a.pos[0], k, got[k], want)
		}
	}
}

func cmdQuestions(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: questions TASK N")
	}
	var qs []store.Question
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) {
		qs, err = tx.Questions(s.planKey(ts, a.pos[0]))
		return err
	}); err != nil {
		ts.Fatalf("questions: %v", err)
	}
	if want := atoi(ts, "N", a.pos[1]); len(qs) != want {
		s.fatal(ts, "task %s has %d questions, want %d", a.pos[0], len(qs), want)
	}
}

func cmdAskClosed(ts *gts.TestScript, neg bool, a argSet) {
	get(ts).assertShutdownPassed(ts, neg, "6 questions", "Ask's close has resolved")
}
