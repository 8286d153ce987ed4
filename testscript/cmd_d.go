package testscript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/simd"
	"github.com/codeboost/codeboost/words"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// The simulated D: how it answers each operation, the settlement of an
// invocation, its own stops, and the task storage and attempt directories
// it leaves.

func init() {
	register(
		Command{Name: "d", Kind: Action, Usage: "d OP auto|hold|fail|refuse [MESSAGE]",
			Summary: "sets how the simulated D answers later requests of OP (storage, clone, start, export, remove, commit, release-commit, recover, inspect, check-tree): at once, held until the script releases it, with an error, or (refuse, storage and clone only) with an error before spawning any process group",
			Example: "d clone hold", Run: cmdD},
		Command{Name: "release", Kind: Action, Keys: []Key{K("crossed", Bool)}, Usage: "release OP ATTEMPT... [crossed=true]",
			Summary: "lets a held D operation finish; an aborted one reports its abort, as a helper that stopped its process group does, unless crossed=true: its answer was on its way when the abort came, so F receives the answer it had reached (a proven tree, a refusal) after its stop. With several attempts, D answers them all before F runs any answer's event (answers that arrive together)",
			Example: "release clone A", Run: cmdRelease},
		Command{Name: "fail-op", Kind: Action, Usage: "fail-op OP ATTEMPT MESSAGE",
			Summary: "ends a held D operation with an error",
			Example: "fail-op clone A 'fatal: repository not found'", Run: cmdFailOp},
		Command{Name: "aborted", Kind: Assertion, Usage: "[!] aborted OP ATTEMPT",
			Summary: "asserts that the coordinator aborted the held operation's signal (and that it is still held: awaited)",
			Example: "aborted clone A", Run: cmdAborted},
		Command{Name: "settle", Kind: Action, Keys: []Key{K("exit", Int), K("output", Text), K("stop", StopReason), K("diag", Text), K("stderr", Text), K("unreleased", Int)}, Usage: "settle ATTEMPT [exit=N] [output=JSON] [stop=REASON] [diag=TEXT] [stderr=TEXT] [unreleased=N]",
			Summary: "resolves the handle's Settled; D's own first stop reason, if it has one, wins over stop=",
			Example: "settle A exit=1 output='boom'", Run: cmdSettle},
		Command{Name: "d-stops", Kind: Action, Usage: "d-stops ATTEMPT REASON",
			Summary: "D stops the invocation for its own reason (timeout, output-limit, capture-failure) and keeps Settled pending",
			Example: "d-stops A timeout", Run: cmdDStops},
		Command{Name: "started", Kind: Assertion, Usage: "[!] started ATTEMPT",
			Summary: "asserts whether D's start was called for the attempt",
			Example: "! started A", Run: cmdStarted},
		Command{Name: "d-cancelled", Kind: Assertion, Usage: "d-cancelled ATTEMPT [REASON,REASON...|none]",
			Summary: "asserts the exact reasons handle.Cancel was called with, in order",
			Example: "d-cancelled A cancelled", Run: cmdDCancels},
		Command{Name: "storage", Kind: Assertion, Usage: "storage ATTEMPT present|absent",
			Summary: "asserts whether the attempt's task storage (volumes and keeper) exists in the simulated D",
			Example: "storage A absent", Run: cmdStorage},
		Command{Name: "remove-storage-by-hand", Kind: Action, Usage: "remove-storage-by-hand ATTEMPT",
			Summary: "a person deletes the attempt's task storage behind the runner's back (docker volume rm)",
			Example: "remove-storage-by-hand A", Run: cmdRemoveStorageByHand},
		Command{Name: "hostfiles", Kind: Assertion, Usage: "hostfiles ATTEMPT present|absent",
			Summary: "asserts whether the attempt directory <root>/<owner>/attempts/<id> exists on disk",
			Example: "hostfiles A absent", Run: cmdHostFiles},
		Command{Name: "set-diff", Kind: Action, Usage: "set-diff ATTEMPT TEXT",
			Summary: "sets what an export of the attempt's task storage returns",
			Example: "set-diff A 'diff --git a/x b/x'", Run: cmdSetDiff},
		Command{Name: "refuse-tree", Kind: Action, Usage: "refuse-tree ATTEMPT WHY",
			Summary: "makes D's check of the attempt's task tree refuse it (TaskTreeRefused: the tree is not a clean copy of the head, or a declared file operation does not fit it), saying WHY",
			Example: "refuse-tree A 'create README.md: the head has it'", Run: cmdTreeRefused},
		Command{Name: "agent-leaves", Kind: Action, Words: true, Usage: "agent-leaves ATTEMPT ENTRY...",
			Summary: "sets what inspecting the attempt's task storage finds (D's change manifest, which the runner's audit judges); ENTRY is metadata, cut, KIND=PATH (KIND added, modified, deleted, type-changed, ignored, nested, gitlink, dotgit, special, refused) or symlink=PATH->TARGET",
			Example: "agent-leaves A modified=README.md ignored=build/out.o", Run: cmdAgentLeaves},
		Command{Name: "agent-writes", Kind: Action, Keys: []Key{K("limit", Int)}, Usage: "agent-writes ATTEMPT BYTES [limit=BYTES]",
			Summary: "sets how many bytes the attempt's added and changed files hold; D's commit refuses them past its commit limit (runner.agent.commitLimitBytes, default 256 MiB; limit= sets it)",
			Example: "agent-writes A 2147483648", Run: cmdAgentWrites},
	)
}

