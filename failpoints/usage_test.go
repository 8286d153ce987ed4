package failpoints

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tooling are the directories allowed to speak of mutants in non-test code:
// the overlay machinery and the mutation sweep.
var tooling = map[string]bool{"internal/mutant": true, "internal/mutate": true}

// TestProductionCodeHasNoMutantSwitch keeps mutants out of production code
// and failpoints to what they are for. In every non-test file of the module
// outside the mutant tooling: no string names a mutant, and every failpoint
// evaluated is a catalogued one, by a literal name, used as what it is: a
// hook ("<pkg>/before-<point>") only through Hook, a fault only through
// Fire, Eval or Err. So no guard can carry a switch that removes it.
func TestProductionCodeHasNoMutantSwitch(t *testing.T) {
	fset := token.NewFileSet()
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || tooling[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "runner/") || strings.HasPrefix(rel, "store/") {
			// The code the scenarios guard does not even speak of mutants:
			// a reader of a guard reads the guard and nothing else.
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if i := strings.Index(strings.ToLower(string(src)), "mutant"); i >= 0 {
				t.Errorf("%s:%d mentions a mutant", rel, 1+strings.Count(string(src[:i]), "\n"))
			}
		}
		for _, p := range usageProblems(f, fset, strings.HasPrefix(rel, "failpoints/")) {
			t.Errorf("%s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// usageProblems lists what f does wrong. The failpoints package itself may
// pass names through variables.
func usageProblems(f *ast.File, fset *token.FileSet, self bool) []string {
	var out []string
	bad := func(n ast.Node, format string, args ...any) {
		out = append(out, fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind == token.STRING && strings.Contains(n.Value, "mutant/") {
				bad(n, "names a mutant (%s): mutants are files under scenarios/mutants, applied with go test -overlay", n.Value)
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) != 1 {
				return true
			}
			method := sel.Sel.Name
			if method != "Fire" && method != "Eval" && method != "Err" && method != "Hook" {
				return true
			}
			lit, ok := n.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				if !self {
					bad(n, "%s with a name that is not a literal: name the catalogued failpoint", method)
				}
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			_, catalogued := Catalog[name]
			hook := strings.Contains(name, "/before-")
			switch {
			case !catalogued:
				bad(n, "%s(%q): not in failpoints.Catalog", method, name)
			case method == "Hook" && !hook:
				bad(n, "Hook(%q): a fault is evaluated with Fire, Eval or Err", name)
			case method != "Hook" && hook:
				bad(n, "%s(%q): a hook only runs a scenario command; it never decides a condition", method, name)
			}
		}
		return true
	})
	return out
}
