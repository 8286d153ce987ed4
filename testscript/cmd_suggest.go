package testscript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/suggest"
	"github.com/codeboost/codeboost/web"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for the suggestion coordinator (package suggest) and its
// simulated provider (sim.Planner): a planning request started straight
// at the coordinator as a user action (over HTTP: http-plan), its
// provider settled by hand, the user's cancel and apply, another
// process's writes, startup's leftovers and step 6's close. Request IDs
// get script names like attempts (as=NAME).

func init() {
	register(
		Command{Name: "suggest", Kind: Action, Keys: []Key{K("mode", modeValue), K("as", Name), K("action", ActionName), K("rev", Int), K("snap", Name)}, Usage: "[!] suggest TASK [mode=draft] [as=NAME] [action=NAME] [rev=N] [snap=S] [own-items]",
			Summary: "starts a planning request (a suggestion, or a draft) as a user action, expecting the plan's present revision and snapshot unless rev or snap is given, and names it; with own-items the caller passes its own copy of the plan's items, which caller-mutates changes afterwards",
			Example: "suggest T1 as=R1 action=s1", Run: cmdSuggest},
		Command{Name: "plan-settle", Kind: Action, Keys: []Key{K("reply", Text), K("err", Text), K("err-repeat", Int)}, Usage: "plan-settle NAME reply=JSON|err=TEXT [err-repeat=N]",
			Summary: "the simulated planning provider's invocation of request NAME settles, with the agent's reply or with an error; the coordinator's settlement runs",
			Example: "plan-settle R1 'reply=[{\"item\":0,\"title\":\"Add tests\",\"instructions\":\"\",\"kind\":\"add\"}]'", Run: cmdPlanSettle},
		Command{Name: "plan-request", Kind: Assertion, Keys: []Key{K("state", Text), K("reason", Text), K("cause", Text), K("mode", modeValue), K("revision", Int), K("snapshot", Name), K("reply", Text), K("reason~", Regexp), K("bounded", Bool)}, Usage: "plan-request NAME [state=S] [reason=TEXT] [cause=TEXT] [mode=M] [revision=N] [snapshot=S] [reply=JSON|none] [reason~=REGEXP] [bounded=true|false]",
			Summary: "asserts a planning request's durable row (plan_requests); bounded is whether its reason is valid UTF-8 of at most the Store's diagnostic bound",
			Example: "plan-request R1 state=cancelled 'reason=Cancelled by the user'", Run: cmdPlanRequest},
		Command{Name: "plan-cancelled", Kind: Assertion, Usage: "plan-cancelled NAME REASONS|none",
			Summary: "asserts the reasons the provider's handle of request NAME was cancelled with, comma-separated, in order",
			Example: "plan-cancelled R1 cancelled", Run: cmdPlanCancels},
		Command{Name: "plan-input", Kind: Assertion, Keys: []Key{K("items", Int), K("item", Int), K("title", Text), K("spec~", Regexp), K("revision", Int), K("next", Int), K("issue~", Regexp)}, Usage: "plan-input NAME [items=N] [item=N] [title=T] [spec~=REGEXP] [revision=N] [next=N] [issue~=REGEXP]",
			Summary: "asserts what the provider was given for request NAME: its item count, one item's title and spec, the bound and the next revision",
			Example: "plan-input R1 items=2 item=1 title=one", Run: cmdPlanInput},
		Command{Name: "caller-mutates", Kind: Action, Usage: "caller-mutates NAME",
			Summary: "the caller of `suggest … own-items` changes the items it passed for request NAME in place: every title and every spec byte",
			Example: "caller-mutates R1", Run: cmdCallerMutates},
		Command{Name: "suggest-cancel", Kind: Action, Keys: []Key{K("mode", modeValue), K("action", ActionName)}, Usage: "[!] suggest-cancel NAME [mode=suggestion|draft] [action=NAME]",
			Summary: "the user's cancel of request NAME as a user action (the route of mode, default the request's): pending with a handle here, the handle's cancel; otherwise the Store's cancel",
			Example: "suggest-cancel R1 action=c1", Run: cmdSuggestCancel},
		Command{Name: "suggest-apply", Kind: Action, Keys: []Key{K("mode", modeValue), K("rev", Int), K("action", ActionName)}, Usage: "[!] suggest-apply NAME [mode=suggestion|draft] [rev=N] [action=NAME]",
			Summary: "applies request NAME as the runner's review action (Store.applySuggestion / applyDraft), expecting the revision it is bound to unless rev is given; prints the saved response",
			Example: "suggest-apply R1 action=p1", Run: cmdSuggestApply},
		Command{Name: "plan-external", Kind: Action, Keys: []Key{K("complete", Text)}, Usage: "plan-external NAME complete=JSON|cancel",
			Summary: "another process, a second Store over the same database file, completes request NAME with a reply or cancels it",
			Example: "plan-external R1 cancel", Run: cmdPlanExternal},
		Command{Name: "suggest-closed", Kind: Assertion, Usage: "[!] suggest-closed",
			Summary: "asserts whether the process's shutdown has passed step 6's suggestion close(): admission closing, every invocation aborted and every provider settled (or the shutdown grace passed)",
			Example: "suggest-closed", Run: cmdSuggestClosed},
		Command{Name: "http-plan", Kind: Action, Keys: []Key{K("mode", modeValue), K("as", Name), K("action", ActionName), K("rev", Int), K("snap", Name), K("id", Text), K("status", Int)}, Usage: "http-plan TASK start|get|cancel|apply|list [NAME] [mode=draft] [as=NAME] [action=NAME|raw:ID] [rev=N] [snap=S] [id=RAW] [status=CODE]",
			Summary: "the Planning API: POST /api/plan/suggestions (or drafts) with the present revision and snapshot unless given, GET, POST …/cancel, POST …/apply of request NAME (id= sends a raw path ID), or GET /api/plan/requests; prints the HTTP status and the reply, and asserts status (default 200)",
			Example: "http-plan T1 apply R1 action=p1 status=409", Run: cmdHTTPPlan},
	)
}

