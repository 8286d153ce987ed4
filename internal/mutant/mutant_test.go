package mutant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `mutant/slot: admission does not check slot capacity
breaks: "Two admissions therefore cannot both see the same free slot."
-- a/x.go: original --
	if used >= max {
-- a/x.go: mutant --
	if false {
`

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestParseAndMutate(t *testing.T) {
	m, err := Parse("dir/slot.txtar", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "mutant/slot" || m.What != "admission does not check slot capacity" || !strings.Contains(m.Breaks, "free slot") {
		t.Fatalf("parsed %+v", m)
	}
	root := writeTree(t, map[string]string{"a/x.go": "package a\nfunc f() {\n\tif used >= max {\n\t}\n}\n"})
	files, err := m.Mutate(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["a/x.go"]); got != "package a\nfunc f() {\n\tif false {\n\t}\n}\n" {
		t.Fatalf("mutated:\n%s", got)
	}
	ov, err := m.Overlay(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var o struct{ Replace map[string]string }
	b, _ := os.ReadFile(ov)
	if err := json.Unmarshal(b, &o); err != nil || len(o.Replace) != 1 {
		t.Fatalf("overlay %s: %v", b, err)
	}
	for k := range o.Replace {
		if !filepath.IsAbs(k) || !strings.HasSuffix(k, filepath.FromSlash("a/x.go")) {
			t.Fatalf("overlay key %s", k)
		}
	}
}

// A mutant whose lines are gone, or appear twice, or appear only inside a
// longer line, says it no longer applies, naming itself and the file.
func TestNoLongerApplies(t *testing.T) {
	m, err := Parse("slot.txtar", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"gone":         "package a\n",
		"twice":        "\tif used >= max {\n\tif used >= max {\n",
		"mid-line":     "x\tif used >= max {\n",
		"partial line": "\tif used >= max {}\n",
	} {
		root := writeTree(t, map[string]string{"a/x.go": src})
		_, err := m.Mutate(root)
		if err == nil || !strings.Contains(err.Error(), "mutant mutant/slot no longer applies to a/x.go") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	for name, text := range map[string]string{
		"wrong name":   strings.Replace(sample, "mutant/slot", "mutant/other", 1),
		"no breaks":    strings.Replace(sample, "breaks:", "says:", 1),
		"no what":      strings.Replace(sample, ": admission does not check slot capacity", ":", 1),
		"unpaired":     strings.Split(sample, "-- a/x.go: mutant --")[0],
		"same lines":   strings.Replace(sample, "\tif false {", "\tif used >= max {", 1),
		"wrong labels": strings.Replace(sample, "a/x.go: mutant", "a/y.go: mutant", 1),
	} {
		if _, err := Parse("slot.txtar", []byte(text)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestPattern(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"TestScenarios/R013-a", "TestScenarios/R016-b"}, `^TestScenarios$/^(R013-a|R016-b)$`},
		{[]string{"TestOracle"}, `^TestOracle$`},
		{[]string{"TestA", "TestB"}, `^(TestA|TestB)$`},
	} {
		if got := Pattern(c.in); got != c.want {
			t.Errorf("Pattern(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestPackageClaims(t *testing.T) {
	root := writeTree(t, map[string]string{
		"p/p_test.go":    "package p\n\n// TestX checks things.\n//\n// kills: mutant/a mutant/b\nfunc TestX(t *testing.T) {}\n\n// kills: mutant/c\nfunc helper() {}\n",
		"skip/s_test.go": "package s\n// kills: mutant/z\nfunc TestZ(t *testing.T) {}\n",
	})
	c, err := PackageClaims(root, "skip")
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2 || len(c["mutant/a"]) != 1 || c["mutant/a"][0] != (Claim{Pkg: "./p", Test: "TestX"}) || c["mutant/c"] != nil || c["mutant/z"] != nil {
		t.Fatalf("claims %+v", c)
	}
}

// An edit with a Line applies at that line even when its original lines
// appear elsewhere too, and says it no longer applies when they are not
// there.
func TestLineEdit(t *testing.T) {
	src := "package a\nfunc f() {\n\tif err != nil {\n\t}\n\tif err != nil {\n\t}\n}\n"
	root := writeTree(t, map[string]string{"a/x.go": src})
	m := Mutant{Name: "sweep/x", Edits: []Edit{{File: "a/x.go", Original: "\tif err != nil {\n", Replacement: "\tif false {\n", Line: 5}}}
	files, err := m.Mutate(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(files["a/x.go"]), strings.Replace(src, "\tif err != nil {\n\t}\n}", "\tif false {\n\t}\n}", 1); got != want {
		t.Fatalf("mutated:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range []int{4, 8, 100} {
		m.Edits[0].Line = line
		if _, err := m.Mutate(root); err == nil || !strings.Contains(err.Error(), "no longer applies to a/x.go") {
			t.Errorf("line %d: err = %v", line, err)
		}
	}
	// Without a Line, the exactly-once rule still holds.
	m.Edits[0].Line = 0
	if _, err := m.Mutate(root); err == nil || !strings.Contains(err.Error(), "appear 2 times") {
		t.Errorf("no line: err = %v", err)
	}
}

// An anchored mutant applies only where its "in:" line says: lines that are
// still exactly once in the file but now in another function (a guard
// moved into a helper, say) no longer apply, naming both, so that the
// mutant cannot silently break something else.
func TestAnchoredNoLongerApplies(t *testing.T) {
	text := strings.Replace(sample, "breaks: ", "in: a/x.go func admit\nbreaks: ", 1)
	m, err := Parse("slot.txtar", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.Edits[0].Anchor != "func admit" {
		t.Fatalf("anchor %q", m.Edits[0].Anchor)
	}
	root := writeTree(t, map[string]string{"a/x.go": "package a\n\nfunc admit() {\n\tif used >= max {\n\t}\n}\n"})
	if _, err := m.Mutate(root); err != nil {
		t.Fatal(err)
	}
	root = writeTree(t, map[string]string{"a/x.go": "package a\n\nfunc admit() {\n\tcheck()\n}\n\nfunc check() {\n\tif used >= max {\n\t}\n}\n"})
	_, err = m.Mutate(root)
	if err == nil || !strings.Contains(err.Error(), "mutant mutant/slot no longer applies to a/x.go: its original lines are in func check, not in func admit") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnchorAt(t *testing.T) {
	src := "package a\n\nimport \"fmt\"\n\n// T is a thing.\ntype T struct{}\n\n// M does it.\nfunc (t *T) M() {\n\tfmt.Println()\n}\n\nvar (\n\tx = 1\n\ty = 2\n)\n\nconst z = `\nSELECT 1\n`\n"
	for lines, want := range map[string]string{
		"\tfmt.Println()\n":     "func T.M",
		"// M does it.\n":       "func T.M",
		"\ty = 2\n":             "var y",
		"\tx = 1\n\ty = 2\n":    "var x",
		"SELECT 1\n":            "const z",
		"import \"fmt\"\n":      "import",
		"type T struct{}\n":     "type T",
		"}\n\nvar (\n":          FileAnchor,
		"package a\n":           FileAnchor,
		"\tx = 1\n\ty = 2\n)\n": "var x",
	} {
		at := strings.Index(src, lines)
		if got := AnchorAt("a/x.go", []byte(src), at, at+len(lines)); got != want {
			t.Errorf("%q: %q, want %q", lines, got, want)
		}
	}
	if got := AnchorAt("a/x.js", []byte("function f() {\n}\n"), 0, 5); got != FileAnchor {
		t.Errorf("a JavaScript file: %q", got)
	}
}

func TestParseRefusesBadAnchors(t *testing.T) {
	for name, in := range map[string]string{
		"another file":  "in: a/y.go func admit\n",
		"two for one":   "in: a/x.go func admit\nin: a/x.go func admit\n",
		"no such kind":  "in: a/x.go fn admit\n",
		"name with gap": "in: a/x.go func ad mit\n",
	} {
		text := strings.Replace(sample, "breaks: ", in+"breaks: ", 1)
		if _, err := Parse("slot.txtar", []byte(text)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	// The path alone is the file anchor, as for a file that is not Go.
	m, err := Parse("slot.txtar", []byte(strings.Replace(sample, "breaks: ", "in: a/x.go\nbreaks: ", 1)))
	if err != nil || m.Edits[0].Anchor != FileAnchor {
		t.Fatalf("path alone: %v, %+v", err, m.Edits)
	}
}