func cmdD(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 || len(a.pos) > 3 {
		ts.Fatalf("usage: d OP auto|hold|fail|refuse [MESSAGE]")
	}
	p := simd.Policy{Mode: a.pos[1]}
	if len(a.pos) == 3 {
		p.Msg = a.pos[2]
	}
	if p.Mode == "fail" && p.Msg == "" {
		p.Msg = a.pos[0] + " failed"
	}
	if err := get(ts).world(ts).D.SetPolicy(a.pos[0], p); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdRelease(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: release OP ATTEMPT... [crossed=true]")
	}
	finishOp(ts, a.pos[0], a.pos[1:], func(d *simd.D, op, id string) error {
		if a.str("crossed") == "true" {
			return d.FinishCrossed(op, id)
		}
		return d.Finish(op, id, nil)
	})
}

func cmdFailOp(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 3 {
		ts.Fatalf("usage: fail-op OP ATTEMPT MESSAGE")
	}
	finishOp(ts, a.pos[0], a.pos[1:2], func(d *simd.D, op, id string) error { return d.Finish(op, id, errors.New(a.pos[2])) })
}

// finishOp ends the held operation op of each attempt with finish, then
// runs what they set off: every answer is in before F runs the first.
func finishOp(ts *gts.TestScript, op string, attempts []string, finish func(d *simd.D, op, attemptID string) error) {
	s := get(ts)
	w := s.world(ts)
	for _, name := range attempts {
		if err := finish(w.D, op, s.attempt(ts, name)); err != nil {
			s.fatal(ts, "%v", err)
		}
	}
	w.Loop.Drain()
}

func cmdAborted(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: aborted OP ATTEMPT")
	}
	s := get(ts)
	got, err := s.world(ts).D.Aborted(a.pos[0], s.attempt(ts, a.pos[1]))
	if err != nil {
		s.fatal(ts, "%v (an operation that already ended was not awaited)", err)
	}
	if got == neg {
		s.fatal(ts, "held %s of %s: aborted=%v, want %v", a.pos[0], a.pos[1], got, !neg)
	}
}

func (s *scenario) handle(ts *gts.TestScript, name string) *simd.Handle {
	h := s.world(ts).D.Handle(s.attempt(ts, name))
	if h == nil {
		s.fatal(ts, "D never started %s", name)
	}
	return h
}

func cmdSettle(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: settle ATTEMPT [k=v...]")
	}
	h := s.handle(ts, a.pos[0])
	st := dadapter.Settlement{Output: []byte(or(a.str("output"), `{"ok":true}`)), Diagnostic: a.str("diag"),
		StopReason: words.StopReason(a.str("stop"))}
	if n, ok := a.num("exit"); ok {
		st.ExitCode = n
	}
	if e := a.str("stderr"); e != "" {
		st.Stderr = []byte(e + "\n")
	}
	if n, ok := a.num("unreleased"); ok {
		for i := 0; i < n; i++ {
			st.Unreleased = append(st.Unreleased, dadapter.Resource{Kind: "container", ID: fmt.Sprintf("c%d", i)})
		}
	}
	if err := h.Settle(st); err != nil {
		s.fatal(ts, "%v", err)
	}
	s.world(ts).Loop.Drain()
}

func cmdDStops(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: d-stops ATTEMPT REASON")
	}
	s := get(ts)
	if err := StopReason.check(a.pos[1]); err != nil {
		ts.Fatalf("d-stops: reason %s: %v", a.pos[1], err)
	}
	s.handle(ts, a.pos[0]).StopOnItsOwn(words.StopReason(a.pos[1]))
}

func cmdStarted(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: started ATTEMPT")
	}
	s := get(ts)
	got := s.world(ts).D.Handle(s.attempt(ts, a.pos[0])) != nil
	if got == neg {
		s.fatal(ts, "D start called for %s: %v, want %v", a.pos[0], got, !neg)
	}
}

