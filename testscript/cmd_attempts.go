package testscript

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/web"
	"github.com/codeboost/codeboost/words"
	gts "github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

// Attempts through the coordinator: admission, the user's cancel, retry
// and run-again, publication's transaction run by hand (a result that
// arrives late, after its job ended), and the assertions on an attempt's
// row, a task's row, the runner's status read, the slots and the user
// actions recorded.

func init() {
	register(
		Command{Name: "cancel", Kind: Action, Keys: actionKeys, Usage: "[!] cancel ATTEMPT [action=NAME] [sv=N]",
			Summary: "the user's cancel attempt, as a user action; prints the response's outcome and message",
			Example: "cancel A action=c1", Run: cmdCancel},
		Command{Name: "cancel-task", Kind: Action, Keys: actionKeys, Usage: "[!] cancel-task TASK [action=NAME] [sv=N]",
			Summary: "the user's cancel task, as a user action (\"Stopping, then cancelling\" while an attempt is active)",
			Example: "cancel-task T1", Run: cmdCancelTask},
		Command{Name: "retry", Kind: Action, Keys: admittingKeys, Usage: "[!] retry ATTEMPT [as=NAME] [action=NAME] [sv=N]",
			Summary: "the user's retry of a failed or cancelled attempt, as a user action",
			Example: "retry A as=B", Run: cmdRetry},
		Command{Name: "run-again", Kind: Action, Keys: admittingKeys, Usage: "[!] run-again ATTEMPT [as=NAME] [action=NAME] [sv=N]",
			Summary: "\"Run again on the current code\" for a stale attempt, as a user action",
			Example: "run-again A as=B", Run: cmdRunAgain},
		Command{Name: "attempt", Kind: Assertion, Keys: []Key{K("state", Text), K("first", Text), K("cause", Text), K("stop", Text), K("exit", IntOrNone), K("diag", Text), K("diag~", Regexp), K("ref", Enum("present", "absent")), K("finding", Text), K("unreleased", Text), K("allocation", SetOr), K("baseline", SetOr), K("kind", Text), K("item", IntOrNone), K("deadline", Duration)}, Usage: "attempt ATTEMPT [state=S] [first=R|none] [cause=TEXT] [stop=R|none] [exit=N|none] [diag=TEXT] [diag~=REGEXP] [ref=present|absent] [finding=TEXT|none] [unreleased=N|none] [allocation=set|unset] [baseline=set|unset] [kind=K] [item=N|none] [deadline=D]",
			Summary: "asserts fields of the attempt's durable row (deadline: how long after the world's start, as the trace counts time; unreleased: how many resources the saved list names); a mismatch prints a diff",
			Example: "attempt A state=cancelled first=cancelled", Run: cmdAttempt},
		Command{Name: "task", Kind: Assertion, Keys: []Key{K("status", Text), K("sv", Int), K("gen", Int), K("cancel", SetOr), K("requeue", Bool), K("budget", SetOr), K("current", OrNone(Name)), K("attempts", Int), K("history", Int), K("owed", Text)}, Usage: "task TASK [status=S] [sv=N] [gen=N] [cancel=set|unset] [requeue=true|false] [budget=set|unset] [current=ATTEMPT|none] [attempts=N] [history=N] [owed=TEXT|none]",
			Summary: "asserts fields of the task's durable row",
			Example: "task T1 status='needs human' cancel=unset", Run: cmdTask},
		Command{Name: "status", Kind: Assertion, Keys: []Key{K("http", Int), K("retryable", Bool), K("runagain", Bool), K("stop", Text), K("saved", OrNone(Bool)), K("unresolved", Text), K("label", Text), K("available", Bool), K("run", Bool), K("startable", Bool), K("resumable", Bool), K("cancellable", Bool), K("cancel-task", Bool), K("merge", Bool), K("approve-continuation", Bool), K("guidance", Bool), K("completed", OrNone(Ints)), K("next", IntOrNone), K("checkpoint", IntOrNone), K("scope", Text), K("continuation", Enum("none", "approved", "stale")), K("sv", Int), K("rv", Int)},
			Usage:   "[!] status TASK [http=CODE] [retryable=B] [runagain=B] [stop=R|none] [saved=B] [unresolved=CAUSE|none] [label=TEXT] [available=B] [run=B] [startable=B] [resumable=B] [cancellable=B] [cancel-task=B] [merge=B] [approve-continuation=B] [guidance=B] [completed=1,2|none] [next=N|none] [checkpoint=ITEM|none] [scope=P,Q] [continuation=none|approved|stale] [sv=N] [rv=N]",
			Summary: "asserts the runner's status read (GET /api/runner's in-memory facts: retryable, stopRequested, unresolved, the label, a plan run in progress, startable and resumable; the offers of Cancel task, Merge, Approve continuation and guidance, each the Store's check of its action; the plan run's completed items and next item; the newest scope checkpoint's item, scope paths and continuation approval); with ! the read must fail, its error on stderr. With http=CODE it reads GET /api/runner as the screen does instead, asserts the HTTP status CODE, prints the fields the screen acts on (stateVersion, reviewVersion, the booleans, stopRequested, unresolved, the label) and one line per attempt with its label, and compares the keys given with the reply's (cancellable, sv and rv only there; run, completed, next, checkpoint, scope and continuation only without http=)",
			Example: "status T1 stop=cancelled saved=false label='Stopping (not saved yet)'", Run: cmdStatus},
		Command{Name: "slots", Kind: Assertion, Usage: "slots N",
			Summary: "asserts how many runner slots are held (reserved, running, or under a marker)",
			Example: "slots 0", Run: cmdSlots},
		Command{Name: "user-actions", Kind: Assertion, Usage: "user-actions TASK N",
			Summary: "asserts the task has N user_actions rows (applied and refused actions both count; a 400, 503 or storage error records none)",
			Example: "user-actions T1 0", Run: cmdActions},
		Command{Name: "publish", Kind: Action, Keys: []Key{K("output", Text), K("exit", Int)}, Usage: "[!] publish ATTEMPT [output=JSON] [exit=N]",
			Summary: "runs publication's transaction (step 3, Store.Publish) for the attempt now, as a result that arrives late, after its job ended; prints the state written, or the refusal's code and message",
			Example: "! publish A output='{\"late\":true}'", Run: cmdPublish},
		Command{Name: "admit", Kind: Action, Keys: admitKeys, Usage: "[!] admit TASK KIND as=NAME [item=N] [sv=N]",
			Summary: "admits one attempt through the coordinator (in-memory checks, slot, Store transaction); sv defaults to the task's present state version",
			Example: "admit T1 review as=A", Run: cmdAdmit},
	)
}

