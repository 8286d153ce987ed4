package testscript

import (
	"strconv"

	"github.com/codeboost/codeboost/dadapter/simd"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Preparation process groups (issue 3 item 7): the simulated D reports a
// group for every storage allocation and clone at request time; it stays
// alive while the op is held (also after an abort, and after the runner
// process died) until the op completes or startup recovery stops it.

func init() {
	register(
		Command{Name: "group-alive", Kind: Assertion, Keys: []Key{K("op", Enum("storage", "clone"))}, Usage: "group-alive ATTEMPT yes|no [op=storage|clone]",
			Summary: "asserts whether a preparation process group of the attempt (of that op, or any) is still alive in the simulated host",
			Example: "group-alive A yes op=clone", Run: cmdGroupAlive},
		Command{Name: "reuse-group-ids", Kind: Action, Usage: "reuse-group-ids ATTEMPT",
			Summary: "the host reuses the numbers of the attempt's ended preparation groups for unrelated live process groups (another identity)",
			Example: "reuse-group-ids A", Run: cmdReuseGroupIDs},
		Command{Name: "prep", Kind: Assertion, Keys: []Key{K("started", SetOr), K("group", SetOr)}, Usage: "prep ATTEMPT [started=set|unset] [group=set|unset]",
			Summary: "asserts the attempt row's preparation owner: preparation_started_at, and the saved process group (preparation_pgid with its identity)",
			Example: "prep A started=set group=set", Run: cmdPrep},
	)
}

func cmdGroupAlive(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 2 || (a.pos[1] != "yes" && a.pos[1] != "no") {
		ts.Fatalf("usage: group-alive ATTEMPT yes|no [op=storage|clone]")
	}
	op := a.str("op")
	switch op {
	case "", simd.OpStorage, simd.OpClone:
	default:
		ts.Fatalf("group-alive: op is storage or clone, not %q", op)
	}
	got := s.world(ts).D.GroupAlive(op, s.attempt(ts, a.pos[0]))
	if want := a.pos[1] == "yes"; got != want {
		s.fatal(ts, "preparation group of %s (op %q): alive=%v, want %v", a.pos[0], op, got, want)
	}
}

func cmdPrep(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: prep ATTEMPT [started=set|unset] [group=set|unset]")
	}
	at, err := s.world(ts).Store.Attempt(s.attempt(ts, a.pos[0]))
	if err != nil {
		s.fatal(ts, "%v", err)
	}
	group := setStr(at.PreparationPGID != nil && at.PreparationIdentity != "")
	if at.PreparationPGID != nil && at.PreparationIdentity == "" {
		group = "pgid " + strconv.Itoa(*at.PreparationPGID) + " without identity"
	}
	got := map[string]string{"started": setStr(at.PreparationStartedAt != nil), "group": group}
	s.compare(ts, "prep "+a.pos[0], a.given(), got)
}

func cmdReuseGroupIDs(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: reuse-group-ids ATTEMPT")
	}
	if s.world(ts).D.ReuseGroupIDs(s.attempt(ts, a.pos[0])) == 0 {
		ts.Fatalf("reuse-group-ids: %s has no ended preparation group", a.pos[0])
	}
}
