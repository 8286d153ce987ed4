package testscript

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// A crash, the restart's startup recovery and its report, and what
// recovery finds on the host: legacy objects, foreign or mislabelled task
// storage, attempt directories.

func init() {
	register(
		Command{Name: "reconciled", Kind: Assertion, Keys: []Key{K("aborted", Text)}, Usage: "reconciled TASKS|none [aborted=ATTEMPTS|none]",
			Summary: "asserts what the last startup recovery repaired in step 5 (merged tasks, comma-separated) and which rebase markers step 4 cleared",
			Example: "reconciled T1 aborted=none", Run: cmdReconciled},
		Command{Name: "plant-mislabelled-storage", Kind: Action, Usage: "plant-mislabelled-storage ATTEMPT",
			Summary: "plants task storage labelled with this runner's token and the attempt's ID but another allocation ID (a handle that disagrees with the row); the attempt must have no storage present",
			Example: "plant-mislabelled-storage B", Run: cmdMislabelledStorage},
		Command{Name: "plant-foreign-agent", Kind: Action, Usage: "plant-foreign-agent NAME",
			Summary: "plants another database's live runner work: task storage and a running agent container labelled with another runner's token and attempt NAME",
			Example: "plant-foreign-agent B1", Run: cmdForeignAgent},
		Command{Name: "path-vars", Kind: Action, Usage: "path-vars [ATTEMPT...]",
			Summary: "sets $ATTEMPTS to this runner's <root>/<owner>/attempts directory, $STAGING to its staging directory, $DIR_<ATTEMPT> to each named attempt's directory and $STAGING_<ATTEMPT> to the host staging directory of its storage allocation (when it has one), for the built-in file commands",
			Example: "path-vars A", Run: cmdPaths},
		Command{Name: "crash", Kind: Action, Usage: "crash",
			Summary: "kills the runner process between two events: no shutdown code runs, jobs, markers, timers and queued events vanish; the SQLite file, D's containers and task storage, and the runner root stay",
			Example: "crash", Run: cmdCrash},
		Command{Name: "restart", Kind: Action, Usage: "[!] restart",
			Summary: "starts a new runner process over the same database file and runs startup recovery; prints its report; fails (or, negated, must fail) when recovery stops the start",
			Example: "restart", Run: cmdRestart},
		Command{Name: "recovered", Kind: Assertion, Keys: []Key{K("opened", Bool), K("requeue", Text), K("unmatched", Int), K("unknown", Int), K("legacy", Int), K("unowned", Int), K("unsafe", Int)}, Usage: "recovered [opened=B] [requeue=KEYS|none] [unmatched=N] [unknown=N] [legacy=N] [unowned=N] [unsafe=N]",
			Summary: "asserts startup recovery's report (requeue names tasks, comma-separated)",
			Example: "recovered opened=true requeue=T1", Run: cmdRecovered},
		Command{Name: "plant-legacy", Kind: Action, Usage: "plant-legacy KIND NAME",
			Summary: "plants an object from an older build in the simulated Docker: codeboost labels, no runner label (container, network or volume)",
			Example: "plant-legacy container old-agent", Run: cmdLegacy},
		Command{Name: "remove-legacy", Kind: Action, Usage: "remove-legacy NAME",
			Summary: "the user runs the printed docker command for a legacy object",
			Example: "remove-legacy old-agent", Run: cmdRemoveLegacy},
		Command{Name: "plant-foreign-storage", Kind: Action, Keys: []Key{K("owner", Enum("this", "other"))}, Usage: "plant-foreign-storage NAME [owner=this|other]",
			Summary: "plants task storage whose attempt and allocation labels match no row (owner this: labelled with this runner's token)",
			Example: "plant-foreign-storage X", Run: cmdForeignStorage},
	)
}

func cmdReconciled(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: reconciled TASKS|none [aborted=ATTEMPTS|none]")
	}
	select {
	case <-w.Runner.RecoveryDone():
	default:
		s.fatal(ts, "recovery has not ended")
	}
	r := w.Runner.Recovery()
	var tasks, aborted []string
	for _, k := range r.Reconciled {
		tasks = append(tasks, s.taskName(k))
	}
	for _, x := range r.AbortedRebases {
		f := strings.Fields(x)
		aborted = append(aborted, w.Name(f[len(f)-1]))
	}
	want := map[string]string{"reconciled": a.pos[0]}
	if v, ok := a.lookup("aborted"); ok {
		want["aborted"] = v
	}
	s.compare(ts, "recovery", want, map[string]string{"reconciled": noneOr(strings.Join(tasks, ",")), "aborted": noneOr(strings.Join(aborted, ","))})
}

func cmdMislabelledStorage(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plant-mislabelled-storage ATTEMPT")
	}
	id := s.attempt(ts, a.pos[0])
	if w.D.StoragePresent(id) {
		ts.Fatalf("%s still has task storage", a.pos[0])
	}
	w.D.AddStorage(dadapter.StorageOwner{RunnerOwner: w.Owner, AttemptID: id, AllocationID: actionID("mislabelled:" + a.pos[0])})
}

