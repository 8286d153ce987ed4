package testscript

import (
	"os"
	"path/filepath"
	"regexp"

	"github.com/codeboost/codeboost/store"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// The diagnostics directory: its files, and the rows that point at them.

func init() {
	register(
		Command{Name: "refs-exist", Kind: Assertion, Usage: "refs-exist",
			Summary: "asserts that every diagnostic_ref names an existing file: no row points at a missing file",
			Example: "refs-exist", Run: cmdRefsExist},
		Command{Name: "remove-diagfile-by-hand", Kind: Action, Usage: "remove-diagfile-by-hand ATTEMPT",
			Summary: "a person deletes the attempt's <attemptId>.diff from this database's diagnostics directory by hand",
			Example: "remove-diagfile-by-hand O", Run: cmdRemoveDiagFileByHand},
		Command{Name: "diagfiles", Kind: Assertion, Keys: []Key{K("text~", Regexp), K("count", Int)}, Usage: "diagfiles [ATTEMPT present|absent] [ATTEMPT text~=REGEXP] [count=N]",
			Summary: "asserts this database's diagnostics directory: whether the attempt's <attemptId>.diff exists, that it matches REGEXP (so exists), and how many .diff files it holds",
			Example: "diagfiles A text~='a/second' count=1", Run: cmdDiagFiles},
	)
}

func (s *scenario) diagDir(ts *gts.TestScript) string {
	w := s.world(ts)
	return filepath.Join(w.Root(), w.Owner, "diagnostics")
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
		path := filepath.Join(s.diagDir(ts), s.attempt(ts, name)+".diff")
		_, err := os.Lstat(path)
		if wantPresent := len(a.pos) == 1 || a.pos[1] == "present"; (err == nil) != wantPresent {
			s.fatal(ts, "diagnostics file of %s present=%v, want %v", name, err == nil, wantPresent)
		}
		if hasText {
			data, err := os.ReadFile(path)
			if err != nil {
				s.fatal(ts, "diagnostics file of %s: %v", name, err)
			}
			if !regexp.MustCompile(re).Match(data) {
				s.fatal(ts, "diagnostics file of %s is %q, want a match for %q", name, data, re)
			}
		}
	}
	if hasCount {
		files, _ := filepath.Glob(filepath.Join(s.diagDir(ts), "*.diff"))
		if len(files) != want {
			s.fatal(ts, "diagnostics directory holds %d .diff files %v, want %d", len(files), files, want)
		}
	}
}
