package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const configTestdata = "../config/testdata"

func TestConfigCheckValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configTestdata, "valid", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid config files: %v", err)
	}
	for _, f := range files {
		r := mustRun(t, "", "config", "check", f)
		if r.stdout != "" || r.stderr != "" {
			t.Errorf("config check %s printed stdout %q stderr %q, want nothing", f, r.stdout, r.stderr)
		}
	}
}

// Every invalid file fails with exit 1 and exactly the FILE:LINE:COL lines
// its "# want: " comments give (the config package's own contract), and
// nothing else.
func TestConfigCheckInvalid(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join(configTestdata, "invalid"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid config files: %v", err)
	}
	t.Chdir(dir) // the want lines name the file as given: its base name
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		for _, line := range strings.Split(string(data), "\n") {
			if w, ok := strings.CutPrefix(line, "# want: "); ok {
				want.WriteString(w + "\n")
			}
		}
		r := run(t, "", "config", "check", filepath.Base(f))
		if r.code != 1 {
			t.Errorf("config check %s: exit %d, want 1", filepath.Base(f), r.code)
		}
		if r.stderr != want.String() || r.stdout != "" {
			t.Errorf("config check %s printed\nstderr:\n%s\nstdout:\n%s\nwant on stderr:\n%s", filepath.Base(f), r.stderr, r.stdout, want.String())
		}
	}
}

func TestConfigCheckMissingFile(t *testing.T) {
	r := mustFail(t, "", "config", "check", filepath.Join(t.TempDir(), "none.toml"))
	if !strings.Contains(r.stderr, "no such file") {
		t.Errorf("stderr %q", r.stderr)
	}
	mustFail(t, "", "config", "check")
}

// config dump prints TOML that config check accepts, and dump --all of it
// again is the same: what is printed is what is loaded.
func TestConfigDump(t *testing.T) {
	if out := mustRun(t, "", "config", "dump").stdout; strings.Contains(out, "node.id") {
		t.Errorf("dump of the defaults should hold no setting, got:\n%s", out)
	}
	all := mustRun(t, "", "config", "dump", "--all").stdout
	if !strings.Contains(all, "[broker]") || !strings.Contains(all, "node.id") {
		t.Fatalf("dump --all lacks [broker] node.id:\n%s", all)
	}
	src := filepath.Join(configTestdata, "valid", "three-node.toml")
	dumped := mustRun(t, "", "config", "dump", "--config", src).stdout
	if dumped == "" {
		t.Fatalf("dump of %s printed nothing", src)
	}
	path := filepath.Join(t.TempDir(), "dumped.toml")
	if err := os.WriteFile(path, []byte(dumped), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "config", "check", path)
	if a, b := mustRun(t, "", "config", "dump", "--all", "--config", src).stdout,
		mustRun(t, "", "config", "dump", "--all", "--config", path).stdout; a != b {
		t.Errorf("dump --all differs after a round trip through dump:\n%s\n---\n%s", a, b)
	}
	r := mustFail(t, "", "config", "dump", "--config", filepath.Join(configTestdata, "invalid", "syntax.toml"))
	if !strings.Contains(r.stderr, "syntax.toml:") {
		t.Errorf("dump of an invalid file: stderr %q", r.stderr)
	}
}
