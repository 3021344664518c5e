package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wren-broker/wren/config"
)

const configTestdata = "../testdata/config"

func TestConfigCheckValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configTestdata, "valid", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid config files: %v", err)
	}
	// Silent but for warnings about settings not in effect yet.
	quiet := func(r result) bool {
		for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			if line != "" && !strings.Contains(line, ": warning: ") {
				return false
			}
		}
		return r.stdout == ""
	}
	for _, f := range files {
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Voters) > 1 {
			// Valid, but not something this build serves: check says so
			// as serve would (TestConfigCheckRefusesWhatServeRefuses).
			continue
		}
		r := mustRun(t, "", "config", "check", f)
		if !quiet(r) {
			t.Errorf("config check %s printed stdout %q stderr %q, want nothing but warnings", f, r.stdout, r.stderr)
		}
		// The file may be named by --config as well, as serve and dump
		// name it.
		if r2 := mustRun(t, "", "config", "check", "--config", f); r2 != r {
			t.Errorf("config check --config %s printed stdout %q stderr %q, want what config check FILE does", f, r2.stdout, r2.stderr)
		}
	}
}

// Settings accepted but not applied yet are warned about by name and line;
// the file is still valid (exit 0).
func TestConfigCheckWarnsNotInEffect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.toml")
	if err := os.WriteFile(path, []byte("[cluster]\ncontroller.quorum.election.timeout.ms = 1000\n\n[storage]\nlog.cleaner.threads = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "config", "check", path)
	want := path + ":2:1: warning: controller.quorum.election.timeout.ms is not in effect in wren yet (the election times out after controller.quorum.fetch.timeout.ms plus up to controller.quorum.election.backoff.max.ms)\n" +
		path + ":5:1: warning: log.cleaner.threads is not in effect in wren yet (the cleaner runs one pass at a time)\n"
	if r.stderr != want || r.stdout != "" {
		t.Errorf("config check: stderr\n%s\nwant\n%s", r.stderr, want)
	}
	var res configCheckResult
	decodeJSON(t, mustRun(t, "", "config", "check", path, "--format", "json").stdout, &res)
	if !res.Valid || len(res.Warnings) != 2 || res.Warnings[0].Key != "controller.quorum.election.timeout.ms" || res.Warnings[1].Line != 5 {
		t.Errorf("config check --format json: %+v", res)
	}
}

// Two log dirs: config check refuses them with serve's message.
func TestConfigCheckLogDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dirs.toml")
	if err := os.WriteFile(path, []byte("[broker]\nlog.dirs = [\"/a\", \"/b\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustFail(t, "", "config", "check", path)
	if !strings.Contains(r.stderr, ":2:1: log.dirs: wren serves exactly one log dir for now; log.dirs has 2") {
		t.Errorf("config check: stderr %q", r.stderr)
	}
	var res configCheckResult
	decodeJSON(t, mustFail(t, "", "config", "check", "--config", path, "--format", "json").stdout, &res)
	if res.Valid || len(res.Errors) != 1 || res.Errors[0].Key != "log.dirs" {
		t.Errorf("config check --format json: %+v", res)
	}
	// serve refuses the same file with the same words.
	served := errors.New("not run")
	env := Env{Serve: func(_ context.Context, o ServeOptions) error {
		_, err := config.Load(o.ConfigPath)
		served = err
		return err
	}}
	_ = Main(context.Background(), env, []string{"wren", "serve", "-c", path})
	if served == nil || !strings.Contains(served.Error(), "wren serves exactly one log dir for now; log.dirs has 2") {
		t.Errorf("serve: %v", served)
	}
}

// A valid three-voter file passes config check: serve runs it (the
// metadata quorum), so check refuses nothing serve would take.
func TestConfigCheckAcceptsThreeVoters(t *testing.T) {
	src := filepath.Join(configTestdata, "valid", "three-node.toml")
	mustRun(t, "", "config", "check", src)
}

// One way to name the file, both spellings: the argument or --config, for
// check and dump alike; two different files are refused.
func TestConfigFileNaming(t *testing.T) {
	src := filepath.Join(configTestdata, "valid", "three-node.toml")
	a := mustRun(t, "", "config", "dump", src).stdout
	b := mustRun(t, "", "config", "dump", "-c", src).stdout
	if a == "" || a != b {
		t.Errorf("config dump FILE and dump -c FILE differ:\n%s\n---\n%s", a, b)
	}
	other := filepath.Join(configTestdata, "valid", "minimal.toml")
	for _, cmd := range []string{"check", "dump"} {
		r := mustFail(t, "", "config", cmd, src, "--config", other)
		if r.code != 2 || !strings.Contains(r.stderr, "name different files") {
			t.Errorf("config %s FILE --config OTHER: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
	var settings []config.Setting
	decodeJSON(t, mustRun(t, "", "config", "dump", src, "--format", "json").stdout, &settings)
	if len(settings) == 0 || settings[0].Name != "log.dirs" || settings[0].Default {
		t.Errorf("config dump --format json: %+v", settings)
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
	if _, err := config.Load(path); err != nil {
		t.Fatalf("dumped config does not load: %v", err)
	}
	if a, b := mustRun(t, "", "config", "dump", "--all", "--config", src).stdout,
		mustRun(t, "", "config", "dump", "--all", "--config", path).stdout; a != b {
		t.Errorf("dump --all differs after a round trip through dump:\n%s\n---\n%s", a, b)
	}
	r := mustFail(t, "", "config", "dump", "--config", filepath.Join(configTestdata, "invalid", "syntax.toml"))
	if !strings.Contains(r.stderr, "syntax.toml:") {
		t.Errorf("dump of an invalid file: stderr %q", r.stderr)
	}
}

// A file that lists every voter, with one node's own data directory in a
// [node.N.broker] table; the voters are at addresses of no host
// (TEST-NET-3), so no node is found without --node-id.
func sharedClusterFile(t *testing.T, dirs ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster.toml")
	var b strings.Builder
	b.WriteString("[cluster]\ncontroller.quorum.voters = [\"1@203.0.113.1:9093\", \"2@203.0.113.2:9093\", \"3@203.0.113.3:9093\"]\n")
	for i, d := range dirs {
		fmt.Fprintf(&b, "\n[node.%d.broker]\nlog.dirs = [%q]\n", i+1, d)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// config check warns, by line, about two voters and an even number of
// them, and the file stays valid (exit 0).
func TestConfigCheckWarnsVoterCount(t *testing.T) {
	for voters, want := range map[string]string{
		`"1@203.0.113.1:9093", "2@203.0.113.2:9093"`:                                             ":2:1: warning: controller.quorum.voters lists 2 voters: a majority is 2, so the cluster stops when either one is down",
		`"1@203.0.113.1:9093", "2@203.0.113.2:9093", "3@203.0.113.3:9093", "4@203.0.113.4:9093"`: ":2:1: warning: controller.quorum.voters lists 4 voters",
	} {
		path := filepath.Join(t.TempDir(), "c.toml")
		if err := os.WriteFile(path, []byte("[cluster]\ncontroller.quorum.voters = ["+voters+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, "", "config", "check", "--node-id", "1", path)
		if !strings.Contains(r.stderr, path+want) {
			t.Errorf("config check of [%s]: stderr %q, want %q", voters, r.stderr, path+want)
		}
		var res configCheckResult
		decodeJSON(t, mustRun(t, "", "config", "check", "--node-id", "1", "--format", "json", path).stdout, &res)
		if !res.Valid || len(res.Warnings) != 1 || res.Warnings[0].Key != "controller.quorum.voters" || res.Warnings[0].Line != 2 {
			t.Errorf("config check --format json of [%s]: %+v", voters, res)
		}
	}
}

// A [node.N.*] table for a node that is not a voter is an error with its
// line and key, with or without --node-id.
func TestConfigCheckRefusesNodeTableOfNonVoter(t *testing.T) {
	path := sharedClusterFile(t)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[node.4.broker]\nlog.dirs = [\"/srv/wren-4\"]\n")
	f.Close()
	for _, args := range [][]string{{"config", "check", path}, {"config", "check", "--node-id", "2", path}} {
		r := mustFail(t, "", args...)
		if want := path + ":4:2: table [node.4.*]: node 4 is not a voter (controller.quorum.voters lists node ids 1, 2, 3)"; r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("wren %s: exit %d, stderr %q, want %q", strings.Join(args, " "), r.code, r.stderr, want)
		}
	}
	var res configCheckResult
	r := run(t, "", "config", "check", "--format", "json", path)
	decodeJSON(t, r.stdout, &res)
	if res.Valid || len(res.Errors) != 1 || res.Errors[0].Key != "controller.quorum.voters" || res.Errors[0].Line != 4 {
		t.Errorf("config check --format json: %+v", res)
	}
}

// config dump prints the effective config of the node --node-id or
// WREN_NODE_ID selects, its [node.N.*] tables applied, as serve runs it;
// without either, a shared file whose voters are all elsewhere is refused
// as serve refuses it, rather than dumped as some other node.
func TestConfigDumpNodeID(t *testing.T) {
	path := sharedClusterFile(t, "/srv/wren-1", "/srv/wren-2", "/srv/wren-3")
	out := mustRun(t, "", "config", "dump", "--node-id", "2", path).stdout
	if !strings.Contains(out, `log.dirs = ["/srv/wren-2"]`) || !strings.Contains(out, "node.id = 2") {
		t.Errorf("config dump --node-id 2:\n%s", out)
	}
	t.Setenv("WREN_NODE_ID", "3")
	if out := mustRun(t, "", "config", "dump", path).stdout; !strings.Contains(out, `log.dirs = ["/srv/wren-3"]`) || !strings.Contains(out, "node.id = 3") {
		t.Errorf("WREN_NODE_ID=3 config dump:\n%s", out)
	}
	t.Setenv("WREN_NODE_ID", "")
	r := mustFail(t, "", "config", "dump", path)
	if !strings.Contains(r.stderr, "this node is not found in controller.quorum.voters") || !strings.Contains(r.stderr, "--node-id") {
		t.Errorf("config dump of a shared file without a node id: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := mustFail(t, "", "config", "dump", "--node-id", "7", path); !strings.Contains(r.stderr, "node id 7") {
		t.Errorf("config dump --node-id 7: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A PLAINTEXT client listener that other hosts can reach, beside secured
// ones, is a warning at the listeners line; on loopback, or with no
// secured listener, it is not.
func TestConfigCheckWarnsPlaintextBesideSecured(t *testing.T) {
	for _, tc := range []struct {
		listeners string
		want      string // "" for no warning
	}{
		{`"PLAINTEXT://192.0.2.10:9092", "SASL_PLAINTEXT://192.0.2.10:9094", "CONTROLLER://192.0.2.10:9093"`,
			":3:1: warning: listeners: PLAINTEXT://192.0.2.10:9092 is PLAINTEXT on 192.0.2.10, while SASL_PLAINTEXT (SASL_PLAINTEXT) is secured"},
		{`"PLAINTEXT://127.0.0.1:9092", "SASL_PLAINTEXT://192.0.2.10:9094", "CONTROLLER://192.0.2.10:9093"`, ""},
		{`"PLAINTEXT://localhost:9092", "SASL_PLAINTEXT://192.0.2.10:9094", "CONTROLLER://192.0.2.10:9093"`, ""},
		{`"PLAINTEXT://192.0.2.10:9092", "CONTROLLER://192.0.2.10:9093"`, ""},
	} {
		path := filepath.Join(t.TempDir(), "c.toml")
		file := "[broker]\nnode.id = 1\nlisteners = [" + tc.listeners + "]\n[cluster]\ncontroller.quorum.voters = [\"1@192.0.2.10:9093\"]\n"
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, "", "config", "check", path)
		switch {
		case tc.want == "" && strings.Contains(r.stderr, "PLAINTEXT on"):
			t.Errorf("config check of [%s]: stderr %q, want no PLAINTEXT warning", tc.listeners, r.stderr)
		case tc.want != "" && !strings.Contains(r.stderr, path+tc.want):
			t.Errorf("config check of [%s]: stderr %q, want %q", tc.listeners, r.stderr, path+tc.want)
		}
	}
}