func cmdDCancels(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: d-cancelled ATTEMPT REASONS")
	}
	s := get(ts)
	var got []string
	for _, r := range s.handle(ts, a.pos[0]).Cancels() {
		got = append(got, string(r))
	}
	want := a.pos[1]
	if want == "none" {
		want = ""
	}
	if strings.Join(got, ",") != want {
		s.fatal(ts, "handle.Cancel calls for %s: %q, want %q", a.pos[0], strings.Join(got, ","), want)
	}
}

func cmdStorage(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 || (a.pos[1] != "present" && a.pos[1] != "absent") {
		ts.Fatalf("usage: storage ATTEMPT present|absent")
	}
	s := get(ts)
	got := s.world(ts).D.StoragePresent(s.attempt(ts, a.pos[0]))
	if got != (a.pos[1] == "present") {
		s.fatal(ts, "task storage of %s present=%v, want %s", a.pos[0], got, a.pos[1])
	}
}

func cmdHostFiles(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 || (a.pos[1] != "present" && a.pos[1] != "absent") {
		ts.Fatalf("usage: hostfiles ATTEMPT present|absent")
	}
	s := get(ts)
	w := s.world(ts)
	dir := filepath.Join(w.Root(), w.Owner, "attempts", s.attempt(ts, a.pos[0]))
	_, err := os.Lstat(dir)
	got := err == nil
	if got != (a.pos[1] == "present") {
		s.fatal(ts, "attempt directory of %s present=%v, want %s", a.pos[0], got, a.pos[1])
	}
}

func cmdSetDiff(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: set-diff ATTEMPT TEXT")
	}
	s := get(ts)
	s.world(ts).D.SetDiff(s.attempt(ts, a.pos[0]), a.pos[1])
}

func cmdTreeRefused(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: refuse-tree ATTEMPT WHY")
	}
	s := get(ts)
	s.world(ts).D.RefuseTree(s.attempt(ts, a.pos[0]), a.pos[1])
}

func cmdAgentLeaves(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) < 2 {
		ts.Fatalf("usage: agent-leaves ATTEMPT ENTRY...")
	}
	m, err := parseManifest(a.pos[1:])
	if err != nil {
		ts.Fatalf("agent-leaves: %v", err)
	}
	s := get(ts)
	s.world(ts).D.SetChanges(s.attempt(ts, a.pos[0]), m)
}

func cmdAgentWrites(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: agent-writes ATTEMPT BYTES [limit=BYTES]")
	}
	n, err := strconv.ParseInt(a.pos[1], 10, 64)
	if err != nil || n < 0 {
		ts.Fatalf("agent-writes: %q is not a byte count", a.pos[1])
	}
	s := get(ts)
	d := s.world(ts).D
	if limit, ok := a.num("limit"); ok {
		if limit <= 0 {
			ts.Fatalf("agent-writes: limit=%d is not a byte count", limit)
		}
		d.SetCommitLimit(int64(limit))
	}
	d.SetWritten(s.attempt(ts, a.pos[0]), n)
}

// parseManifest reads agent-leaves' entries into a change manifest.
func parseManifest(entries []string) (dadapter.ChangeManifest, error) {
	var m dadapter.ChangeManifest
	for _, e := range entries {
		switch e {
		case "metadata":
			m.MetadataChanged = true
			continue
		case "cut":
			m.Cut = true
			continue
		}
		kind, p, ok := strings.Cut(e, "=")
		if !ok || p == "" {
			return m, fmt.Errorf("entry %q: want metadata, cut, KIND=PATH or symlink=PATH->TARGET", e)
		}
		switch kind {
		case string(dadapter.ChangeAdded), string(dadapter.ChangeModified), string(dadapter.ChangeDeleted), string(dadapter.ChangeTypeChanged):
			m.Changes = append(m.Changes, dadapter.Change{Path: p, Kind: dadapter.ChangeKind(kind)})
		case "ignored":
			m.Ignored = append(m.Ignored, p)
		case "nested":
			m.Nested = append(m.Nested, p)
		case "gitlink":
			m.GitlinkContent = append(m.GitlinkContent, p)
		case "dotgit":
			m.DotGit = append(m.DotGit, p)
		case "special":
			m.Special = append(m.Special, p)
		case "refused":
			m.Refused = append(m.Refused, p)
		case "symlink":
			link, target, ok := strings.Cut(p, "->")
			if !ok {
				return m, fmt.Errorf("entry %q: want symlink=PATH->TARGET", e)
			}
			m.Symlinks = append(m.Symlinks, dadapter.Symlink{Path: link, Target: target})
		default:
			return m, fmt.Errorf("entry %q: unknown kind %q", e, kind)
		}
	}
	return m, nil
}

func cmdRemoveStorageByHand(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: remove-storage-by-hand ATTEMPT")
	}
	if !s.world(ts).D.RemoveStorageByHand(s.attempt(ts, a.pos[0])) {
		ts.Fatalf("remove-storage-by-hand: %s has no task storage", a.pos[0])
	}
}
