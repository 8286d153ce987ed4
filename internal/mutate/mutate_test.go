package mutate

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture has one or more sites for every operator, and noise that must be
// left alone.
const fixture = `package fx

import (
	"errors"
	"time"
)

type set struct{ on bool }

func (s *set) Fire(name string) bool { return s.on }
func (s *set) Err(name string) error  { return nil }

type store struct {
	fp    *set
	n     int
	log   []string
	dead  time.Time
	limit int
}

func (s *store) trace(format string, args ...any) {}

func (s *store) exec(q string, args ...any) error { return nil }

var errFull = errors.New("full")

// Admit has a guard, an error check, a boundary, a time boundary and a
// guarded UPDATE.
func (s *store) Admit(now time.Time, k string) error {
	if err := s.fp.Err("store/admit"); err != nil {
		return err
	}
	if s.n >= s.limit {
		return errFull
	}
	if !now.Before(s.dead) {
		return errors.New("budget spent")
	}
	if err := s.exec(` + "`UPDATE tasks SET n = ? WHERE plan_key = ? AND n = ?`" + `, s.n+1, k, s.n); err != nil {
		return err
	}
	s.log = append(s.log, k)
	s.n++
	return nil
}

// Steps has two ordered steps, a declared value the next step reads, and a
// guard whose body only traces.
func (s *store) Steps(k string) {
	s.exec("DELETE FROM a WHERE k = ?", k)
	s.exec("INSERT INTO b VALUES (?)", k)
	v, ok := s.lookup(k)
	s.record(v)
	if !ok {
		s.trace("missing %s", k)
		return
	}
	if v > 3 {
		s.trace("long key %s", k)
	}
	if s.n > 0 && !s.fp.Fire("mutant/steps-skip") {
		s.n = 0
	}
	for i := 0; i < s.n; i++ {
		if s.log[i] == k {
			continue
		}
	}
}

func (s *store) lookup(k string) (int, bool) { return len(k), k != "" }
func (s *store) record(v int)                 { s.n = v }
`

