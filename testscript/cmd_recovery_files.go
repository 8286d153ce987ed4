package testscript

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for startup recovery's task storage and attempt directories.

func init() {
	register(
		Command{Name: "mislabelled-storage", Usage: "mislabelled-storage ATTEMPT",
			Summary: "plants task storage labelled with this runner's token and the attempt's ID but another allocation ID (a handle that disagrees with the row); the attempt must have no storage present",
			Example: "mislabelled-storage B", Run: cmdMislabelledStorage},
		Command{Name: "foreign-agent", Usage: "foreign-agent NAME",
			Summary: "plants another database's live runner work: task storage and a running agent container labelled with another runner's token and attempt NAME",
			Example: "foreign-agent B1", Run: cmdForeignAgent},
		Command{Name: "paths", Usage: "paths [ATTEMPT...]",
			Summary: "sets $ATTEMPTS to this runner's <root>/<owner>/attempts directory, $STAGING to its staging directory, $DIR_<ATTEMPT> to each named attempt's directory and $STAGING_<ATTEMPT> to the host staging directory of its storage allocation (when it has one), for the built-in file commands",
			Example: "paths A", Run: cmdPaths},
		Command{Name: "name-row", Usage: "name-row ID NAME",
			Summary: "gives an attempt row the script wrote itself (with sql) a name for later commands",
			Example: "name-row '../x' X", Run: cmdNameRow},
		Command{Name: "diagtext", Usage: "diagtext ATTEMPT REGEXP",
			Summary: "asserts that the attempt's <attemptId>.diff in this database's diagnostics directory matches REGEXP",
			Example: "diagtext A 'a/second'", Run: cmdDiagText},
		Command{Name: "remove-diagfile-by-hand", Usage: "remove-diagfile-by-hand ATTEMPT",
			Summary: "a person deletes the attempt's <attemptId>.diff from this database's diagnostics directory by hand",
			Example: "remove-diagfile-by-hand O", Run: cmdRemoveDiagFileByHand},
		Command{Name: "diagfiles", Usage: "diagfiles N",
			Summary: "asserts how many .diff files this database's diagnostics directory holds",
			Example: "diagfiles 1", Run: cmdDiagFiles},
		Command{Name: "traced-times", Usage: "traced-times REGEXP N",
			Summary: "asserts that exactly N trace lines match REGEXP",
			Example: "traced-times 'recovery: finalized A' 1", Run: cmdTracedTimes},
	)
}

func cmdMislabelledStorage(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	if len(args) != 1 {
		ts.Fatalf("usage: mislabelled-storage ATTEMPT")
	}
	id := s.attempt(ts, args[0])
	if w.D.StoragePresent(id) {
		ts.Fatalf("%s still has task storage", args[0])
	}
	w.D.AddStorage(dadapter.StorageOwner{RunnerOwner: w.Owner, AttemptID: id, AllocationID: actionID("mislabelled:" + args[0])})
}

func cmdRemoveDiagFileByHand(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: remove-diagfile-by-hand ATTEMPT")
	}
	s := get(ts)
	if err := os.Remove(filepath.Join(s.diagDir(ts), s.attempt(ts, args[0])+".diff")); err != nil {
		ts.Fatalf("remove-diagfile-by-hand: %v", err)
	}
}

func cmdDiagText(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: diagtext ATTEMPT REGEXP")
	}
	s := get(ts)
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("diagtext: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(s.diagDir(ts), s.attempt(ts, args[0])+".diff"))
	if err != nil {
		s.fatal(ts, "diagnostics file of %s: %v", args[0], err)
	}
	if !re.Match(data) {
		s.fatal(ts, "diagnostics file of %s is %q, want a match for %q", args[0], data, args[1])
	}
}

func cmdDiagFiles(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: diagfiles N")
	}
	s := get(ts)
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("diagfiles: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(s.diagDir(ts), "*.diff"))
	if len(files) != want {
		s.fatal(ts, "diagnostics directory holds %d .diff files %v, want %d", len(files), files, want)
	}
}

func cmdTracedTimes(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: traced-times REGEXP N")
	}
	s := get(ts)
	re, err := regexp.Compile(args[0])
	if err != nil {
		ts.Fatalf("traced-times: %v", err)
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("traced-times: %v", err)
	}
	n := 0
	for _, l := range s.world(ts).Lines() {
		if re.MatchString(l) {
			n++
		}
	}
	if n != want {
		s.fatal(ts, "%d trace lines match %q, want %d", n, args[0], want)
	}
}

func cmdForeignAgent(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	if len(args) != 1 {
		ts.Fatalf("usage: foreign-agent NAME")
	}
	other := strings.Repeat("0", 32)
	id := actionID("foreign:" + args[0])
	if err := w.Alias(id, args[0]); err != nil {
		ts.Fatalf("foreign-agent: %v", err)
	}
	owner := dadapter.StorageOwner{RunnerOwner: other, AttemptID: id, AllocationID: actionID("alloc:" + args[0])}
	storage := w.D.AddStorage(owner) // the other runner's process holds this handle
	if _, err := w.D.Start(dadapter.InvocationInput{RunnerOwner: other, AttemptID: id, Phase: "execute",
		Storage: storage}); err != nil {
		ts.Fatalf("foreign-agent: %v", err)
	}
}

func cmdPaths(ts *gts.TestScript, neg bool, args []string) {
	s := get(ts)
	w := s.world(ts)
	attempts := filepath.Join(w.Root(), w.Owner, "attempts")
	staging := filepath.Join(w.Root(), w.Owner, "staging")
	ts.Setenv("ATTEMPTS", attempts)
	ts.Setenv("STAGING", staging)
	for _, name := range args {
		id := s.attempt(ts, name)
		ts.Setenv("DIR_"+name, filepath.Join(attempts, id))
		if a, err := w.Store.Attempt(id); err == nil && a.AllocationID != "" {
			ts.Setenv("STAGING_"+name, filepath.Join(staging, a.AllocationID))
		}
	}
}

func cmdNameRow(ts *gts.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: name-row ID NAME")
	}
	if err := get(ts).world(ts).Alias(args[0], args[1]); err != nil {
		ts.Fatalf("name-row: %v", err)
	}
}
