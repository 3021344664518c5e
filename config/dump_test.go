package config

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite config.example.toml from the registry")

// checkRoundTrip asserts that both dumps of c load back to c.
func checkRoundTrip(t interface {
	Helper()
	Fatalf(string, ...any)
}, c *Config) {
	t.Helper()
	for _, all := range []bool{true, false} {
		out := c.Dump(all)
		back, err := Parse("dump.toml", []byte(out))
		if err != nil {
			t.Fatalf("Dump(%v) does not load: %v\n%s", all, err, out)
		}
		if !back.Equal(c) {
			t.Fatalf("Dump(%v) loads to a different config:\n%s\nwas:\n%s", all, back.Dump(true), out)
		}
	}
}

func TestDumpDefault(t *testing.T) {
	d := Default()
	if got, want := d.Dump(false), "# Effective configuration: settings that differ from their defaults.\n"; got != want {
		t.Errorf("Dump(false) of the defaults:\n%s", got)
	}
	checkRoundTrip(t, d)
}

func TestDumpShowsChanges(t *testing.T) {
	c, err := Parse("config.toml", []byte("[storage]\nlog.retention.hours = 24\n[http]\nlisten = \"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Effective configuration: settings that differ from their defaults.\n" +
		"\n[storage]\nlog.retention.hours = 24\n" +
		"\n[http]\nlisten = \"\"\n"
	if got := c.Dump(false); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestQuoteTOML(t *testing.T) {
	in := "a\"b\\c\nd\te\x01f\x7fg\xffé"
	got := quoteTOML(in)
	if want := `"a\"b\\c\nd\te\u0001f\u007Fg\uFFFDé"`; got != want {
		t.Errorf("quoteTOML = %s, want %s", got, want)
	}
	c, err := Parse("q.toml", []byte("[broker]\nlog.dirs = ["+quoteTOML("/data/\"odd\" dir\\\t")+"]\n"))
	if err != nil || c.LogDirs[0] != "/data/\"odd\" dir\\\t" {
		t.Errorf("quoted path does not read back: %v %q", err, c.LogDirs)
	}
}

// config.example.toml at the repository root is generated from the
// registry; run with -update to rewrite it.
func TestExampleFile(t *testing.T) {
	const path = "../config.example.toml"
	want := ExampleFile()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestExampleFile -update)", err)
	}
	if string(got) != want {
		t.Fatalf("config.example.toml is out of date with the registry: run go test ./config -run TestExampleFile -update")
	}

	// One file for the whole cluster is documented, with its node
	// tables and the flag that picks the node.
	for _, s := range []string{"[node.2.broker]", "--node-id", "WREN_NODE_ID", "[node.N.SECTION]"} {
		if !strings.Contains(want, s) {
			t.Errorf("config.example.toml does not mention %s", s)
		}
	}

	// Uncommenting every setting gives the defaults, and lists every key.
	lines := regexp.MustCompile(`(?m)^#([a-z."]+ = .*)$`)
	uncommented := lines.ReplaceAllString(want, "$1")
	c, err := Parse("config.example.toml", []byte(uncommented))
	if err != nil {
		t.Fatalf("uncommented example does not load: %v", err)
	}
	if !c.Equal(Default()) {
		t.Errorf("uncommented example is not the defaults:\n%s", c.Dump(false))
	}
	for _, e := range Entries() {
		if _, set := c.Position(e.Name); !set && e.Default != nil {
			t.Errorf("example has no line for %s", e.Name)
		}
		if !regexp.MustCompile(`(?m)^# ` + regexp.QuoteMeta(e.Key()) + ` \(`).MatchString(want) {
			t.Errorf("example does not document %s", e.Name)
		}
	}
}