func generateFixture(t *testing.T, src string) []Mutant {
	t.Helper()
	ms, err := GenerateFile("store/fx.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// apply returns the file as m leaves it.
func apply(t *testing.T, src string, m Mutant) string {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "store", "fx.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := m.Mutant().Mutate(root)
	if err != nil {
		t.Fatal(err)
	}
	return string(files["store/fx.go"])
}

func typeCheck(src string, imp types.Importer) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fx.go", src, 0)
	if err != nil {
		return err
	}
	_, err = (&types.Config{Importer: imp}).Check("fx", fset, []*ast.File{f}, nil)
	return err
}

// Every operator makes the edits it documents, and every mutant of the
// fixture type-checks.
func TestOperators(t *testing.T) {
	ms := generateFixture(t, fixture)
	want := map[string][]string{ // operator → a mutated line each must produce
		OpNegate: {
			"\tif !ok {\n→\tif ok {\n",
			"\t\tif s.log[i] == k {\n→\t\tif !(s.log[i] == k) {\n",
		},
		OpBoundary: {
			"\tif s.n >= s.limit {\n→\tif s.n > s.limit {\n",
			"\tif !now.Before(s.dead) {\n→\tif now.After(s.dead) {\n",
			"\tfor i := 0; i < s.n; i++ {\n→\tfor i := 0; i <= s.n; i++ {\n",
		},
		OpDropGuard: {
			"\tif s.n >= s.limit {\n→\tif s.n >= s.limit && false {\n",
			"\t\tif s.log[i] == k {\n→\t\tif s.log[i] == k && false {\n",
		},
		OpIgnoreError: {
			"s.n); err != nil && false {\n",
		},
		OpSwapSteps: {
			"\ts.exec(\"DELETE FROM a WHERE k = ?\", k)\n\ts.exec(\"INSERT INTO b VALUES (?)\", k)\n→\ts.exec(\"INSERT INTO b VALUES (?)\", k)\n\ts.exec(\"DELETE FROM a WHERE k = ?\", k)\n",
			"\ts.log = append(s.log, k)\n\ts.n++\n→\ts.n++\n\ts.log = append(s.log, k)\n",
		},
		OpDropWhereTerm: {
			"WHERE (plan_key = ? OR 1) AND n = ?`",
			"WHERE plan_key = ? AND (n = ? OR 1)`",
		},
	}
	edits := map[string][]string{}
	for _, m := range ms {
		edits[m.Op] = append(edits[m.Op], m.Edit.Original+"→"+m.Edit.Replacement)
	}
	for op, ws := range want {
		for _, w := range ws {
			if !slices.ContainsFunc(edits[op], func(e string) bool { return strings.Contains(e, w) }) {
				t.Errorf("%s: no edit containing %q; have:\n%s", op, w, strings.Join(edits[op], "\n"))
			}
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "source", nil)
	if err := typeCheck(fixture, imp); err != nil {
		t.Fatalf("the fixture itself: %v", err)
	}
	for _, m := range ms {
		if !slices.Contains(Operators, m.Op) {
			t.Errorf("%s: unknown operator", m.ID)
		}
		if err := typeCheck(apply(t, fixture, m), imp); err != nil {
			t.Errorf("%s does not compile: %v\n%s", m.ID, err, m.Diff("  "))
		}
	}
}

// Failpoint and trace noise, and swaps that would not compile, make no
// mutant.
func TestNoiseAndUnsafeSwapsAreSkipped(t *testing.T) {
	for _, m := range generateFixture(t, fixture) {
		text := m.Edit.Original
		switch {
		case strings.Contains(text, "fp.") || strings.Contains(text, "trace(") || strings.Contains(text, "mutant/") || strings.Contains(text, "v > 3"):
			t.Errorf("%s mutates noise:\n%s", m.ID, m.Diff("  "))
		case m.Op == OpSwapSteps && strings.Contains(text, "v, ok := s.lookup(k)") && strings.Contains(text, "s.record(v)"):
			t.Errorf("%s swaps a declaration with its use:\n%s", m.ID, m.Diff("  "))
		case m.Op == OpNegate && strings.Contains(text, "err != nil"):
			t.Errorf("%s: error checks are ignore-error's:\n%s", m.ID, m.Diff("  "))
		}
	}
}

func TestWhereTerms(t *testing.T) {
	for lit, want := range map[string][]string{
		"`UPDATE t SET a = ? WHERE k = ? AND b IS NULL`":                                {"k = ?", "b IS NULL"},
		"`UPDATE t SET a = 1 WHERE k = ? AND json_valid(x)\n\t\tAND f(x, '$.a') = ?`":   {"k = ?", "json_valid(x)", "f(x, '$.a') = ?"},
		"`UPDATE t SET v = v + 1 WHERE k = ? AND v < ? RETURNING v`":                    {"k = ?", "v < ?"},
		"`UPDATE t SET a = ? WHERE k = ?`":                                              nil, // one term: not a guarded UPDATE
		"`UPDATE t SET a = ? WHERE k = ? AND a = 1 OR b = 2`":                           nil, // a top-level OR
		"`SELECT a FROM t WHERE k = ? AND b = ?`":                                       nil,
		"`UPDATE t SET a = ? WHERE k = ? AND (b = ? OR c IN (SELECT 1 WHERE d AND e))`": {"k = ?", "(b = ? OR c IN (SELECT 1 WHERE d AND e))"},
	} {
		var got []string
		for _, sp := range whereTerms(lit) {
			got = append(got, lit[sp[0]:sp[1]])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: terms %q, want %q", lit, got, want)
		}
	}
}

// IDs do not move when unrelated lines are added above; identical mutants
// in one function are told apart by an occurrence number.
func TestStableIDs(t *testing.T) {
	before := generateFixture(t, fixture)
	shifted := strings.Replace(fixture, "var errFull", "// an unrelated comment\n\nvar unrelated = 1\n\nvar errFull", 1)
	after := generateFixture(t, shifted)
	if len(before) != len(after) {
		t.Fatalf("%d mutants before, %d after", len(before), len(after))
	}
	seen := map[string]bool{}
	for i := range before {
		b, a := before[i], after[i]
		if b.ID != a.ID || a.Line != b.Line+4 {
			t.Errorf("mutant moved: %s at %d, then %s at %d", b.ID, b.Line, a.ID, a.Line)
		}
		if seen[b.ID] {
			t.Errorf("duplicate ID %s", b.ID)
		}
		seen[b.ID] = true
		if !strings.HasPrefix(b.ID, "store/fx.go:"+b.Func+":"+b.Op+":") {
			t.Errorf("ID %s does not name file, function and operator", b.ID)
		}
	}
	twice := strings.Replace(fixture, "\ts.n++\n\treturn nil", "\ts.n++\n\tif s.n >= s.limit {\n\t\treturn errFull\n\t}\n\treturn nil", 1)
	var ids []string
	for _, m := range generateFixture(t, twice) {
		if m.Func == "store.Admit" && m.Op == OpBoundary && strings.Contains(m.Edit.Original, "s.n >= s.limit") {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) != 2 || ids[1] != ids[0]+"~2" {
		t.Errorf("identical mutants got IDs %v", ids)
	}
}

func TestSampleIsDeterministic(t *testing.T) {
	var ms []Mutant
	for i := 0; i < 200; i++ {
		ms = append(ms, Mutant{ID: "f.go:F:negate:" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)})
	}
	a, b := Sample(ms, 7, 30), Sample(ms, 7, 30)
	if len(a) != 30 || !slices.EqualFunc(a, b, func(x, y Mutant) bool { return x.ID == y.ID }) {
		t.Fatalf("the same seed gave different samples")
	}
	if c := Sample(ms, 8, 30); slices.EqualFunc(a, c, func(x, y Mutant) bool { return x.ID == y.ID }) {
		t.Errorf("seeds 7 and 8 gave the same sample")
	}
	// Dropping a mutant that was not chosen changes nothing.
	chosen := map[string]bool{}
	for _, m := range a {
		chosen[m.ID] = true
	}
	for i, m := range ms {
		if !chosen[m.ID] {
			rest := slices.Delete(slices.Clone(ms), i, i+1)
			if d := Sample(rest, 7, 30); !slices.EqualFunc(a, d, func(x, y Mutant) bool { return x.ID == y.ID }) {
				t.Errorf("dropping an unchosen mutant changed the sample")
			}
			break
		}
	}
	if len(Sample(ms, 7, 0)) != 200 || len(Sample(ms, 7, 500)) != 200 {
		t.Errorf("n <= 0 or n >= len must take all")
	}
}

func TestParseEquivalent(t *testing.T) {
	text := "# comment\n\nstore/a.go:F:negate:0011aabb  both branches write the same row.\n\tThey differ only in order.\nrunner/b.go:G:boundary:22ccddee\tlen is never 0 here\n"
	es, err := ParseEquivalent("eq.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].ID != "store/a.go:F:negate:0011aabb" || es[0].Reason != "both branches write the same row. They differ only in order." ||
		es[1].ID != "runner/b.go:G:boundary:22ccddee" || es[1].Reason != "len is never 0 here" || es[1].Line != 5 {
		t.Fatalf("parsed %+v", es)
	}
	stale := Stale(es, []Mutant{{ID: "store/a.go:F:negate:0011aabb"}})
	if len(stale) != 1 || stale[0].ID != "runner/b.go:G:boundary:22ccddee" {
		t.Errorf("stale %+v", stale)
	}
	for name, bad := range map[string]string{
		"no reason": "store/a.go:F:negate:0011aabb\n",
		"twice":     "x:F:negate:1 r\nx:F:negate:1 r\n",
		"orphan":    "\tcontinued\n",
	} {
		if _, err := ParseEquivalent("eq.txt", []byte(bad)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

// The equivalence file parses and every entry names a mutant of the tree,
// so that it cannot rot when the code moves on; and the operators make
// only mutants that parse.
func TestEquivalentFileIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	ms, err := Generate(root, Dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no mutants in the tree")
	}
	eq, err := LoadEquivalent(filepath.Join(root, filepath.FromSlash(EquivalentFile)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Stale(eq, ms) {
		t.Errorf("%s:%d: %s is no longer a mutant (the code changed): remove the entry, or give it the mutant's new ID (go run ./internal/mutate/cmd/mutate -list -all)", EquivalentFile, e.Line, e.ID)
	}
}
