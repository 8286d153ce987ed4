package mutate

import (
	"go/ast"
	"go/token"
	"strings"
)

// failpointMethods are the methods of failpoints.Set that production code
// calls; a call of one on a receiver ending in "fp" is failpoint noise.
var failpointMethods = map[string]bool{
	"Fire": true, "Eval": true, "Hook": true, "Err": true, "Enable": true, "SetHook": true, "OnEach": true,
}

// traceFuncs print and do nothing else.
var traceFuncs = map[string]bool{"trace": true, "traceAttempt": true, "Trace": true, "tracef": true, "logf": true}

// noisy reports whether n, outside the bodies of function literals in it,
// calls a failpoint or trace function or names a "mutant/…".
func (g *gen) noisy(n ast.Node) bool {
	if n == nil {
		return false
	}
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			found = found || g.noiseCall(x)
		case *ast.BasicLit:
			found = found || (x.Kind == token.STRING && strings.Contains(x.Value, "mutant/"))
		}
		return !found
	})
	return found
}

func (g *gen) noiseCall(c *ast.CallExpr) bool {
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		return traceFuncs[f.Name]
	case *ast.SelectorExpr:
		if traceFuncs[f.Sel.Name] {
			return true
		}
		if id, ok := f.X.(*ast.Ident); ok && id.Name == "log" {
			return true
		}
		if failpointMethods[f.Sel.Name] {
			recv := g.text(f.X)
			return recv == "fp" || strings.HasSuffix(recv, ".fp")
		}
	}
	return false
}

// noiseOnly reports whether every statement of an if's body and else is
// a noise statement, so that its condition decides only what is printed.
func (g *gen) noiseOnly(s *ast.IfStmt) bool {
	if !g.noiseStmts(s.Body.List) {
		return false
	}
	switch e := s.Else.(type) {
	case nil:
		return true
	case *ast.BlockStmt:
		return g.noiseStmts(e.List)
	case *ast.IfStmt:
		return g.noiseOnly(e)
	}
	return false
}

func (g *gen) noiseStmts(list []ast.Stmt) bool {
	for _, s := range list {
		switch x := s.(type) {
		case *ast.ExprStmt:
			c, ok := x.X.(*ast.CallExpr)
			if !ok || !g.noiseCall(c) {
				return false
			}
		case *ast.IfStmt:
			if !g.noiseOnly(x) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