// actionKeys are a user action's: its action ID and expected state version.
var actionKeys = []Key{K("action", ActionName), K("sv", Int)}

// admittingKeys are a user action's that may admit an attempt, which gets
// the as= name.
var admittingKeys = []Key{K("as", Name), K("action", ActionName), K("sv", Int)}

func (s *scenario) actionRequest(ts *gts.TestScript, a argSet, attemptName string) runner.ActionRequest {
	id := s.attempt(ts, attemptName)
	at, err := s.world(ts).Store.Attempt(id)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return runner.ActionRequest{PlanKey: at.PlanKey, AttemptID: id, ExpectedStateVersion: s.stateVersion(ts, at.PlanKey, a),
		ActionID: s.action(a)}
}

func cmdCancel(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: cancel ATTEMPT [k=v...]")
	}
	resp, err := s.world(ts).Runner.CancelAttempt(context.Background(), s.actionRequest(ts, a, a.pos[0]))
	printResponse(ts, s, resp)
	s.expect(ts, neg, "cancel", err)
}

func cmdCancelTask(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: cancel-task TASK [k=v...]")
	}
	key := s.planKey(ts, a.pos[0])
	r := runner.ActionRequest{PlanKey: key, ExpectedStateVersion: s.stateVersion(ts, key, a), ActionID: s.action(a)}
	resp, err := s.world(ts).Runner.CancelTask(context.Background(), r)
	printResponse(ts, s, resp)
	s.expect(ts, neg, "cancel-task", err)
}

func cmdRetry(ts *gts.TestScript, neg bool, a argSet) { again(ts, neg, a, "retry") }

