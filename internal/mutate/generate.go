package mutate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codeboost/codeboost/internal/mutant"
)

// The operators, in the order the documentation gives them.
const (
	OpNegate        = "negate"
	OpBoundary      = "boundary"
	OpDropGuard     = "drop-guard"
	OpSwapSteps     = "swap-steps"
	OpIgnoreError   = "ignore-error"
	OpDropWhereTerm = "drop-where-term"
)

// Operators is the fixed operator list.
var Operators = []string{OpNegate, OpBoundary, OpDropGuard, OpSwapSteps, OpIgnoreError, OpDropWhereTerm}

// Mutant is one generated mutant.
type Mutant struct {
	ID   string
	Op   string
	File string // slash-separated, relative to the module root
	Line int    // the first line the edit replaces
	Func string // "Tx.Admit", "Decide"
	// Body is the first and last line of Func's declaration: a test whose
	// run entered none of it cannot tell the mutant from the original
	// (coverage.go).
	Body [2]int
	Edit mutant.Edit
	// Race marks a swap-steps mutant that moves a step across a Lock or
	// Unlock call: what it breaks is the lock's ordering, so a step now
	// runs unguarded, and a test binary built without -race runs the
	// same steps in the same order and cannot tell. Its survivors get a
	// second pass built with -race, where a data race kills (run.go).
	Race bool
}

// Pkg is the package the mutant's file belongs to, as "./store".
func (m Mutant) Pkg() string { return "./" + path.Dir(m.File) }

// Pos is "file:line".
func (m Mutant) Pos() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

// Mutant is the internal/mutant value that applies m.
func (m Mutant) Mutant() mutant.Mutant {
	return mutant.Mutant{Name: m.ID, What: m.Op + " at " + m.Pos(), Edits: []mutant.Edit{m.Edit}}
}

