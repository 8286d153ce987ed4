package testscript

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	gts "github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

// The world and the script: the runner's configuration, tasks, virtual
// time, failpoints and hooks, raw SQL, and names for attempts and rows.

func init() {
	register(
		Command{Name: "name-next", Kind: Action, Usage: "name-next NAME",
			Summary: "the next attempt admitted by anyone (a plan run's next item, say) gets NAME",
			Example: "name-next B", Run: cmdNameNext},
		Command{Name: "name-row", Kind: Action, Usage: "name-row ID NAME",
			Summary: "gives an attempt row the script wrote itself (with sql) a name for later commands",
			Example: "name-row '../x' X", Run: cmdNameRow},
		Command{Name: "runner", Kind: Action, Keys: []Key{K("slots", Int), K("timeout", Duration), K("budget", Duration), K("cap", Int), K("kinds", Text), K("seed", Int)}, Usage: "runner [slots=N] [timeout=D] [budget=D] [cap=BYTES] [kinds=k1,k2] [seed=N]",
			Summary: "configures the world's runner; only before the first command that uses the world",
			Example: "runner slots=1 budget=1h timeout=10m", Run: cmdRunner},
		Command{Name: "new-task", Kind: Action, Keys: []Key{K("task", Name), K("repo", Text), K("plan", Text), K("status", TaskStatus), K("items", Int), K("snapshot", Name)}, Usage: "[!] new-task NAME [task=ID] [repo=R] [plan=P] [status=S] [items=N] [snapshot=S]",
			Summary: "creates a plan at revision 1 and its task (status queued unless given)",
			Example: "new-task T1 items=2", Run: cmdNewTask},
		Command{Name: "advance", Kind: Action, Usage: "advance DURATION",
			Summary: "moves virtual time forward, firing due timers in order (each followed by a drain)",
			Example: "advance 2h", Run: cmdAdvance},
		Command{Name: "planning", Kind: Action, Usage: "planning on|off",
			Summary: "whether the next process starts with the planning provider (on, the default) or without it (off), as serve starts with or without a github block; without it every planning start is refused and startup leaves the requests an earlier process left pending as they are",
			Example: "planning off", Run: cmdPlanning},
		Command{Name: "fail-point", Kind: Action, Words: true, Usage: "fail-point NAME [TERMS|off]",
			Summary: "switches one of this world's failpoints on (default terms: return) or off; see failpoints.Catalog",
			Example: "fail-point store/terminal-write 1*return", Run: cmdFailPoint},
		Command{Name: "at", Kind: Action, Words: true, Usage: "at HOOK COMMAND [ARGS...]",
			Summary: "runs a scenario command once when the code reaches HOOK (a runner/before-… failpoint, or store/before-commit): something happened between two statements of one event; a scenario that uses it says in an '# interleaving:' header line which production interleaving that stands for, or that none exists and the guard is defence in depth",
			Example: "at runner/before-publish cancel-task T1", Run: cmdAt},
		Command{Name: "hold-answer", Kind: Action, Usage: "hold-answer",
			Summary: "for an at hook inside off-loop work (a file write, say): that work's answer, the event it posts back to the loop, is kept back until release-answers, as a goroutine slow to post would keep it; everything else runs meanwhile",
			Example: "hold-answer", Run: cmdHoldAnswer},
		Command{Name: "release-answers", Kind: Action, Usage: "release-answers",
			Summary: "posts the answers hold-answer kept back, in the order their work ran, and runs them; fails if there is none",
			Example: "release-answers", Run: cmdReleaseAnswers},
		Command{Name: "sql", Kind: Action, Keys: []Key{K("db", Text)}, Usage: "[!] sql [db=FILE] STATEMENT",
			Summary: "runs raw SQL through a connection of its own, as another writer would: on the world's database file, or with db= on FILE (a real process's database); prints a query's rows, one line each, columns separated by a space, NULL for a null; with ! the statement must fail, its error on stderr",
			Example: "sql 'UPDATE tasks SET status = ''needs amendment'''", Run: cmdSQL},
		Command{Name: "set-status", Kind: Action, Usage: "[!] set-status TASK STATUS",
			Summary: "asks the Store to move the task to STATUS by its own explicit action",
			Example: "! set-status T1 'needs amendment'", Run: cmdSetStatus},
	)
}

func cmdNameNext(ts *gts.TestScript, neg bool, a argSet) {
	if neg || len(a.pos) != 1 {
		ts.Fatalf("usage: name-next NAME")
	}
	if err := get(ts).world(ts).NameNext(a.pos[0]); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdNameRow(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: name-row ID NAME")
	}
	if err := get(ts).world(ts).Alias(a.pos[0], a.pos[1]); err != nil {
		ts.Fatalf("name-row: %v", err)
	}
}

func cmdRunner(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if s.w != nil {
		ts.Fatalf("runner must come before the first command that uses the world")
	}
	for k, v := range a.given() {
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
			a.declared(k)
		}
		if err != nil {
			ts.Fatalf("runner %s=%s: %v", k, v, err)
		}
	}
}

