package mutant

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// FileAnchor is the anchor of a block that no single declaration holds: one
// spanning declarations, one outside any (the imports' neighbours, the
// package clause), and every block of a file that is not Go. A mutant file
// writes it as the path alone on its "in:" line.
const FileAnchor = "file"

// AnchorAt names the declaration of a Go file that holds the whole lines
// from byte offset start to end of src: "func Name" or "func Type.Method"
// for a function or method (its doc comment counts as part of it), "var x",
// "const x" or "type T" for the one spec of a declaration that holds them
// (a group's first name when they span several of its specs), "import" for
// the imports, else FileAnchor. A file that is not Go, or does not parse, is
// FileAnchor: its blocks are held only by the exactly-once rule.
//
// A mutant names its blocks' anchors so that a line that moves into another
// function, even with its text unchanged, is a mutant that no longer applies
// rather than a mutant that silently breaks something else; the reanchor
// command (internal/mutant/cmd/reanchor) follows a function that moved or
// was renamed. internal/mutate's generator names its mutants' functions
// the same way (its funcName) and could call this instead.
func AnchorAt(file string, src []byte, start, end int) string {
	if !strings.HasSuffix(file, ".go") {
		return FileAnchor
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return FileAnchor
	}
	tf := fset.File(f.Pos())
	first, last := tf.Line(tf.Pos(start)), tf.Line(tf.Pos(max(start, end-1)))
	holds := func(from, to token.Pos) bool {
		return tf.Line(from) <= first && last <= tf.Line(to)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			if holds(from, d.End()) {
				return "func " + FuncName(d)
			}
		case *ast.GenDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			if !holds(from, d.End()) {
				continue
			}
			if d.Tok == token.IMPORT {
				return "import"
			}
			for _, s := range d.Specs {
				if holds(specStart(s), s.End()) {
					return d.Tok.String() + " " + specName(s)
				}
			}
			if len(d.Specs) > 0 {
				return d.Tok.String() + " " + specName(d.Specs[0])
			}
		}
	}
	return FileAnchor
}

func specStart(s ast.Spec) token.Pos {
	switch s := s.(type) {
	case *ast.ValueSpec:
		if s.Doc != nil {
			return s.Doc.Pos()
		}
	case *ast.TypeSpec:
		if s.Doc != nil {
			return s.Doc.Pos()
		}
	}
	return s.Pos()
}

func specName(s ast.Spec) string {
	switch s := s.(type) {
	case *ast.ValueSpec:
		return s.Names[0].Name
	case *ast.TypeSpec:
		return s.Name.Name
	}
	return "?"
}

// FuncName is a function's name, or "Type.Method" for a method (without the
// pointer or type parameters), as mutants and the sweep's IDs name it.
func FuncName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// Anchors lists the anchors a Go file declares, each once, so that the
// reanchor command can tell a renamed function (its name gone from the
// package) from one whose lines moved away from it.
func Anchors(file string, src []byte) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			out["func "+FuncName(d)] = true
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				out["import"] = true
				continue
			}
			for _, s := range d.Specs {
				out[d.Tok.String()+" "+specName(s)] = true
			}
		}
	}
	return out, nil
}

// validAnchor reports whether a is an anchor AnchorAt can return.
func validAnchor(a string) error {
	if a == FileAnchor || a == "import" {
		return nil
	}
	kind, name, ok := strings.Cut(a, " ")
	switch {
	case !ok || name == "" || strings.ContainsAny(name, " \t"):
	case kind == "func" || kind == "var" || kind == "const" || kind == "type":
		return nil
	}
	return fmt.Errorf("%q is not an anchor: want \"func Name\", \"func Type.Method\", \"var x\", \"const x\", \"type T\" or \"import\" after the path", a)
}