// Diff shows the original lines as "-" lines and the mutated ones as "+"
// lines, each prefixed with indent.
func (m Mutant) Diff(indent string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(m.Edit.Original, "\n"), "\n") {
		b.WriteString(indent + "- " + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(m.Edit.Replacement, "\n"), "\n") {
		b.WriteString(indent + "+ " + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// Generate makes every mutant of the non-test Go files in dirs under root,
// sorted by file and position.
func Generate(root string, dirs []string) ([]Mutant, error) {
	var out []Mutant
	for _, d := range dirs {
		paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(d), "*.go"))
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			ms, err := GenerateFile(path.Join(d, filepath.Base(p)), src)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}

// raw is one byte-range replacement in a file.
type raw struct {
	op         string
	fn         string
	start, end int
	text       string
	race       bool // Mutant.Race
}

type gen struct {
	fset    *token.FileSet
	tf      *token.File
	src     []byte
	fn      string
	body    map[string][2]int // each function's first and last line
	handled map[ast.Node]bool
	out     []raw
}

// GenerateFile makes the mutants of one file; rel is its slash-separated
// path relative to the module root. A mutant whose file would no longer
// parse is an operator bug, and an error.
func GenerateFile(rel string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if hasBuildConstraint(f) {
		return nil, nil
	}
	g := &gen{fset: fset, tf: fset.File(f.Pos()), src: src, body: map[string][2]int{}, handled: map[ast.Node]bool{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		g.fn = mutant.FuncName(fd)
		g.body[g.fn] = [2]int{g.line(g.off(fd.Pos())), g.line(g.off(fd.End()))}
		ast.Inspect(fd.Body, g.visit)
	}
	sort.SliceStable(g.out, func(i, j int) bool { return g.out[i].start < g.out[j].start })
	var out []Mutant
	seen := map[string]int{}
	for _, r := range g.out {
		m, err := g.mutant(rel, r)
		if err != nil {
			return nil, err
		}
		if m.Edit.Original == m.Edit.Replacement {
			continue
		}
		seen[m.ID]++
		if n := seen[m.ID]; n > 1 {
			m.ID += fmt.Sprintf("~%d", n)
		}
		out = append(out, m)
	}
	return out, nil
}

func hasBuildConstraint(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}

// mutant turns a byte-range replacement into a whole-line edit with its ID.
func (g *gen) mutant(rel string, r raw) (Mutant, error) {
	ls, le := lineStart(g.src, r.start), lineEnd(g.src, r.end)
	orig := string(g.src[ls:le])
	repl := string(g.src[ls:r.start]) + r.text + string(g.src[r.end:le])
	mutated := string(g.src[:ls]) + repl + string(g.src[le:])
	if _, err := parser.ParseFile(token.NewFileSet(), rel, mutated, parser.SkipObjectResolution); err != nil {
		return Mutant{}, fmt.Errorf("operator %s makes %s unparsable at line %d: %v\n%s", r.op, rel, g.line(r.start), err, repl)
	}
	line := g.line(ls)
	h := sha256.Sum256([]byte(r.op + "\n" + normalize(orig) + "\n" + normalize(repl)))
	return Mutant{
		ID:   fmt.Sprintf("%s:%s:%s:%s", rel, r.fn, r.op, hex.EncodeToString(h[:4])),
		Op:   r.op,
		File: rel,
		Line: line,
		Func: r.fn,
		Body: g.body[r.fn],
		Edit: mutant.Edit{File: rel, Original: orig, Replacement: repl, Line: line},
		Race: r.race,
	}, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func (g *gen) line(off int) int { return g.tf.Line(g.tf.Pos(off)) }

func (g *gen) off(p token.Pos) int { return g.tf.Offset(p) }

func (g *gen) text(n ast.Node) string { return string(g.src[g.off(n.Pos()):g.off(n.End())]) }

func (g *gen) add(op string, from, to token.Pos, text string) {
	g.out = append(g.out, raw{op: op, fn: g.fn, start: g.off(from), end: g.off(to), text: text})
}

func lineStart(src []byte, off int) int { return bytes.LastIndexByte(src[:off], '\n') + 1 }

func lineEnd(src []byte, off int) int {
	if off > 0 && src[off-1] == '\n' {
		return off
	}
	i := bytes.IndexByte(src[off:], '\n')
	if i < 0 {
		return len(src)
	}
	return off + i + 1
}

func (g *gen) visit(n ast.Node) bool {
	if n == nil {
		return false
	}
	switch s := n.(type) {
	case *ast.IfStmt:
		if g.noisy(s.Init) || g.noisy(s.Cond) || g.noiseOnly(s) {
			return false
		}
		g.ifStmt(s)
	case *ast.ForStmt:
		if g.noisy(s.Init) || g.noisy(s.Cond) || g.noisy(s.Post) {
			return false
		}
	case *ast.RangeStmt:
		if g.noisy(s.X) {
			return false
		}
	case *ast.SwitchStmt:
		if g.noisy(s.Init) || g.noisy(s.Tag) {
			return false
		}
	case *ast.TypeSwitchStmt:
		if g.noisy(s.Init) || g.noisy(s.Assign) {
			return false
		}
	case *ast.ExprStmt, *ast.AssignStmt, *ast.ReturnStmt, *ast.IncDecStmt, *ast.SendStmt,
		*ast.DeferStmt, *ast.GoStmt, *ast.DeclStmt:
		if g.noisy(s) {
			return false
		}
	case *ast.BlockStmt:
		g.swaps(s.List)
	case *ast.CaseClause:
		for _, e := range s.List {
			if g.noisy(e) {
				return false
			}
		}
		g.swaps(s.Body)
	case *ast.CommClause:
		g.swaps(s.Body)
	case *ast.BinaryExpr:
		g.boundary(s)
	case *ast.UnaryExpr:
		if s.Op == token.NOT {
			if c, ok := timeCompare(s.X); ok {
				// !a.Before(b) is a >= b: a.After(b) is a > b.
				g.handled[c] = true
				sel := c.Fun.(*ast.SelectorExpr)
				g.add(OpBoundary, s.Pos(), c.End(), g.span(c.Pos(), sel.Sel.Pos())+otherTime(sel.Sel.Name)+g.span(sel.Sel.End(), c.End()))
			}
		}
	case *ast.CallExpr:
		if c, ok := timeCompare(s); ok && !g.handled[c] {
			// a.Before(b) is a < b: !a.After(b) is a <= b.
			sel := c.Fun.(*ast.SelectorExpr)
			g.add(OpBoundary, c.Pos(), c.End(), "!"+g.span(c.Pos(), sel.Sel.Pos())+otherTime(sel.Sel.Name)+g.span(sel.Sel.End(), c.End()))
		}
	case *ast.BasicLit:
		if s.Kind == token.STRING {
			for _, t := range whereTerms(g.text(s)) {
				base := g.off(s.Pos())
				g.out = append(g.out, raw{op: OpDropWhereTerm, fn: g.fn, start: base + t[0], end: base + t[1],
					text: "(" + g.text(s)[t[0]:t[1]] + " OR 1)"})
			}
		}
	}
	return true
}

func (g *gen) span(from, to token.Pos) string { return string(g.src[g.off(from):g.off(to)]) }

func otherTime(name string) string {
	if name == "Before" {
		return "After"
	}
	return "Before"
}

// timeCompare reports whether e is a call x.Before(y) or x.After(y).
func timeCompare(e ast.Expr) (*ast.CallExpr, bool) {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(c.Args) != 1 {
		return nil, false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "Before" && sel.Sel.Name != "After") {
		return nil, false
	}
	return c, true
}

func (g *gen) ifStmt(s *ast.IfStmt) {
	cond := g.text(s.Cond)
	// "c && false" rather than "false": the condition is still evaluated,
	// so a call in it still happens and a variable only it reads stays
	// used (the mutant compiles); the guard never fires all the same.
	never := cond + " && false"
	if b, ok := s.Cond.(*ast.BinaryExpr); ok && b.Op == token.LOR {
		never = "(" + cond + ") && false"
	}
	if isErrorCheck(s.Cond) {
		g.add(OpIgnoreError, s.Cond.Pos(), s.Cond.End(), never)
		return
	}
	if u, ok := s.Cond.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		g.add(OpNegate, s.Cond.Pos(), s.Cond.End(), g.text(u.X))
	} else if isOperand(s.Cond) {
		g.add(OpNegate, s.Cond.Pos(), s.Cond.End(), "!"+cond)
	} else {
		g.add(OpNegate, s.Cond.Pos(), s.Cond.End(), "!("+cond+")")
	}
	if s.Else == nil && len(s.Body.List) > 0 {
		switch last := s.Body.List[len(s.Body.List)-1].(type) {
		case *ast.ReturnStmt:
			g.add(OpDropGuard, s.Cond.Pos(), s.Cond.End(), never)
		case *ast.BranchStmt:
			if last.Tok == token.CONTINUE {
				g.add(OpDropGuard, s.Cond.Pos(), s.Cond.End(), never)
			}
		}
	}
}

// isOperand reports whether e binds tighter than a unary operator, so that
// "!e" needs no parentheses.
func isOperand(e ast.Expr) bool {
	switch e.(type) {
	case *ast.Ident, *ast.SelectorExpr, *ast.CallExpr, *ast.ParenExpr, *ast.IndexExpr:
		return true
	}
	return false
}

// isErrorCheck reports whether e is "x != nil" with x named err, or ending
// in err or Err.
func isErrorCheck(e ast.Expr) bool {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ {
		return false
	}
	if y, ok := b.Y.(*ast.Ident); !ok || y.Name != "nil" {
		return false
	}
	var name string
	switch x := b.X.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	default:
		return false
	}
	return strings.HasSuffix(name, "err") || strings.HasSuffix(name, "Err")
}

func (g *gen) boundary(b *ast.BinaryExpr) {
	var to string
	switch b.Op {
	case token.GEQ:
		to = ">"
	case token.GTR:
		to = ">="
	case token.LEQ:
		to = "<"
	case token.LSS:
		to = "<="
	default:
		return
	}
	g.add(OpBoundary, b.OpPos, b.OpPos+token.Pos(len(b.Op.String())), to)
}

// swaps makes the swap-steps mutants of a statement list.
func (g *gen) swaps(list []ast.Stmt) {
	for i := 0; i+1 < len(list); i++ {
		s1, s2 := list[i], list[i+1]
		if !isStep(s1) || !isStep(s2) || g.noisy(s1) || g.noisy(s2) {
			continue
		}
		if !g.ownLines(s1) || !g.ownLines(s2) || g.line(g.off(s1.End())) >= g.line(g.off(s2.Pos())) {
			continue
		}
		if g.text(s1) == g.text(s2) || !hasEffect(s1, s2) || !hasEffect(s2, s1) {
			continue
		}
		if mentionsAny(s2, declared(s1)) || mentionsAny(s1, declared(s2)) {
			continue
		}
		a1, b1 := lineStart(g.src, g.off(s1.Pos())), lineEnd(g.src, g.off(s1.End()))
		a2, b2 := lineStart(g.src, g.off(s2.Pos())), lineEnd(g.src, g.off(s2.End()))
		text := string(g.src[a2:b2]) + string(g.src[b1:a2]) + string(g.src[a1:b1])
		g.out = append(g.out, raw{op: OpSwapSteps, fn: g.fn, start: a1, end: b2, text: text, race: locks(s1) || locks(s2)})
	}
}

// locks reports whether s is a call of a method named Lock, Unlock, RLock
// or RUnlock (a sync.Mutex's, a sync.RWMutex's, or a type's that embeds
// one).
func locks(s ast.Stmt) bool {
	x, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := x.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch sel.Sel.Name {
	case "Lock", "Unlock", "RLock", "RUnlock":
		return true
	}
	return false
}

func isStep(s ast.Stmt) bool {
	switch x := s.(type) {
	case *ast.ExprStmt:
		_, ok := x.X.(*ast.CallExpr)
		return ok
	case *ast.AssignStmt, *ast.IncDecStmt, *ast.SendStmt:
		return true
	}
	return false
}

// ownLines reports whether nothing but blanks precede s on its first line
// and nothing but blanks or a line comment follow it on its last.
func (g *gen) ownLines(s ast.Stmt) bool {
	a, b := g.off(s.Pos()), g.off(s.End())
	if strings.TrimSpace(string(g.src[lineStart(g.src, a):a])) != "" {
		return false
	}
	rest := strings.TrimSpace(string(g.src[b:lineEnd(g.src, b)]))
	return rest == "" || strings.HasPrefix(rest, "//")
}

var builtins = map[string]bool{
	"len": true, "cap": true, "make": true, "new": true, "append": true, "min": true, "max": true,
	"complex": true, "real": true, "imag": true,
	"string": true, "int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
	"float32": true, "float64": true, "byte": true, "rune": true, "bool": true, "any": true,
}

// hasEffect reports whether a step calls something that is not a builtin
// or a conversion, sends, writes through a field, index or pointer, or
// assigns (not declares) a variable that the other step mentions.
func hasEffect(s, other ast.Stmt) bool {
	effect := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); !ok || !builtins[id.Name] {
				effect = true
			}
		}
		return !effect
	})
	if effect {
		return true
	}
	var lhs []ast.Expr
	switch x := s.(type) {
	case *ast.AssignStmt:
		if x.Tok == token.DEFINE {
			return false
		}
		lhs = x.Lhs
	case *ast.IncDecStmt:
		lhs = []ast.Expr{x.X}
	case *ast.SendStmt:
		return true
	}
	for _, e := range lhs {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok || (id.Name != "_" && mentionsAny(other, map[string]bool{id.Name: true})) {
			return true
		}
	}
	return false
}

// declared lists the names a step declares with :=.
func declared(s ast.Stmt) map[string]bool {
	out := map[string]bool{}
	if a, ok := s.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
		for _, e := range a.Lhs {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
				out[id.Name] = true
			}
		}
	}
	return out
}

func mentionsAny(n ast.Node, names map[string]bool) bool {
	if len(names) == 0 {
		return false
	}
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && names[id.Name] {
			found = true
		}
		return !found
	})
	return found
}