func cmdRunAgain(ts *gts.TestScript, neg bool, a argSet) { again(ts, neg, a, "run-again") }

func again(ts *gts.TestScript, neg bool, a argSet, what string) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: %s ATTEMPT [as=NAME] [k=v...]", what)
	}
	f := w.Runner.Retry
	if what == "run-again" {
		f = w.Runner.RunAgain
	}
	s.admitting(ts, neg, a, what, f, s.actionRequest(ts, a, a.pos[0]))
}

// admitting runs a user action that may admit an attempt: the attempt gets
// the as= name, and the response is printed and checked.
func (s *scenario) admitting(ts *gts.TestScript, neg bool, a argSet, what string, act func(context.Context, runner.ActionRequest) (store.Response, error), r runner.ActionRequest) {
	if name := a.str("as"); name != "" {
		if err := s.world(ts).NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := act(context.Background(), r)
	printResponse(ts, s, resp)
	s.expect(ts, neg, what, err)
}

func cmdAttempt(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: attempt ATTEMPT k=v...")
	}
	at, err := s.world(ts).Store.Attempt(s.attempt(ts, a.pos[0]))
	if err != nil {
		s.fatal(ts, "%v", err)
	}
	exit := "none"
	if at.ExitCode != nil {
		exit = strconv.Itoa(*at.ExitCode)
	}
	ref := "absent"
	if at.DiagnosticRef != "" {
		ref = "present"
	}
	got := map[string]string{"state": string(at.State), "first": noneOr(at.FirstReason), "cause": at.StaleCause, "stop": noneOr(at.StopReason),
		"exit": exit, "diag": at.Diagnostic, "ref": ref, "finding": noneOr(at.SafetyFinding), "kind": at.Kind,
		"allocation": setStr(at.AllocationID != ""), "baseline": setStr(at.MetadataBaseline != ""), "item": "none"}
	if at.Item != nil {
		got["item"] = strconv.Itoa(*at.Item)
	}
	got["unreleased"] = unreleasedCount(at.Unreleased)
	got["deadline"] = at.Deadline.Sub(sim.Epoch).String()
	s.compare(ts, "attempt "+a.pos[0], a.given(), got)
}

// unreleasedCount is how many resources an attempt's saved unreleased list
// names: "none" for no list, the raw text for one that is not a JSON list.
func unreleasedCount(saved string) string {
	if saved == "" {
		return "none"
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(saved), &list); err != nil || list == nil {
		return saved
	}
	return strconv.Itoa(len(list))
}

func cmdTask(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: task TASK k=v...")
	}
	key := s.planKey(ts, a.pos[0])
	w := s.world(ts)
	var t store.Task
	var attempts []store.Attempt
	var history []store.HistoryEntry
	err := w.Store.View(func(tx *store.Tx) (err error) {
		if t, err = tx.Task(key); err != nil {
			return err
		}
		if attempts, err = tx.Attempts(key); err != nil {
			return err
		}
		history, err = tx.History(key)
		return err
	})
	if err != nil {
		s.fatal(ts, "%v", err)
	}
	current := "none"
	if t.CurrentAttemptID != "" {
		current = w.Name(t.CurrentAttemptID)
	}
	got := map[string]string{"status": string(t.Status), "sv": strconv.FormatInt(t.StateVersion, 10),
		"gen": strconv.FormatInt(t.ContextGeneration, 10), "cancel": setStr(t.CancelRequested != ""),
		"requeue": boolStr(t.RequeuePending), "budget": setStr(t.BudgetDeadline != nil), "current": current,
		"attempts": strconv.Itoa(len(attempts)), "history": strconv.Itoa(len(history)),
		"owed": noneOr(t.OwedFinding)}
	s.compare(ts, "task "+a.pos[0], a.given(), got)
}

