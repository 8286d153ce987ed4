package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/store"
)

// TestOpenTakesThePathLiterally: the database file is the path given, whatever
// characters its directories hold. The DSN is a URI, where "#" starts a
// fragment, "?" a query and "%" an escape: unescaped, a path through
// "/tmp/a#b/" opened "/tmp/a" instead, and lost every pragma after the "#"
// (WAL, foreign keys, the busy timeout, IMMEDIATE transactions). The runner
// lock is taken on the canonical path of the file it was given, so the Store
// must write that file and no other.
func TestOpenTakesThePathLiterally(t *testing.T) {
	for _, name := range []string{"a#b", "a?b", "a%23b", "a b", "a%b", "a&_pragma=foreign_keys(0)"} {
		t.Run(strings.NewReplacer("#", "hash", "?", "question", "%", "percent", "&", "amp", "=", "eq", " ", "space").Replace(name), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "codeboost.db")
			s, err := store.Open(path, store.Options{Now: func() time.Time { return time.Unix(0, 0) }, IDs: ids.NewSeeded(1)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the database is not at the path given: %v", err)
			}
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if e.Name() != name {
					t.Errorf("Open wrote %s beside the directory it was given", e.Name())
				}
			}
			// The pragmas after the path still apply: a ledger entry for a
			// plan that does not exist is refused by the foreign keys.
			if err := s.Update(func(tx *store.Tx) error { return tx.RecordHistory("repo/ghost/plan", "", "c0ffee") }); err == nil {
				t.Errorf("foreign keys are off: the pragmas after the path were lost")
			}
		})
	}
}
