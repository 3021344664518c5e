//go:build ignore

// controller-methods.go: counts the methods of a type in a package
// directory's non-test Go files, by parsing them (go/ast), for
// scripts/house-figures.sh. Run with
// `go run scripts/controller-methods.go [-type Controller] DIR`; it prints
// one line: methods=N exported=N unexported=N pointer=N (receiver *T),
// and with -v the names, one a line.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	typ := flag.String("type", "Controller", "the receiver type")
	verbose := flag.Bool("v", false, "list the methods")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: controller-methods [-type T] [-v] DIR")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(flag.Arg(0), "*.go"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "controller-methods: no Go files in %s\n", flag.Arg(0))
		os.Exit(1)
	}
	fset := token.NewFileSet()
	var names []string
	exported, pointer := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			fmt.Fprintln(os.Stderr, "controller-methods:", err)
			os.Exit(1)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			t, ptr := fn.Recv.List[0].Type, false
			if s, ok := t.(*ast.StarExpr); ok {
				t, ptr = s.X, true
			}
			if id, ok := t.(*ast.Ident); !ok || id.Name != *typ {
				continue
			}
			names = append(names, fn.Name.Name)
			if fn.Name.IsExported() {
				exported++
			}
			if ptr {
				pointer++
			}
		}
	}
	fmt.Printf("methods=%d exported=%d unexported=%d pointer=%d\n", len(names), exported, len(names)-exported, pointer)
	if *verbose {
		sort.Strings(names)
		for _, n := range names {
			fmt.Println(n)
		}
	}
}
