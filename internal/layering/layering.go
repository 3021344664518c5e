// Package layering checks wren's rules of dependency: which packages may
// reach which, transitively, and what the release binary may link. The
// rules themselves are a table in layering_test.go, each with its reason,
// mirrored in docs/ARCHITECTURE.md ("Dependencies point one way");
// TestLayering checks them over `go list -deps`, and TestReleaseBinary
// checks the linker's view of the release binary.
//
// The checks are functions of plain data (a package graph, the linker's
// dependency dump), so a test can feed them a graph that breaks a rule
// and see the message a real break would print: the path of imports that
// breaks it, A -> B -> C.
//
// Packages are named by import path, with wren's module path shortened to
// "wren" ("wren/kafka", "wren" for the main package); standard library
// and third-party packages keep theirs. A pattern is a package name, or a
// name followed by "/..." for that package and every package below it, as
// the go command reads them.
package layering

import (
	"fmt"
	"slices"
	"strings"
)

// Module is wren's module path, which package names shorten to "wren".
const Module = "github.com/wren-broker/wren"

// Name shortens an import path: wren's module path becomes "wren".
func Name(importPath string) string {
	if importPath == Module || strings.HasPrefix(importPath, Module+"/") {
		return "wren" + strings.TrimPrefix(importPath, Module)
	}
	return importPath
}

// Graph maps each package to the packages it imports directly.
type Graph map[string][]string

// Rule says that the packages From names (less Exempt) must not reach
// any package Reach names (less Except): not through any path of imports,
// or, with Direct, not by their own imports.
type Rule struct {
	Name string
	// From are the patterns of the packages the rule constrains.
	From []string
	// Exempt are packages From matches that the rule leaves out.
	Exempt []string
	// Reach are the patterns of the packages they must not reach.
	Reach []string
	// Except are packages Reach matches that they may reach.
	Except []string
	// Direct checks only the packages' own imports. For the standard
	// library's os, time or sync, which fmt already imports, the
	// transitive rule would forbid every package.
	Direct bool
	// Allow are imports the rule does not follow: known breaks, each with
	// its reason, waiting for a fix. Check fails on one that no longer
	// exists or no longer hides a break, so it is deleted with the break.
	Allow []Edge
	// Why is the reason, printed with every break.
	Why string
}

// Edge is one import, From importing To; Why says why it is allowed.
type Edge struct {
	From, To string
	Why      string
}

// Match reports whether package name matches pattern.
func Match(pattern, name string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return name == base || strings.HasPrefix(name, base+"/")
	}
	return name == pattern
}

func matchAny(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return Match(p, name) })
}

// Check returns one message per break of rules in g, sorted, and one per
// mistake in the rules themselves: a From, Exempt or wren package pattern
// that matches no package of g (a rename the table missed), an Allow edge
// that g lacks or that hides no break any more.
func Check(g Graph, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		for _, p := range slices.Concat(r.From, r.Exempt, r.Except, r.Reach) {
			wren := p == "wren" || strings.HasPrefix(p, "wren/")
			if slices.Contains(r.Reach, p) && !wren {
				continue // a standard package nothing reaches is the rule kept
			}
			if !matchesSome(g, p) {
				out = append(out, fmt.Sprintf("rule %q: pattern %s matches no package", r.Name, p))
			}
		}
		out = append(out, check(g, r)...)
		for _, e := range r.Allow {
			if !slices.Contains(g[e.From], e.To) {
				out = append(out, fmt.Sprintf("rule %q: allowed import %s -> %s no longer exists: delete the exception (%s)", r.Name, e.From, e.To, e.Why))
				continue
			}
			if !hidesBreak(g, r, e) {
				out = append(out, fmt.Sprintf("rule %q: allowed import %s -> %s hides no break any more: delete the exception (%s)", r.Name, e.From, e.To, e.Why))
			}
		}
	}
	slices.Sort(out)
	return out
}

// hidesBreak reports whether e is on a path r forbids: a package r
// constrains reaches e.From, and e.To is forbidden or reaches a forbidden
// package (not through r's allowed imports).
func hidesBreak(g Graph, r Rule, e Edge) bool {
	from := false
	for name := range g {
		if constrains(r, name) && (name == e.From || reaches(g, r, name, func(n string) bool { return n == e.From })) {
			from = true
			break
		}
	}
	return from && (forbids(r, e.To) || reaches(g, r, e.To, func(n string) bool { return forbids(r, n) }))
}

// reaches reports whether a package that target accepts is reachable
// from start, not through r's allowed imports.
func reaches(g Graph, r Rule, start string, target func(string) bool) bool {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if seen[q] || allows(r.Allow, p, q) {
				continue
			}
			if target(q) {
				return true
			}
			seen[q] = true
			queue = append(queue, q)
		}
	}
	return false
}

func constrains(r Rule, name string) bool {
	return matchAny(r.From, name) && !slices.Contains(r.Exempt, name)
}

func forbids(r Rule, name string) bool {
	return matchAny(r.Reach, name) && !matchAny(r.Except, name)
}