// planState is the scenario's planning state: what `suggest … own-items`
// callers hold.
type planState struct {
	callerItems map[string][]store.PlanItem // request name → the caller's own slice
}

// planning is the server's Planning for the world's running process; nil
// (no planning routes) when it has none.
func planning(w *sim.World) web.Planning {
	if w.Suggest == nil {
		return nil
	}
	return w.Suggest
}

func (s *scenario) suggestCoordinator(ts *gts.TestScript) *suggest.Coordinator {
	w := s.world(ts)
	if w.Suggest == nil {
		ts.Fatalf("no running process: the suggestion coordinator went with the crash")
	}
	return w.Suggest
}

// modeValue is a planning request's mode.
var modeValue = Enum(store.ModeSuggestion, store.ModeDraft)

func modeArg(ts *gts.TestScript, a argSet, def string) string {
	m, ok := a.lookup("mode")
	if !ok {
		return def
	}
	if m != store.ModeSuggestion && m != store.ModeDraft {
		ts.Fatalf("mode=%s: suggestion or draft", m)
	}
	return m
}

func cmdSuggest(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	own := slicesContains(a.pos, "own-items")
	if own {
		a.pos = a.pos[:len(a.pos)-1]
	}
	if len(a.pos) != 1 {
		ts.Fatalf("usage: suggest TASK [mode=draft] [as=NAME] [action=NAME] [rev=N] [snap=S] [own-items]")
	}
	key := s.planKey(ts, a.pos[0])
	p := s.plan(ts, key)
	req := suggest.StartRequest{PlanKey: key, Mode: modeArg(ts, a, store.ModeSuggestion), ExpectedRevision: p.Revision, ExpectedSnapshot: p.SnapshotID}
	if n, ok := a.num("rev"); ok {
		req.ExpectedRevision = n
	}
	if v, ok := a.lookup("snap"); ok {
		req.ExpectedSnapshot = v
	}
	if own {
		if err := w.Store.View(func(tx *store.Tx) (err error) { req.Items, err = tx.PlanItems(key, p.Revision); return err }); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	name := a.str("as")
	if name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	resp, err := s.suggestCoordinator(ts).StartAction(context.Background(), s.action(a), req)
	w.Loop.Drain()
	if name != "" && resp.AttemptID == "" {
		w.NameNext("") // nothing was admitted: the name stays free
	}
	if own && name != "" && resp.AttemptID != "" {
		if s.plans.callerItems == nil {
			s.plans.callerItems = map[string][]store.PlanItem{}
		}
		s.plans.callerItems[name] = req.Items
	}
	s.printPlanResponse(ts, resp)
	s.expect(ts, neg, "suggest", err)
}

func (s *scenario) planRequest(ts *gts.TestScript, name string) store.PlanRequest {
	id := s.attempt(ts, name)
	var r store.PlanRequest
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { r, err = tx.PlanRequest(id); return err }); err != nil {
		s.fatal(ts, "plan-request %s: %v", name, err)
	}
	return r
}

