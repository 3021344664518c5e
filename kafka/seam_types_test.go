package kafka

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandlersStayBehindTheSeam: the package's code reaches the broker
// only through seam.go's interfaces. What it may import, transitively, is
// the rule "kafka stays behind its seam" of internal/layering's
// TestLayering (never replication, the group coordinator's driver, ops or
// the broker); this test adds that it names none of the concrete types
// those interfaces stand for, so a handler cannot cast its way past a
// fake.
func TestHandlersStayBehindTheSeam(t *testing.T) {
	// The concrete types behind Metadata, ControllerAPI, ProducerIDs,
	// Replica, LogDir, GroupCore and TxnCore.
	forbiddenTypes := map[string]bool{
		"cluster.Controller":        true,
		"cluster.ProducerIDManager": true,
		"engine.Log":                true,
		"engine.Manager":            true,
		"groups.Coordinator":        true,
		"groups.Group":              true,
		"txn.Coordinator":           true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && forbiddenTypes[pkg.Name+"."+sel.Sel.Name] {
				t.Errorf("%s names %s.%s, a concrete type behind the seam", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files; is the test running in the package's directory?", checked)
	}
}