func cmdStatus(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: status TASK [http=CODE] k=v...")
	}
	want := a.given()
	if _, ok := want["http"]; ok {
		delete(want, "http")
		if neg {
			ts.Fatalf("status with http= does not take !: give the HTTP status the read must answer")
		}
		s.httpStatus(ts, neg, a, want)
		return
	}
	st, err := s.world(ts).Runner.Status(s.planKey(ts, a.pos[0]))
	if neg || err != nil {
		// "! status T1": the read fails, and says why on stderr.
		s.expect(ts, neg, "status", err)
		return
	}
	got := map[string]string{"retryable": boolStr(st.Retryable), "runagain": boolStr(st.RunAgain), "stop": "none",
		"saved": "none", "unresolved": "none", "label": st.Label, "available": boolStr(st.Available), "run": boolStr(st.PlanRun),
		"startable": boolStr(st.Startable), "resumable": boolStr(st.Resumable)}
	offers(got, st.TaskCancellable, st.Mergeable, st.ContinuationApprovable, st.Guidance)
	if st.StopRequested != nil {
		got["stop"], got["saved"] = string(st.StopRequested.Reason), boolStr(st.StopRequested.Saved)
	}
	if st.Unresolved != nil {
		got["unresolved"] = st.Unresolved.Reason
	}
	got["completed"], got["next"], got["checkpoint"], got["scope"], got["continuation"] = "none", "none", "none", "none", "none"
	if items := st.Progress.CompletedItems; len(items) > 0 {
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = strconv.Itoa(it)
		}
		got["completed"] = strings.Join(parts, ",")
	}
	if st.Progress.NextItem != 0 {
		got["next"] = strconv.Itoa(st.Progress.NextItem)
	}
	if cp := st.Progress.Checkpoint; cp != nil {
		got["checkpoint"], got["scope"] = strconv.Itoa(cp.Item), strings.Join(cp.ScopePaths, ",")
		if cp.Approval != nil {
			got["continuation"] = "stale"
			if cp.Approval.Current {
				got["continuation"] = "approved"
			}
		}
	}
	for _, k := range httpOnlyStatus {
		if _, ok := want[k]; ok {
			ts.Fatalf("status: %s= is read over HTTP only: add http=200", k)
		}
	}
	s.compare(ts, "status "+a.pos[0], want, got)
}

// offers puts the task's action offers under the status keys that name
// them.
func offers(got map[string]string, cancelTask, merge, approveContinuation, guidance bool) {
	got["cancel-task"], got["merge"] = boolStr(cancelTask), boolStr(merge)
	got["approve-continuation"], got["guidance"] = boolStr(approveContinuation), boolStr(guidance)
}

// httpOnlyStatus are the status keys only GET /api/runner's reply has.
var httpOnlyStatus = []string{"cancellable", "sv", "rv"}

