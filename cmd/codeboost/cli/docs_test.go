package cli

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADocComment: each package says what it owns and what it
// may not import (style.md, "Together").
func TestEveryPackageHasADocComment(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	documented := map[string]bool{} // package directory → has a doc comment
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		documented[dir] = documented[dir] || (f.Doc != nil && len(strings.TrimSpace(f.Doc.Text())) > 20)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, ok := range documented {
		if !ok {
			t.Errorf("the package in %s has no doc comment", dir)
		}
	}
}
