package testscript

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/sim"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/web"
	"github.com/google/go-cmp/cmp"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func init() {
	register(
		Command{Name: "attempt", Kind: Assertion, Keys: []Key{K("state", Text), K("first", Text), K("cause", Text), K("stop", Text), K("exit", IntOrNone), K("diag", Text), K("diag~", Regexp), K("ref", Enum("present", "absent")), K("finding", Text), K("unreleased", Text), K("allocation", SetOr), K("baseline", SetOr), K("kind", Text), K("item", IntOrNone), K("deadline", Duration)}, Usage: "attempt ATTEMPT [state=S] [first=R|none] [cause=TEXT] [stop=R|none] [exit=N|none] [diag=TEXT] [diag~=REGEXP] [ref=present|absent] [finding=TEXT|none] [unreleased=N|none] [allocation=set|unset] [baseline=set|unset] [kind=K] [item=N|none] [deadline=D]",
			Summary: "asserts fields of the attempt's durable row (deadline: how long after the world's start, as the trace counts time; unreleased: how many resources the saved list names); a mismatch prints a diff",
			Example: "attempt A state=cancelled first=cancelled", Run: cmdAttempt},
		Command{Name: "task", Kind: Assertion, Keys: []Key{K("status", Text), K("sv", Int), K("gen", Int), K("cancel", SetOr), K("requeue", Bool), K("budget", SetOr), K("current", OrNone(Name)), K("attempts", Int), K("history", Int), K("owed", Text)}, Usage: "task TASK [status=S] [sv=N] [gen=N] [cancel=set|unset] [requeue=true|false] [budget=set|unset] [current=ATTEMPT|none] [attempts=N] [history=N] [owed=TEXT|none]",
			Summary: "asserts fields of the task's durable row",
			Example: "task T1 status='needs human' cancel=unset", Run: cmdTask},
		Command{Name: "status", Kind: Assertion, Keys: []Key{K("http", Int), K("retryable", Bool), K("runagain", Bool), K("stop", Text), K("saved", OrNone(Bool)), K("unresolved", Text), K("label", Text), K("available", Bool), K("run", Bool), K("startable", Bool), K("resumable", Bool), K("cancellable", Bool), K("completed", OrNone(Ints)), K("next", IntOrNone), K("checkpoint", IntOrNone), K("scope", Text), K("continuation", Enum("none", "approved", "stale")), K("sv", Int), K("rv", Int)},
			Usage:   "[!] status TASK [http=CODE] [retryable=B] [runagain=B] [stop=R|none] [saved=B] [unresolved=CAUSE|none] [label=TEXT] [available=B] [run=B] [startable=B] [resumable=B] [cancellable=B] [completed=1,2|none] [next=N|none] [checkpoint=ITEM|none] [scope=P,Q] [continuation=none|approved|stale] [sv=N] [rv=N]",
			Summary: "asserts the runner's status read (GET /api/runner's in-memory facts: retryable, stopRequested, unresolved, the label, a plan run in progress, startable and resumable; the plan run's completed items and next item; the newest scope checkpoint's item, scope paths and continuation approval); with ! the read must fail, its error on stderr. With http=CODE it reads GET /api/runner as the screen does instead, asserts the HTTP status CODE, prints the fields the screen acts on (stateVersion, reviewVersion, the booleans, stopRequested, unresolved, the label) and one line per attempt with its label, and compares the keys given with the reply's (cancellable, sv and rv only there; run, completed, next, checkpoint, scope and continuation only without http=)",
			Example: "status T1 stop=cancelled saved=false label='Stopping (not saved yet)'", Run: cmdStatus},
		Command{Name: "slots", Kind: Assertion, Usage: "slots N",
			Summary: "asserts how many runner slots are held (reserved, running, or under a marker)",
			Example: "slots 0", Run: cmdSlots},
		Command{Name: "events", Kind: Assertion, Usage: "events TASK KIND N",
			Summary: "asserts how many feedback events of KIND the task has",
			Example: "events T1 task-closed 1", Run: cmdEvents},
		Command{Name: "traced", Kind: Assertion, Pos: 1, Keys: []Key{K("times", Int)}, Usage: "[!] traced REGEXP [times=N]",
			Summary: "asserts that some trace line matches REGEXP (negated, that none does; with times=, that exactly N do)",
			Example: "! traced 'd: start A'", Run: cmdTraced},
		Command{Name: "order", Kind: Assertion, Words: true, Usage: "order PATTERN PATTERN...",
			Summary: "asserts that trace lines matching each regexp appear in this order",
			Example: "order 'terminal A' 'storage removed A' 'slot freed A'", Run: cmdOrder},
		Command{Name: "refs-exist", Kind: Assertion, Usage: "refs-exist",
			Summary: "asserts that every diagnostic_ref names an existing file: no row points at a missing file",
			Example: "refs-exist", Run: cmdRefsExist},
	)
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

func setStr(b bool) string {
	if b {
		return "set"
	}
	return "unset"
}

func noneOr[T ~string](s T) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

// compare checks every wanted key against got and fails with a diff.
func (s *scenario) compare(ts *gts.TestScript, what string, want map[string]string, got map[string]string) {
	sub := map[string]string{}
	var bad []string
	for k, v := range want {
		if strings.HasSuffix(k, "~") {
			g, ok := got[strings.TrimSuffix(k, "~")]
			if !ok {
				ts.Fatalf("%s: unknown field %s", what, k)
			}
			if !regexp.MustCompile(v).MatchString(g) {
				bad = append(bad, fmt.Sprintf("%s does not match %q: %q", strings.TrimSuffix(k, "~"), v, g))
			}
			continue
		}
		g, ok := got[k]
		if !ok {
			ts.Fatalf("%s: unknown field %s", what, k)
		}
		sub[k] = g
	}
	wantExact := map[string]string{}
	for k, v := range want {
		if !strings.HasSuffix(k, "~") {
			wantExact[k] = v
		}
	}
	if d := cmp.Diff(wantExact, sub); d != "" || len(bad) > 0 {
		sort.Strings(bad)
		s.fatal(ts, "%s (-want +got):\n%s%s", what, d, strings.Join(bad, "\n"))
	}
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

func cmdEvents(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 3 {
		ts.Fatalf("usage: events TASK KIND N")
	}
	s := get(ts)
	key := s.planKey(ts, a.pos[0])
	var n int
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { n, err = tx.EventCount(key, a.pos[1]); return err }); err != nil {
		s.fatal(ts, "%v", err)
	}
	if strconv.Itoa(n) != a.pos[2] {
		s.fatal(ts, "%s events of %s: %d, want %s", a.pos[1], a.pos[0], n, a.pos[2])
	}
}

func cmdTraced(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: traced REGEXP [times=N]")
	}
	s := get(ts)
	re := regexp.MustCompile(a.pos[0])
	var found []string
	for _, l := range s.world(ts).Lines() {
		if re.MatchString(l) {
			found = append(found, l)
		}
	}
	if want, ok := a.num("times"); ok {
		if neg {
			ts.Fatalf("traced with times= does not take !: say times=0")
		}
		if len(found) != want {
			s.fatal(ts, "%d trace lines match %q, want %d", len(found), a.pos[0], want)
		}
		return
	}
	if neg && len(found) > 0 {
		s.fatal(ts, "trace has %q, which it must not", found[0])
	}
	if !neg && len(found) == 0 {
		s.fatal(ts, "no trace line matches %q", a.pos[0])
	}
}