func cmdPlanSettle(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plan-settle NAME reply=JSON|err=TEXT")
	}
	reply, hasReply := a.lookup("reply")
	errText, hasErr := a.lookup("err")
	if hasReply == hasErr {
		ts.Fatalf("plan-settle: give reply= or err=")
	}
	if w.Planner == nil {
		ts.Fatalf("plan-settle: no running process")
	}
	var body []byte
	if hasReply {
		body = []byte(reply)
	}
	if n, ok := a.num("err-repeat"); ok {
		errText = strings.Repeat(errText, n)
	}
	if err := w.Planner.Settle(s.attempt(ts, a.pos[0]), body, errText); err != nil {
		s.fatal(ts, "plan-settle: %v", err)
	}
	w.Loop.Drain()
}

func cmdPlanRequest(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plan-request NAME [state=S] [reason=TEXT] [cause=TEXT] [mode=M] [revision=N] [snapshot=S] [reply=JSON|none]")
	}
	r := s.planRequest(ts, a.pos[0])
	reply := "none"
	if r.Reply != nil {
		var buf bytes.Buffer
		if json.Compact(&buf, r.Reply) == nil {
			reply = buf.String()
		} else {
			reply = string(r.Reply)
		}
	}
	fmt.Fprintf(ts.Stdout(), "plan request %s: %s %s at revision %d on %s; reason=%q cause=%q\n", a.pos[0], r.Mode, r.State, r.Revision,
		r.SnapshotID, r.Reason, r.Cause)
	want := a.given()
	if v, ok := a.lookup("reply"); ok && v != "none" {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(v)) == nil {
			want["reply"] = buf.String()
		}
	}
	s.compare(ts, "plan request "+a.pos[0], want, map[string]string{"state": r.State, "reason": r.Reason, "cause": r.Cause,
		"mode": r.Mode, "revision": strconv.Itoa(r.Revision), "snapshot": r.SnapshotID, "reply": reply,
		"bounded": strconv.FormatBool(len(r.Reason) <= store.MaxDiagnostic && utf8.ValidString(r.Reason))})
}

func (s *scenario) invocation(ts *gts.TestScript, name string) *sim.PlanInvocation {
	w := s.world(ts)
	if w.Planner == nil {
		ts.Fatalf("no running process")
	}
	inv, ok := w.Planner.Invocation(s.attempt(ts, name))
	if !ok {
		s.fatal(ts, "no planning invocation of %s started in this process", name)
	}
	return inv
}

func cmdPlanCancels(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: plan-cancelled NAME REASONS|none")
	}
	inv := s.invocation(ts, a.pos[0])
	if got := noneOr(strings.Join(inv.Cancels, ",")); got != a.pos[1] {
		s.fatal(ts, "planning invocation %s was cancelled with %s, want %s", a.pos[0], got, a.pos[1])
	}
}

func cmdPlanInput(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plan-input NAME [items=N] [item=N] [title=T] [spec~=REGEXP] [revision=N] [next=N] [issue~=REGEXP]")
	}
	in := s.invocation(ts, a.pos[0]).Input
	got := map[string]string{"items": strconv.Itoa(len(in.Items)), "revision": strconv.Itoa(in.Revision), "next": strconv.Itoa(in.NextRevision),
		"issue": in.Issue}
	want := map[string]string{}
	for k, v := range a.given() {
		if k != "item" {
			want[k] = v
		}
	}
	if n, ok := a.num("item"); ok {
		for _, it := range in.Items {
			if it.Item == n {
				got["title"], got["spec"] = it.Title, string(it.Spec)
			}
		}
		if _, ok := got["title"]; !ok {
			s.fatal(ts, "the provider was given no item %d", n)
		}
	}
	s.compare(ts, "plan input "+a.pos[0], want, got)
}

