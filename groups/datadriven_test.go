package groups

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A tiny datadriven runner in the style of etcd raft's rafttest: a script
// is a sequence of
//
//	# comments
//	command key=value flag ...
//	----
//	expected output (no blank lines)
//
// separated by blank lines. go test -run TestDataDriven -rewrite rewrites
// the expected output in place.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of datadriven scripts")

type ddCmd struct {
	pos  string // file:line, for failures
	name string
	args map[string]string
	seen map[string]bool
}

func (d *ddCmd) has(key string) bool {
	_, ok := d.args[key]
	if ok {
		d.seen[key] = true
	}
	return ok
}

func (d *ddCmd) str(key, def string) string {
	if v, ok := d.args[key]; ok {
		d.seen[key] = true
		return v
	}
	return def
}

func (d *ddCmd) int(t *testing.T, key string, def int64) int64 {
	v, ok := d.args[key]
	if !ok {
		return def
	}
	d.seen[key] = true
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", d.pos, key, v, err)
	}
	return n
}

func (d *ddCmd) checkAllUsed(t *testing.T) {
	for k := range d.args {
		if !d.seen[k] {
			t.Fatalf("%s: %s: unknown argument %q", d.pos, d.name, k)
		}
	}
}

func parseCmd(pos, line string) *ddCmd {
	fields := strings.Fields(line)
	d := &ddCmd{pos: pos, name: fields[0], args: map[string]string{}, seen: map[string]bool{}}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		d.args[k] = v
	}
	return d
}

// runScript runs every case of path through handle and compares (or, with
// -rewrite, replaces) the expected output.
func runScript(t *testing.T, path string, handle func(*ddCmd) string) {
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
		d := parseCmd(pos, line)
		actual := strings.TrimRight(handle(d), "\n")
		d.checkAllUsed(t)
		if actual == "" {
			actual = "ok"
		}
		for _, l := range strings.Split(actual, "\n") {
			if strings.TrimSpace(l) == "" {
				t.Fatalf("%s: output has a blank line:\n%s", pos, actual)
			}
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

func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			env := newTestEnv(t)
			runScript(t, path, env.handle)
		})
	}
}
