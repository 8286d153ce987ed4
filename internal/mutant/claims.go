package mutant

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Claim is a package test that claims to kill a mutant: its doc comment has
// a line "kills: mutant/<name> …", as a scenario's header has "# kills:".
type Claim struct {
	Pkg  string // "./sim", relative to the module root
	Test string // "TestSettlementOracle"
}

// PackageClaims reads the doc comments of every Test function in the
// module's _test.go files (skip names directories left out, such as
// "scenarios", whose claims are in its scripts) and returns the claims by
// mutant name.
func PackageClaims(root string, skip ...string) (map[string][]Claim, error) {
	out := map[string][]Claim{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || contains(skip, filepath.ToSlash(rel))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Doc == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			for _, c := range fn.Doc.List {
				rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(c.Text, "//")), "kills:")
				if !ok {
					continue
				}
				for _, name := range strings.Fields(rest) {
					out[name] = append(out[name], Claim{Pkg: pkg, Test: fn.Name.Name})
				}
			}
		}
		return nil
	})
	for _, cs := range out {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].Pkg != cs[j].Pkg {
				return cs[i].Pkg < cs[j].Pkg
			}
			return cs[i].Test < cs[j].Test
		})
	}
	return out, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