func cmdNewTask(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: new-task NAME [k=v...]")
	}
	name := a.pos[0]
	id := store.Identity{RepositoryID: or(a.str("repo"), "repo"), TaskID: or(a.str("task"), name), PlanID: or(a.str("plan"), "plan")}
	n, ok := a.num("items")
	if !ok {
		n = 1
	}
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("item %d", i+1)
	}
	err := w.Store.Update(func(tx *store.Tx) error {
		return tx.CreateTask(store.NewTask{Identity: id, SnapshotID: or(a.str("snapshot"), "s1"), Items: items, Status: words.TaskStatus(a.str("status"))})
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
	if n, ok := a.num("sv"); ok {
		return int64(n)
	}
	return s.presentStateVersion(ts, planKey)
}

// presentStateVersion is the task's state version as stored now.
func (s *scenario) presentStateVersion(ts *gts.TestScript, planKey string) int64 {
	t, err := s.world(ts).Store.Task(planKey)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return t.StateVersion
}

func cmdAdvance(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: advance DURATION")
	}
	d, err := time.ParseDuration(a.pos[0])
	if err != nil {
		ts.Fatalf("advance: %v", err)
	}
	w := get(ts).world(ts)
	w.Clock.Advance(d)
	w.Loop.Drain()
}

func cmdFailPoint(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 1 || len(a.pos) > 2 {
		ts.Fatalf("usage: fail-point NAME [TERMS|off]")
	}
	s := get(ts)
	terms := "return"
	if len(a.pos) == 2 {
		terms = a.pos[1]
	}
	if terms == "off" {
		s.fp.Disable(a.pos[0])
		return
	}
	if err := s.fp.Enable(a.pos[0], terms); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdAt(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: at HOOK COMMAND [ARGS...]")
	}
	s := get(ts)
	hook, name, cmdNeg, args := a.pos[0], a.pos[1], false, a.pos[2:]
	if name == "!" && len(args) > 0 {
		cmdNeg, name, args = true, args[0], args[1:]
	}
	c := command(name)
	if c == nil {
		ts.Fatalf("at: unknown command %q", name)
	}
	// The command's arguments are checked here, on the at line, not when
	// the hook fires.
	ca := c.parse(ts, cmdNeg, args)
	if err := s.fp.SetHook(hook, func() {
		w := s.world(ts)
		w.Trace(fmt.Sprintf("hook %s: %s %s", hook, name, strings.Join(args, " ")))
		// A user action run here calls the loop from inside the event that
		// reached the hook: the one place a Call may re-enter (the
		// scenario's "# interleaving:" header says what it stands for).
		w.Loop.Interleave(func() { c.Run(ts, cmdNeg, ca) })
	}); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdHoldAnswer(ts *gts.TestScript, neg bool, a argSet) {
	if neg || len(a.pos) != 0 {
		ts.Fatalf("usage: hold-answer")
	}
	if err := get(ts).world(ts).Loop.HoldAnswer(); err != nil {
		ts.Fatalf("hold-answer: %v", err)
	}
}

func cmdReleaseAnswers(ts *gts.TestScript, neg bool, a argSet) {
	if neg || len(a.pos) != 0 {
		ts.Fatalf("usage: release-answers")
	}
	if get(ts).world(ts).Loop.ReleaseAnswers() == 0 {
		ts.Fatalf("release-answers: no answer is held")
	}
}

// cmdSQL runs a statement on the world's database or, with db=, on a real
// process's database file; a query's rows are printed.
func cmdSQL(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: sql [db=FILE] STATEMENT")
	}
	s := get(ts)
	dsn := ""
	if f, ok := a.lookup("db"); ok {
		dsn = ts.MkAbs(f)
	} else {
		dsn = "file:" + s.world(ts).DBPath
	}
	db, err := sql.Open("sqlite", dsn+"?_pragma=busy_timeout(5000)")
	if err != nil {
		ts.Fatalf("sql: %v", err)
	}
	defer db.Close()
	stmt := a.pos[0]
	if !returnsRows(stmt) {
		_, err = db.Exec(stmt)
		s.expect(ts, neg, "sql", err)
		return
	}
	rows, err := db.Query(stmt)
	if err == nil {
		err = printRows(ts, rows)
	}
	s.expect(ts, neg, "sql", err)
}

// returnsRows is whether a statement is a query whose rows sql prints.
func returnsRows(stmt string) bool {
	f := strings.Fields(strings.ToUpper(stmt))
	return len(f) > 0 && (f[0] == "SELECT" || f[0] == "PRAGMA" || f[0] == "WITH" || slices.Contains(f, "RETURNING"))
}

// printRows prints a query's rows, one line each, columns separated by a
// space, NULL for a null.
func printRows(ts *gts.TestScript, rows *sql.Rows) error {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = v.String
			if !v.Valid {
				out[i] = "NULL"
			}
		}
		fmt.Fprintln(ts.Stdout(), strings.Join(out, " "))
	}
	return rows.Err()
}

func cmdSetStatus(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: set-status TASK STATUS")
	}
	s := get(ts)
	key := s.planKey(ts, a.pos[0])
	err := s.world(ts).Store.Update(func(tx *store.Tx) error { return tx.SetTaskStatus(key, words.TaskStatus(a.pos[1])) })
	s.expect(ts, neg, "set-status", err)
}

func cmdPlanning(ts *gts.TestScript, neg bool, a argSet) {
	if neg || len(a.pos) != 1 || (a.pos[0] != "on" && a.pos[0] != "off") {
		ts.Fatalf("usage: planning on|off")
	}
	get(ts).world(ts).PlanningOff = a.pos[0] == "off"
}