func cmdForeignAgent(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plant-foreign-agent NAME")
	}
	other := strings.Repeat("0", 32)
	id := actionID("foreign:" + a.pos[0])
	if err := w.Alias(id, a.pos[0]); err != nil {
		ts.Fatalf("plant-foreign-agent: %v", err)
	}
	owner := dadapter.StorageOwner{RunnerOwner: other, AttemptID: id, AllocationID: actionID("alloc:" + a.pos[0])}
	storage := w.D.AddStorage(owner) // the other runner's process holds this handle
	if _, err := w.D.Start(dadapter.InvocationInput{RunnerOwner: other, AttemptID: id, Phase: "execute",
		Storage: storage}); err != nil {
		ts.Fatalf("plant-foreign-agent: %v", err)
	}
}

func cmdPaths(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	attempts := filepath.Join(w.Root(), w.Owner, "attempts")
	staging := filepath.Join(w.Root(), w.Owner, "staging")
	ts.Setenv("ATTEMPTS", attempts)
	ts.Setenv("STAGING", staging)
	for _, name := range a.pos {
		id := s.attempt(ts, name)
		ts.Setenv("DIR_"+name, filepath.Join(attempts, id))
		if a, err := w.Store.Attempt(id); err == nil && a.AllocationID != "" {
			ts.Setenv("STAGING_"+name, filepath.Join(staging, a.AllocationID))
		}
	}
}

func cmdCrash(ts *gts.TestScript, neg bool, a argSet) {
	get(ts).world(ts).Crash()
}

func cmdRestart(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	err := w.Restart()
	if err == nil {
		select {
		case <-w.Runner.RecoveryDone():
			r := w.Runner.Recovery()
			err = r.Err
			fmt.Fprintf(ts.Stdout(), "opened: %v\n", r.Opened())
			for _, f := range r.Finalized {
				fmt.Fprintf(ts.Stdout(), "finalized: %s\n", w.Name(strings.Fields(f)[0])+" "+strings.Fields(f)[1])
			}
			for _, k := range r.Requeue {
				fmt.Fprintf(ts.Stdout(), "requeue: %s\n", s.taskName(k))
			}
			for _, u := range r.UnmatchedStorage {
				fmt.Fprintf(ts.Stdout(), "unmatched storage: %s\n", w.Name(u))
			}
			for _, c := range r.LegacyCommands {
				fmt.Fprintf(ts.Stdout(), "run: %s\n", c)
			}
			for _, u := range r.UnownedPreparation {
				fmt.Fprintf(ts.Stdout(), "unowned preparation: %s\n", w.Name(strings.Fields(u)[0]))
			}
			for _, u := range r.UnknownEntries {
				fmt.Fprintf(ts.Stdout(), "unknown entry: %s\n", u[strings.LastIndex(u, "/")+1:])
			}
			for _, u := range r.UnsafeAttempts {
				fmt.Fprintf(ts.Stdout(), "unsafe attempt ID: %q\n", u)
			}
		default:
			fmt.Fprintln(ts.Stdout(), "recovery in progress")
		}
	}
	s.expect(ts, neg, "restart", err)
}

func (s *scenario) taskName(key string) string {
	for n, k := range s.tasks {
		if k == key {
			return n
		}
	}
	return key
}

func cmdRecovered(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	select {
	case <-w.Runner.RecoveryDone():
	default:
		s.fatal(ts, "recovery has not ended")
	}
	r := w.Runner.Recovery()
	var requeue []string
	for _, k := range r.Requeue {
		requeue = append(requeue, s.taskName(k))
	}
	got := map[string]string{"opened": boolStr(r.Opened()), "requeue": noneOr(strings.Join(requeue, ",")),
		"unmatched": fmt.Sprint(len(r.UnmatchedStorage)), "unknown": fmt.Sprint(len(r.UnknownEntries)),
		"legacy": fmt.Sprint(len(r.LegacyCommands)), "unowned": fmt.Sprint(len(r.UnownedPreparation)),
		"unsafe": fmt.Sprint(len(r.UnsafeAttempts))}
	s.compare(ts, "recovery", a.given(), got)
}

func cmdLegacy(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: plant-legacy KIND NAME")
	}
	switch kind := dadapter.ResourceKind(a.pos[0]); kind {
	case dadapter.KindContainer, dadapter.KindNetwork, dadapter.KindVolume:
		get(ts).world(ts).D.AddLegacy(kind, a.pos[1])
	default:
		ts.Fatalf("plant-legacy: kind %q is not container, network or volume", a.pos[0])
	}
}

func cmdRemoveLegacy(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: remove-legacy NAME")
	}
	if !get(ts).world(ts).D.RemoveLegacy(a.pos[0]) {
		ts.Fatalf("no legacy object %s", a.pos[0])
	}
}

func cmdForeignStorage(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	w := s.world(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: plant-foreign-storage NAME [owner=this|other]")
	}
	owner := w.Owner
	if a.str("owner") == "other" {
		owner = strings.Repeat("0", 32)
	}
	id := actionID("foreign:" + a.pos[0])
	w.Alias(id, a.pos[0])
	w.D.AddStorage(dadapter.StorageOwner{RunnerOwner: owner, AttemptID: id, AllocationID: actionID("alloc:" + a.pos[0])})
}
