package testscript

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	gts "github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

func init() {
	register(
		Command{Name: "runner", Usage: "runner [slots=N] [timeout=D] [budget=D] [cap=BYTES] [kinds=k1,k2] [seed=N]",
			Summary: "configures the world's runner; only before the first command that uses the world",
			Example: "runner slots=1 budget=1h timeout=10m", Run: cmdRunner},
		Command{Name: "new-task", Usage: "new-task NAME [task=ID] [repo=R] [plan=P] [status=S] [items=N] [snapshot=S]",
			Summary: "creates a plan at revision 1 and its task (status queued unless given)",
			Example: "new-task T1 items=2", Run: cmdNewTask},
		Command{Name: "admit", Usage: "[!] admit TASK KIND as=NAME [item=N] [sv=N]",
			Summary: "admits one attempt through the coordinator (in-memory checks, slot, Store transaction); sv defaults to the task's present state version",
			Example: "admit T1 review as=A", Run: cmdAdmit},
		Command{Name: "advance", Usage: "advance DURATION",
			Summary: "moves virtual time forward, firing due timers in order (each followed by a drain)",
			Example: "advance 2h", Run: cmdAdvance},
		Command{Name: "fail-point", Usage: "fail-point NAME [TERMS|off]",
			Summary: "switches one of this world's failpoints on (default terms: return) or off; see failpoints.Catalog",
			Example: "fail-point store/terminal-write 1*return", Run: cmdFailPoint},
		Command{Name: "at", Usage: "at HOOK COMMAND [ARGS...]",
			Summary: "runs a scenario command once when the code reaches HOOK (a runner/before-… failpoint, or store/before-commit): something happened between two statements of one event; a scenario that uses it says in an '# interleaving:' header line which production interleaving that stands for, or that none exists and the guard is defence in depth",
			Example: "at runner/before-publish cancel-task T1", Run: cmdAt},
		Command{Name: "sql", Usage: "[!] sql STATEMENT",
			Summary: "runs raw SQL on the database file through a second connection, as another writer would",
			Example: "sql 'UPDATE tasks SET status = ''needs amendment'''", Run: cmdSQL},
		Command{Name: "set-status", Usage: "[!] set-status TASK STATUS",
			Summary: "asks the Store to move the task to STATUS by its own explicit action",
			Example: "! set-status T1 'needs amendment'", Run: cmdSetStatus},
	)
}

func cmdRunner(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	if s.w != nil {
		ts.Fatalf("runner must come before the first command that uses the world")
	}
	a := parse(args)
	for k, v := range a.kv {
		var err error
		switch k {
		case "slots":
			s.cfg.Slots, err = strconv.Atoi(v)
		case "timeout":
			s.cfg.AttemptTimeout, err = time.ParseDuration(v)
		case "budget":
			s.cfg.Budget, err = time.ParseDuration(v)
		case "cap":
			s.cfg.DiagnosticsCap, err = strconv.ParseInt(v, 10, 64)
		case "kinds":
			s.cfg.Kinds = strings.Split(v, ",")
		case "seed":
			s.cfg.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			err = fmt.Errorf("unknown setting")
		}
		if err != nil {
			ts.Fatalf("runner %s=%s: %v", k, v, err)
		}
	}
}

func cmdNewTask(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	a := parse(args)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: new-task NAME [k=v...]")
	}
	name := a.pos[0]
	id := store.Identity{RepositoryID: or(a.kv["repo"], "repo"), TaskID: or(a.kv["task"], name), PlanID: or(a.kv["plan"], "plan")}
	n, _ := strconv.Atoi(or(a.kv["items"], "1"))
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("item %d", i+1)
	}
	err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: or(a.kv["snapshot"], "s1"), Items: items, Status: words.TaskStatus(a.kv["status"])})
	})
	s.expect(ts, neg, "new-task", err)
	if err == nil {
		s.tasks[name] = id.Key()
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *scenario) stateVersion(ts *gts.TestScript, planKey string, a argSet) int64 {
	if v, ok := a.kv["sv"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			ts.Fatalf("sv=%s: %v", v, err)
		}
		return n
	}
	t, err := s.world(ts).Store.Task(planKey)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return t.StateVersion
}

func cmdAdmit(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	a := parse(args)
	if len(a.pos) != 2 {
		ts.Fatalf("usage: admit TASK KIND as=NAME")
	}
	key := s.planKey(ts, a.pos[0])
	if name := a.kv["as"]; name != "" {
		if err := w.NameNext(name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	r := runner.AdmitRequest{PlanKey: key, Kind: a.pos[1], ExpectedStateVersion: s.stateVersion(ts, key, a)}
	if v, ok := a.kv["item"]; ok {
		n, _ := strconv.Atoi(v)
		r.Item = &n
	}
	_, err := w.Runner.Admit(context.Background(), r)
	s.expect(ts, neg, "admit", err)
}

func cmdAdvance(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: advance DURATION")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("advance: %v", err)
	}
	w := get(ts).world(ts)
	w.Clock.Advance(d)
	w.Loop.Drain()
}

func cmdFailPoint(ts *gts.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: fail-point NAME [TERMS|off]")
	}
	s := get(ts)
	terms := "return"
	if len(args) == 2 {
		terms = args[1]
	}
	if terms == "off" {
		s.fp.Disable(args[0])
		return
	}
	if err := s.fp.Enable(args[0], terms); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdAt(ts *gts.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: at HOOK COMMAND [ARGS...]")
	}
	s := get(ts)
	var run func(*gts.TestScript, bool, []string)
	name, cmdNeg := args[1], false
	if name == "!" && len(args) > 2 {
		cmdNeg, name, args = true, args[2], append(args[:1:1], args[2:]...)
	}
	for _, c := range Commands {
		if c.Name == name {
			run = c.Run
		}
	}
	if run == nil {
		ts.Fatalf("at: unknown command %q", name)
	}
	rest := append([]string(nil), args[2:]...)
	if err := s.fp.SetHook(args[0], func() {
		w := s.world(ts)
		w.Trace(fmt.Sprintf("hook %s: %s %s", args[0], name, strings.Join(rest, " ")))
		// A user action run here calls the loop from inside the event that
		// reached the hook: the one place a Call may re-enter (the
		// scenario's "# interleaving:" header says what it stands for).
		w.Loop.Interleave(func() { run(ts, cmdNeg, rest) })
	}); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdSQL(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sql STATEMENT")
	}
	s := get(ts)
	w := s.world(ts)
	db, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		ts.Fatalf("sql: %v", err)
	}
	defer db.Close()
	_, err = db.Exec(args[0])
	s.expect(ts, neg, "sql", err)
}

func cmdSetStatus(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: set-status TASK STATUS")
	}
	s := get(ts)
	key := s.planKey(ts, args[0])
	err := s.world(ts).Store.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, words.TaskStatus(args[1])) })
	s.expect(ts, neg, "set-status", err)
}

var _ = words.Pending
