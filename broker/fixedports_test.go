package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigTextsBindNoFixedHTTPPort: every broker config written in
// this package's tests sets [http] listen itself. Without it the broker
// binds the default 127.0.0.1:9644, and two test processes on one
// machine (CI runs arm64 and armv7 side by side) collide on it. Tests
// bind random free loopback ports, never fixed ones.
func TestConfigTextsBindNoFixedHTTPPort(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("test files: %v (%d)", err, len(files))
	}
	checked := 0
	for _, name := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, "\n[broker]\n") {
				return true
			}
			checked++
			if !strings.Contains(lit.Value, "[http]") {
				t.Errorf("%s: a broker config without an [http] section binds the fixed default port 9644; add [http] listen = \"127.0.0.1:0\"", fset.Position(lit.Pos()))
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no broker config text found; the check looks at nothing")
	}
}
