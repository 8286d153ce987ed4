package testscript

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/codeboost/codeboost/dadapter"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Commands for startup recovery's task storage and attempt directories.

func init() {
	register(
		Command{Name: "plant-mislabelled-storage", Kind: Action, Usage: "plant-mislabelled-storage ATTEMPT",
			Summary: "plants task storage labelled with this runner's token and the attempt's ID but another allocation ID (a handle that disagrees with the row); the attempt must have no storage present",
			Example: "plant-mislabelled-storage B", Run: cmdMislabelledStorage},
		Command{Name: "plant-foreign-agent", Kind: Action, Usage: "plant-foreign-agent NAME",
			Summary: "plants another database's live runner work: task storage and a running agent container labelled with another runner's token and attempt NAME",
			Example: "plant-foreign-agent B1", Run: cmdForeignAgent},
		Command{Name: "path-vars", Kind: Action, Usage: "path-vars [ATTEMPT...]",
			Summary: "sets $ATTEMPTS to this runner's <root>/<owner>/attempts directory, $STAGING to its staging directory, $DIR_<ATTEMPT> to each named attempt's directory and $STAGING_<ATTEMPT> to the host staging directory of its storage allocation (when it has one), for the built-in file commands",
			Example: "path-vars A", Run: cmdPaths},
		Command{Name: "name-row", Kind: Action, Usage: "name-row ID NAME",
			Summary: "gives an attempt row the script wrote itself (with sql) a name for later commands",
			Example: "name-row '../x' X", Run: cmdNameRow},
		Command{Name: "remove-diagfile-by-hand", Kind: Action, Usage: "remove-diagfile-by-hand ATTEMPT",
			Summary: "a person deletes the attempt's <attemptId>.diff from this database's diagnostics directory by hand",
			Example: "remove-diagfile-by-hand O", Run: cmdRemoveDiagFileByHand},
		Command{Name: "diagfiles", Kind: Assertion, Keys: []Key{K("text~", Regexp), K("count", Int)}, Usage: "diagfiles [ATTEMPT present|absent] [ATTEMPT text~=REGEXP] [count=N]",
			Summary: "asserts this database's diagnostics directory: whether the attempt's <attemptId>.diff exists, that it matches REGEXP (so exists), and how many .diff files it holds",
			Example: "diagfiles A text~='a/second' count=1", Run: cmdDiagFiles},
	)
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

func cmdRemoveDiagFileByHand(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 1 {
		ts.Fatalf("usage: remove-diagfile-by-hand ATTEMPT")
	}
	s := get(ts)
	if err := os.Remove(filepath.Join(s.diagDir(ts), s.attempt(ts, a.pos[0])+".diff")); err != nil {
		ts.Fatalf("remove-diagfile-by-hand: %v", err)
	}
}

// cmdDiagFiles asserts the diagnostics directory: one attempt's file, its
// text, and how many files it holds.
func cmdDiagFiles(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	re, hasText := a.lookup("text~")
	want, hasCount := a.num("count")
	switch {
	case len(a.pos) == 0 && hasCount && !hasText:
	case len(a.pos) == 1 && hasText:
	case len(a.pos) == 2 && (a.pos[1] == "present" || a.pos[1] == "absent") && !(hasText && a.pos[1] == "absent"):
	default:
		ts.Fatalf("usage: diagfiles [ATTEMPT present|absent] [ATTEMPT text~=REGEXP] [count=N]")
	}
	if len(a.pos) > 0 {
		name := a.pos[0]
		data, err := os.ReadFile(filepath.Join(s.diagDir(ts), s.attempt(ts, name)+".diff"))
		present := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.fatal(ts, "diagnostics file of %s: %v", name, err)
		}
		if wantPresent := len(a.pos) == 1 || a.pos[1] == "present"; present != wantPresent {
			s.fatal(ts, "diagnostics file of %s present=%v, want %v", name, present, wantPresent)
		}
		if hasText && !regexp.MustCompile(re).Match(data) {
			s.fatal(ts, "diagnostics file of %s is %q, want a match for %q", name, data, re)
		}
	}
	if hasCount {
		files, _ := filepath.Glob(filepath.Join(s.diagDir(ts), "*.diff"))
		if len(files) != want {
			s.fatal(ts, "diagnostics directory holds %d .diff files %v, want %d", len(files), files, want)
		}
	}
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

func cmdNameRow(ts *gts.TestScript, neg bool, a argSet) {
	if len(a.pos) != 2 {
		ts.Fatalf("usage: name-row ID NAME")
	}
	if err := get(ts).world(ts).Alias(a.pos[0], a.pos[1]); err != nil {
		ts.Fatalf("name-row: %v", err)
	}
}