func allows(allow []Edge, from, to string) bool {
	return slices.ContainsFunc(allow, func(e Edge) bool { return e.From == from && e.To == to })
}

func matchesSome(g Graph, pattern string) bool {
	for name := range g {
		if Match(pattern, name) {
			return true
		}
	}
	return false
}

// check returns r's breaks in g, not following the allow edges. Each
// break is reported once per last import (the one that lands on the
// forbidden package), by the shortest path from any package r
// constrains: one wrong import prints one line, not one per package above
// it or below it.
func check(g Graph, r Rule) []string {
	shortest := make(map[[2]string][]string) // last import -> path
	var from []string
	for name := range g {
		if constrains(r, name) {
			from = append(from, name)
		}
	}
	slices.Sort(from)
	for _, start := range from {
		// Breadth first, so each package is first met by a shortest path.
		parent := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, q := range g[p] {
				if _, seen := parent[q]; seen || allows(r.Allow, p, q) {
					continue
				}
				parent[q] = p
				if forbids(r, q) {
					// Reported here; what it reaches in turn is its own
					// business, and one wrong import prints one line.
					var path []string
					for n := q; n != ""; n = parent[n] {
						path = append(path, n)
					}
					slices.Reverse(path)
					if old, ok := shortest[[2]string{p, q}]; !ok || len(path) < len(old) {
						shortest[[2]string{p, q}] = path
					}
					continue
				}
				if !r.Direct {
					queue = append(queue, q)
				}
			}
		}
	}
	var out []string
	for _, path := range shortest {
		out = append(out, fmt.Sprintf("rule %q broken: %s\n\twhy the rule: %s", r.Name, strings.Join(path, " -> "), r.Why))
	}
	slices.Sort(out)
	return out
}

// LinkBreaks reads the linker's dependency dump (go build
// -ldflags=-dumpdep: one "from -> to" line per symbol the linker keeps,
// each first met from a symbol already kept) and reports what the release
// binary must not hold:
//   - a symbol flagged <ReflectMethod>: a reflect.Value.Method or
//     MethodByName call with a name known only at run time, as in
//     text/template, which makes the linker keep every exported method of
//     every type (2.5 MiB for wren);
//   - a symbol of a package in forbidden (net/http: about 1.5 MiB).
//
// Each is reported with the chain of symbols that made the linker keep
// it, from the program's entry. Functions' auxiliary data symbols are
// left out (see aux).
func LinkBreaks(dump string, forbidden []string) []string {
	parent := make(map[string]string) // symbol -> the symbol it was first kept for
	var out []string
	reported := make(map[string]bool)
	for line := range strings.Lines(dump) {
		from, to, ok := strings.Cut(strings.TrimSpace(line), " -> ")
		if !ok {
			continue
		}
		fromSym, toSym := symbol(from), symbol(to)
		if aux(fromSym) || aux(toSym) {
			continue
		}
		if _, seen := parent[toSym]; !seen && toSym != fromSym {
			parent[toSym] = fromSym
		}
		var why string
		switch {
		case strings.Contains(to, "<ReflectMethod>"):
			why = "calls a method by a name known only at run time (<ReflectMethod>): the linker keeps every exported method"
		default:
			for _, pkg := range forbidden {
				if symbolPackage(toSym) == pkg {
					why = "links " + pkg
					break
				}
			}
		}
		if why == "" || reported[why] {
			continue
		}
		reported[why] = true
		chain := []string{toSym}
		for n, hops := fromSym, 0; n != "" && hops < 40; n, hops = parent[n], hops+1 {
			chain = append(chain, n)
		}
		slices.Reverse(chain)
		out = append(out, fmt.Sprintf("the binary %s:\n\t%s", why, strings.Join(chain, "\n\t-> ")))
	}
	return out
}

// aux reports whether sym is read-only data the compiler may mark as
// content-addressable: a function's auxiliary data (argument and stack
// maps, defer and wrapper info) or a package's static temporaries. The
// linker stores equal contents once, under the name of whichever symbol it
// met first, so such a symbol can carry the name of a package whose code
// is not linked at all (net/http..stmp_328 kept for net's dialer).
func aux(sym string) bool {
	last := sym[strings.LastIndex(sym, ".")+1:]
	switch last {
	case "arginfo0", "arginfo1", "argliveinfo", "args_stackmap", "stkobj", "opendefer", "wrapinfo":
		return true
	}
	return strings.HasPrefix(last, "stmp_")
}

// symbol drops the flags the dump adds after a name ("<UsedInIface>").
func symbol(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		return s[:i]
	}
	return s
}

// symbolPackage is the package path of a symbol name such as
// net/http.(*Server).Serve or type:*net/http.Request.
func symbolPackage(sym string) string {
	sym = strings.TrimPrefix(sym, "type:")
	sym = strings.TrimLeft(sym, "*[]")
	slash := strings.LastIndex(sym, "/")
	dot := strings.Index(sym[slash+1:], ".")
	if dot < 0 {
		return ""
	}
	return sym[:slash+1+dot]
}