func cmdCallerMutates(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: caller-mutates NAME")
	}
	items, ok := s.plans.callerItems[a.pos[0]]
	if !ok {
		ts.Fatalf("request %s was not started with own-items", a.pos[0])
	}
	for i := range items {
		items[i].Title = "MUTATED BY THE CALLER"
		for j := range items[i].Spec {
			items[i].Spec[j] = 'X'
		}
	}
}

func cmdSuggestCancel(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: suggest-cancel NAME [mode=suggestion|draft] [action=NAME]")
	}
	r := s.planRequest(ts, a.pos[0])
	resp, err := s.suggestCoordinator(ts).CancelAction(context.Background(), r.PlanKey, s.action(a), modeArg(ts, a, r.Mode), r.ID)
	s.world(ts).Loop.Drain()
	s.printPlanResponse(ts, resp)
	s.expect(ts, neg, "suggest-cancel", err)
}

func cmdSuggestApply(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: suggest-apply NAME [mode=suggestion|draft] [rev=N] [action=NAME]")
	}
	r := s.planRequest(ts, a.pos[0])
	rev := r.Revision
	if n, ok := a.num("rev"); ok {
		rev = n
	}
	mode := modeArg(ts, a, r.Mode)
	resp, err := w.Runner.ReviewAction(context.Background(), suggest.ApplyAction(r.PlanKey, s.action(a), mode, r.ID, rev),
		func(tx *store.Tx) (store.Response, error) { return suggest.Apply(tx, r.PlanKey, mode, r.ID, rev) })
	w.Loop.Drain()
	s.printPlanResponse(ts, resp)
	s.expect(ts, neg, "suggest-apply", err)
}

func cmdPlanExternal(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) < 1 || len(a.pos) > 2 {
		ts.Fatalf("usage: plan-external NAME complete=JSON|cancel")
	}
	r := s.planRequest(ts, a.pos[0])
	other, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: ids.NewSeeded(0x07e7)})
	if err != nil {
		ts.Fatalf("plan-external: open a second Store: %v", err)
	}
	defer other.Close()
	reply, complete := a.lookup("complete")
	switch {
	case complete:
		err = other.Update(func(tx *store.Tx) error { return tx.CompletePlanRequest(r.ID, r.Revision, r.SnapshotID, []byte(reply)) })
	case len(a.pos) == 2 && a.pos[1] == "cancel":
		err = other.Update(func(tx *store.Tx) error { _, err := tx.CancelPlanRequest(r.ID); return err })
	default:
		ts.Fatalf("usage: plan-external NAME complete=JSON|cancel")
	}
	if err != nil {
		s.fatal(ts, "plan-external: %v", err)
	}
	w.Trace("other process: " + map[bool]string{true: "completed ", false: "cancelled "}[complete] + r.ID)
}

func cmdSuggestClosed(ts *gts.TestScript, neg bool, a argSet) {
	get(ts).assertShutdownPassed(ts, neg, "6 suggestions", "the suggestion coordinator's close has resolved")
}