func cmdOrder(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: order PATTERN PATTERN...")
	}
	s := get(ts)
	lines := s.world(ts).Lines()
	i := 0
	for _, p := range a.pos {
		re := regexp.MustCompile(p)
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			s.fatal(ts, "order: no line matching %q after the earlier steps", p)
		}
		i++
	}
}

func (s *scenario) diagDir(ts *gts.TestScript) string {
	w := s.world(ts)
	return filepath.Join(w.Root(), w.Owner, "diagnostics")
}

func cmdDiagFile(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 || (a.pos[1] != "present" && a.pos[1] != "absent") {
		ts.Fatalf("usage: diagfile ATTEMPT present|absent")
	}
	s := get(ts)
	_, err := os.Lstat(filepath.Join(s.diagDir(ts), s.attempt(ts, a.pos[0])+".diff"))
	if got := err == nil; got != (a.pos[1] == "present") {
		s.fatal(ts, "diagnostics file of %s present=%v, want %s", a.pos[0], got, a.pos[1])
	}
}

func cmdRefsExist(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	var refs map[string]string
	if err := s.world(ts).Store.View(func(tx *store.Tx) (err error) { refs, err = tx.DiagnosticRefs(); return err }); err != nil {
		s.fatal(ts, "%v", err)
	}
	for ref, id := range refs {
		if _, err := os.Stat(filepath.Join(s.diagDir(ts), ref)); err != nil {
			s.fatal(ts, "attempt %s points at missing file %s", s.w.Name(id), ref)
		}
	}
}
