// Package datadriven runs test scripts in the style of etcd raft's
// rafttest: a script under testdata/ is a sequence of cases
//
//	# comments
//	command arg key=value ...
//	----
//	expected output (no blank lines)
//
// separated by blank lines. Each case's command goes to a handler that
// returns the actual output; `go test -run X -rewrite` writes the actual
// output back into the script.
//
// It is about a hundred lines so that the state-machine packages
// (election, and later cluster and replication) share one runner without
// a dependency; cockroachdb/datadriven does more (multi-line input,
// subtests) than these scripts need.
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of datadriven scripts")

// Cmd is one command of a script.
type Cmd struct {
	Pos  string   // file:line, for failures
	Name string   // the first word
	Args []string // the words after it without an '='
	keys map[string]string
	seen map[string]bool
}

// Has reports whether key=... was given.
func (c *Cmd) Has(key string) bool {
	_, ok := c.keys[key]
	c.seen[key] = true
	return ok
}

// Str returns key's value, or def.
func (c *Cmd) Str(key, def string) string {
	c.seen[key] = true
	if v, ok := c.keys[key]; ok {
		return v
	}
	return def
}

// Int returns key's value as an integer, or def.
func (c *Cmd) Int(t testing.TB, key string, def int) int {
	s := c.Str(key, "")
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c.Pos, key, s, err)
	}
	return v
}

// Int64 is Int for values that need 64 bits on every platform (offsets,
// producer ids): int is 32 bits on armv7.
func (c *Cmd) Int64(t testing.TB, key string, def int64) int64 {
	s := c.Str(key, "")
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c.Pos, key, s, err)
	}
	return v
}

// IntArgs returns the positional arguments as integers.
func (c *Cmd) IntArgs(t testing.TB) []int {
	out := make([]int, len(c.Args))
	for i, a := range c.Args {
		v, err := strconv.Atoi(a)
		if err != nil {
			t.Fatalf("%s: argument %q: %v", c.Pos, a, err)
		}
		out[i] = v
	}
	return out
}

func parse(pos, line string) *Cmd {
	fields := strings.Fields(line)
	c := &Cmd{Pos: pos, Name: fields[0], keys: map[string]string{}, seen: map[string]bool{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.keys[k] = v
		} else {
			c.Args = append(c.Args, f)
		}
	}
	return c
}

// RunFile runs every case of the script at path through handle and
// compares (or, with -rewrite, replaces) the expected output. An empty
// output is written "ok".
func RunFile(t *testing.T, path string, handle func(*Cmd) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out = append(out, line)
			continue
		}
		pos := fmt.Sprintf("%s:%d", filepath.Base(path), i+1)
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s: command %q not followed by ----", pos, line)
		}
		j := i + 2
		for j < len(lines) && strings.TrimSpace(lines[j]) != "" {
			j++
		}
		expected := strings.Join(lines[i+2:j], "\n")
		c := parse(pos, line)
		actual := strings.TrimRight(handle(c), "\n")
		for k := range c.keys {
			if !c.seen[k] {
				t.Fatalf("%s: %s: unknown argument %q", pos, c.Name, k)
			}
		}
		if actual == "" {
			actual = "ok"
		}
		if strings.Contains(actual, "\n\n") {
			t.Fatalf("%s: output has a blank line:\n%s", pos, actual)
		}
		if !*rewrite && actual != expected {
			t.Errorf("%s: %s\nexpected:\n%s\nactual:\n%s", pos, line, expected, actual)
		}
		out = append(out, line, "----", actual)
		i = j - 1
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// RunDir runs every testdata/*.txt script as a subtest; newHandler gives
// each script a fresh environment.
func RunDir(t *testing.T, dir string, newHandler func(t *testing.T) func(*Cmd) string) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no scripts in %s", dir)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			RunFile(t, path, newHandler(t))
		})
	}
}