func cmdHTTPPlan(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) < 2 || len(a.pos) > 3 {
		ts.Fatalf("usage: http-plan TASK start|get|cancel|apply|list [NAME] [k=v...]")
	}
	task, verb := strings.ToLower(a.pos[0]), a.pos[1]
	key := s.planKey(ts, a.pos[0])
	mode := modeArg(ts, a, store.ModeSuggestion)
	var id string
	if len(a.pos) == 3 {
		id = s.attempt(ts, a.pos[2])
		if _, given := a.lookup("mode"); !given {
			mode = s.planRequest(ts, a.pos[2]).Mode
		}
	}
	if v, ok := a.lookup("id"); ok {
		id = v
	}
	base := "/api/plan/suggestions"
	if mode == store.ModeDraft {
		base = "/api/plan/drafts"
	}
	var method, path string
	var body any
	switch verb {
	case "start":
		p := s.plan(ts, key)
		b := web.PlanStart{Task: task, ActionID: s.httpAction(a), ExpectedRevision: p.Revision, ExpectedSnapshot: p.SnapshotID}
		if n, ok := a.num("rev"); ok {
			b.ExpectedRevision = n
		}
		if v, ok := a.lookup("snap"); ok {
			b.ExpectedSnapshot = v
		}
		method, path, body = "POST", base, b
		if name := a.str("as"); name != "" {
			if err := w.NameNext(name); err != nil {
				ts.Fatalf("%v", err)
			}
		}
	case "get":
		method, path = "GET", base+"/"+id
	case "cancel":
		method, path, body = "POST", base+"/"+id+"/cancel", web.PlanRequestAction{Task: task, ActionID: s.httpAction(a)}
	case "apply":
		rev := 0
		if len(a.pos) == 3 {
			rev = s.planRequest(ts, a.pos[2]).Revision
		}
		if n, ok := a.num("rev"); ok {
			rev = n
		}
		method, path, body = "POST", base+"/"+id+"/apply", web.PlanRequestAction{Task: task, ActionID: s.httpAction(a), ExpectedRevision: rev}
	case "list":
		method, path = "GET", "/api/plan/requests?task="+task
	default:
		ts.Fatalf("http-plan: verb %q is start, get, cancel, apply or list", verb)
	}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	rec := s.do(ts, method, path, raw)
	w.Loop.Drain()
	if verb == "start" && a.str("as") != "" && rec.Code != 200 {
		w.NameNext("")
	}
	s.checkStatus(ts, a, rec)
	s.printPlanReply(ts, rec.Body.Bytes())
}

// printPlanResponse prints a planning action's response, with request IDs
// as the script's names.
func (s *scenario) printPlanResponse(ts *gts.TestScript, r store.Response) {
	r.Message = s.names(r.Message)
	printResponse(ts, s, r)
	if r.Code != "" {
		fmt.Fprintf(ts.Stdout(), "code: %s\n", r.Code)
	}
}

// printPlanReply prints a Planning API reply with request IDs as the
// script's names.
func (s *scenario) printPlanReply(ts *gts.TestScript, body []byte) {
	out := ts.Stdout()
	var e struct {
		Error *struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		fmt.Fprintf(out, "error: %s: %s\n", e.Error.Code, e.Error.Message)
		return
	}
	row := func(r web.PlanRequestRow) {
		fmt.Fprintf(out, "request %s: %s %s at revision %d", s.w.Name(r.ID), r.Mode, r.State, r.Revision)
		if r.Reason != "" {
			fmt.Fprintf(out, " reason=%q", r.Reason)
		}
		if r.Cause != "" {
			fmt.Fprintf(out, " cause=%q", r.Cause)
		}
		fmt.Fprintln(out)
	}
	var list web.PlanRequestsReply
	if json.Unmarshal(body, &list) == nil && list.Requests != nil {
		fmt.Fprintf(out, "revision: %d\n", list.Revision)
		for _, r := range list.Requests {
			row(r)
		}
		return
	}
	var r web.PlanActionReply
	if json.Unmarshal(body, &r) == nil && r.Outcome != "" {
		fmt.Fprintf(out, "outcome: %s\n", r.Outcome)
		if r.Code != "" {
			fmt.Fprintf(out, "code: %s\n", r.Code)
		}
		if r.Message != "" {
			fmt.Fprintf(out, "message: %s\n", s.names(r.Message))
		}
		if r.Replayed {
			fmt.Fprintln(out, "replayed")
		}
		fmt.Fprintf(out, "revision: %d\n", r.Revision)
		if r.Request != nil {
			row(*r.Request)
		}
		return
	}
	var one web.PlanRequestRow
	if json.Unmarshal(body, &one) == nil && one.ID != "" {
		row(one)
		return
	}
	fmt.Fprintf(out, "body: %.200s\n", strings.TrimSpace(string(body)))
}