// httpStatus is status with http=CODE: GET /api/runner for the task, as the
// screen reads it. It prints the fields the screen acts on and one line per
// attempt with its label, and compares the keys given with the reply's.
func (s *scenario) httpStatus(ts *gts.TestScript, neg bool, a argSet, want map[string]string) {
	code, _ := a.num("http")
	task := a.pos[0]
	s.planKey(ts, task)
	rec := s.do(ts, "GET", "/api/runner?task="+strings.ToLower(task), nil)
	fmt.Fprintf(ts.Stdout(), "http %d\n", rec.Code)
	if rec.Code != code {
		s.fatal(ts, "HTTP %d, want %d: %s", rec.Code, code, strings.TrimSpace(rec.Body.String()))
	}
	if rec.Code != 200 {
		s.printReply(ts, rec.Body.Bytes())
		if len(want) > 0 {
			ts.Fatalf("status: a %d has no fields to compare", rec.Code)
		}
		return
	}
	var r web.RunnerReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || len(r.Tasks) != 1 {
		ts.Fatalf("GET /api/runner: %v %.200s", err, rec.Body.Bytes())
	}
	t := r.Tasks[0]
	out := ts.Stdout()
	fmt.Fprintf(out, "stateVersion: %d\nreviewVersion: %d\n", t.StateVersion, t.ReviewVersion)
	fmt.Fprintf(out, "available: %v retryable: %v runAgain: %v startable: %v resumable: %v cancellable: %v\n",
		t.Available, t.Retryable, t.RunAgain, t.Startable, t.Resumable, t.Cancellable)
	got := map[string]string{"sv": strconv.FormatInt(t.StateVersion, 10), "rv": strconv.Itoa(t.ReviewVersion),
		"available": boolStr(t.Available), "retryable": boolStr(t.Retryable), "runagain": boolStr(t.RunAgain),
		"startable": boolStr(t.Startable), "resumable": boolStr(t.Resumable), "cancellable": boolStr(t.Cancellable),
		"stop": "none", "saved": "none", "unresolved": "none", "label": s.names(t.Label)}
	offers(got, t.TaskCancellable, t.Mergeable, t.ContinuationApprovable, t.Guidance)
	fmt.Fprintf(out, "offers: cancel-task=%v merge=%v approve-continuation=%v guidance=%v\n", t.TaskCancellable, t.Mergeable, t.ContinuationApprovable, t.Guidance)
	if t.ContinuationRefusal != "" {
		fmt.Fprintf(out, "continuation refused: %s\n", s.names(t.ContinuationRefusal))
	}
	if t.StopRequested == nil {
		fmt.Fprintln(out, "stopRequested: null")
	} else {
		fmt.Fprintf(out, "stopRequested: %s %s saved=%v\n", s.w.Name(t.StopRequested.AttemptID), t.StopRequested.Reason, t.StopRequested.Saved)
		got["stop"], got["saved"] = string(t.StopRequested.Reason), boolStr(t.StopRequested.Saved)
	}
	if t.Unresolved == nil {
		fmt.Fprintln(out, "unresolved: null")
	} else {
		fmt.Fprintf(out, "unresolved: %s %s\n", s.w.Name(t.Unresolved.AttemptID), t.Unresolved.Reason)
		got["unresolved"] = string(t.Unresolved.Reason)
	}
	fmt.Fprintf(out, "label: %s\n", s.names(t.Label))
	for _, at := range t.Attempts {
		fmt.Fprintf(out, "attempt %s: %s\n", s.w.Name(at.ID), s.names(at.Label))
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			ts.Fatalf("status: %s= is not in GET /api/runner's reply: drop http=", k)
		}
	}
	s.compare(ts, "GET /api/runner "+task, want, got)
}

func cmdSlots(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: slots N")
	}
	s := get(ts)
	if got := strconv.Itoa(s.world(ts).Runner.SlotsUsed()); got != a.pos[0] {
		s.fatal(ts, "slots held: %s, want %s", got, a.pos[0])
	}
}

func cmdActions(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: user-actions TASK N")
	}
	key := s.planKey(ts, a.pos[0])
	var n int
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { n, err = tx.UserActionCount(key); return err }); err != nil {
		ts.Fatalf("%v", err)
	}
	if want := atoi(ts, "N", a.pos[1]); n != want {
		s.fatal(ts, "task %s has %d user actions, want %d", a.pos[0], n, want)
	}
}

func cmdPublish(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: publish ATTEMPT [output=JSON] [exit=N]")
	}
	id := s.attempt(ts, a.pos[0])
	exit := 0
	if n, ok := a.num("exit"); ok {
		exit = n
	}
	output := []byte(or(a.str("output"), `{"ok":true}`))
	var state words.State
	err := s.world(ts).Store.Update(func(tx *store.Tx) (err error) {
		state, err = tx.Publish(id, output, "", exit)
		return err
	})
	if r, ok := store.IsRefusal(err); ok {
		fmt.Fprintf(ts.Stdout(), "outcome: refused\ncode: %s\nmessage: %s\n", r.Code, r.Message)
	} else if err == nil {
		fmt.Fprintf(ts.Stdout(), "outcome: %s\n", state)
	}
	s.expect(ts, neg, "publish", err)
}

// admitKeys are admit's (and each admission of admit-tick's).
var admitKeys = []Key{K("as", Name), K("item", Int), K("sv", Int)}

func cmdAdmit(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: admit TASK KIND as=NAME")
	}
	key := s.planKey(ts, a.pos[0])
	if name := a.str("as"); name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	r := runner.AdmitRequest{PlanKey: key, Kind: a.pos[1], ExpectedStateVersion: s.stateVersion(ts, key, a)}
	if n, ok := a.num("item"); ok {
		r.Item = &n
	}
	_, err := w.Runner.Admit(context.Background(), r)
	s.expect(ts, neg, "admit", err)
}
