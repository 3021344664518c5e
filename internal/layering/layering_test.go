package layering

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pureCores are the decision-making cores: pure state machines that take
// inputs and return what to persist, send and answer, while drivers beside
// them do the I/O (docs/ARCHITECTURE.md). pureCoreFiles are the ones that
// share a package with their driver.
var (
	pureCores     = []string{"wren/election", "wren/cluster/metalog", "wren/groups", "wren/groups/assign", "wren/txn"}
	pureCoreFiles = []string{"replication/core.go"}
	// pureCoreImportsNot are what a pure core's own code never imports:
	// no clock (time is ticks), no files, no sockets, no locks or
	// goroutines to coordinate, no cancellation.
	pureCoreImportsNot = []string{"os", "io/fs", "syscall", "time", "net", "sync", "sync/atomic", "context", "log/slog"}
)

// rules are the dependency rules of docs/ARCHITECTURE.md ("Dependencies
// point one way"), which lists them in the same order. They constrain
// what ships: test files may import anything.
var rules = []Rule{
	{
		Name:  "kafka stays behind its seam",
		From:  []string{"wren/kafka/..."},
		Reach: []string{"wren/replication/...", "wren/groups/coordinator", "wren/txn/coordinator", "wren/ops", "wren/broker", "wren/cli"},
		Why: "the handlers act on the broker only through the interfaces of kafka/seam.go (broker/seam.go adapts " +
			"the concrete types), so each API is tested beside its file with small fakes",
	},
	{
		Name:  "the metadata quorum never reaches the storage engine",
		From:  []string{"wren/cluster/..."},
		Reach: []string{"wren/engine/..."},
		Why:   "the metadata log lives on wal; moving its bytes takes the wire's framing, never partition logs",
	},
	{
		Name:  "cluster sits below replication, groups and the protocol",
		From:  []string{"wren/cluster/..."},
		Reach: []string{"wren/kafka", "wren/replication/...", "wren/groups/...", "wren/txn/...", "wren/ops", "wren/broker", "wren/cli"},
		Why:   "they read the committed image and ask the controller for changes; the controller never calls up into them",
	},
	{
		Name:  "replication sits below the group coordinator and beside the protocol",
		From:  []string{"wren/replication/..."},
		Reach: []string{"wren/kafka", "wren/groups/...", "wren/txn/...", "wren/ops", "wren/broker", "wren/cli"},
		Why: "followers speak Fetch through the wire leaf, not through the client protocol's server; " +
			"the group coordinator's state lives on replicas of __consumer_offsets",
	},
	{
		Name:  "the group coordinator's driver sits below the protocol",
		From:  []string{"wren/groups/coordinator"},
		Reach: []string{"wren/kafka", "wren/ops", "wren/broker", "wren/cli"},
		Why:   "kafka drives it through the GroupCoordinator interface of its seam",
	},
	{
		Name:  "the transaction coordinator's driver sits below the protocol",
		From:  []string{"wren/txn/coordinator"},
		Reach: []string{"wren/kafka", "wren/groups/...", "wren/ops", "wren/broker", "wren/cli"},
		Why: "kafka drives it through the TxnCoordinator interface of its seam, and the broker hands it the " +
			"markers' transport; the group coordinator's markers go through the seam too",
	},
	{
		Name:  "the engine never imports anything above it",
		From:  []string{"wren/engine"},
		Reach: []string{"wren/..."},
		Except: []string{"wren/engine/...", "wren/wal", "wren/wire", "wren/internal/vfs", "wren/internal/membudget",
			"wren/internal/invariants"},
		Why: "partition logs are storage: replication, the metadata and the protocol use them, never the reverse",
	},
	{
		Name:   "engine/producer sits on engine/batch only",
		From:   []string{"wren/engine/producer"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/engine/batch", "wren/internal/membudget"},
		Why:    "producer state is rebuilt from batches by the engine, and snapshotted by it",
	},
	{
		Name:   "engine/batch is a leaf of the engine",
		From:   []string{"wren/engine/batch"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/internal/membudget"},
		Why:    "batch validation and codecs serve the engine, the protocol and the CLI alike",
	},
	{
		Name:   "wal sits on the file-system seam only",
		From:   []string{"wren/wal"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/internal/vfs"},
		Why:    "the checksummed log under the metadata log and the engine's group commit; all its file access goes through internal/vfs",
	},
	{
		Name:   "the wire leaf sits below everything that speaks Kafka's bytes",
		From:   []string{"wren/wire"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/internal/vfs"},
		Why: "framing, request headers, the spliced Fetch encoder and the file-range writer serve the client " +
			"protocol, replication, the peer transport and the engine's reads alike; an import from it would put one of them under another",
	},
	{
		Name:  "the peer layer carries the quorum's messages and replica fetches without knowing either",
		From:  []string{"wren/peer"},
		Reach: []string{"wren/cluster/...", "wren/replication/...", "wren/engine/..."},
		Why: "the CONTROLLER listener's connections (handshake, identity, framing) serve two clients, the metadata " +
			"quorum's transport and replication's replica connections; they sit on it, never it on them",
	},
	{
		Name: "shared leaves import nothing of wren",
		From: []string{"wren/internal/vfs", "wren/internal/membudget", "wren/internal/health", "wren/internal/invariants",
			"wren/internal/buildinfo", "wren/internal/sdnotify", "wren/security/scram", "wren/security/principal", "wren/security/acl"},
		Reach: []string{"wren/..."},
		Why:   "several layers share them; an import from a leaf would put one layer under another",
	},
	{
		Name:   "config is a shared leaf but for the principal mapping rules it checks at load",
		From:   []string{"wren/config"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/security/principal"},
		Why: "every layer reads config; ssl.principal.mapping.rules is refused at load with its key and line, " +
			"so config parses it with security/principal, itself a leaf",
	},
	{
		Name:   "security/acl imports the standard library and kmsg only",
		From:   []string{"wren/security/acl"},
		Reach:  []string{"github.com/...", "golang.org/...", "pgregory.net/..."},
		Except: []string{"github.com/twmb/franz-go/pkg/kmsg"},
		Direct: true,
		Why: "the authorizer sits on every request's path and is shared by cluster, the protocol and the broker: " +
			"plain values and an index over kmsg's enums, nothing that could pull a client or a codec under it",
	},
	{
		Name: "the pure cores reach no I/O",
		From: pureCores,
		Reach: []string{"wren/...", "net", "golang.org/x/sys/unix", "log/slog", "os/exec", "os/signal",
			"github.com/twmb/franz-go/pkg/kgo"},
		Except: []string{"wren/election", "wren/groups/assign", "wren/internal/invariants"},
		Why: "a pure core takes inputs and returns what to persist, send and answer; the drivers beside it " +
			"do the I/O, which is what makes deterministic tests and the simulators possible",
	},
	{
		Name:   "the pure cores' own code reads no clock, file or socket",
		From:   pureCores,
		Reach:  pureCoreImportsNot,
		Direct: true,
		Why: "time is ticks, storage and messages are the driver's; fmt and its kind reach os and time " +
			"underneath, so this rule is on the cores' own imports",
	},
	{
		Name:  "nothing below the broker reaches the uplink",
		From:  []string{"wren/kafka/...", "wren/cluster/...", "wren/replication/...", "wren/engine/..."},
		Reach: []string{"wren/uplink"},
		Why: "the uplink is a client of the node (its own listener, a far cluster): the broker runs it after the " +
			"kafka listener, and the layers that serve clients never call out to it",
	},
	{
		Name:   "the uplink sits on config and franz-go's client only",
		From:   []string{"wren/uplink"},
		Reach:  []string{"wren/..."},
		Except: []string{"wren/config", "wren/security/principal"},
		Why: "it reads the local topics through the node's own listener and writes the far side with kgo, so it needs " +
			"none of the node's insides; config (with the principal rules it checks) gives its [uplink.NAME] table",
	},
	{
		Name:   "only broker and cli import ops",
		From:   []string{"wren/..."},
		Exempt: []string{"wren", "wren/broker", "wren/cli", "wren/ops"},
		Reach:  []string{"wren/ops"},
		Why: "ops is the operations edge (HTTP server, metrics registry): the packages that do the work report " +
			"to their own observer interfaces, and the health values they share are internal/health's",
	},
	{
		Name:   "only main imports broker",
		From:   []string{"wren/..."},
		Exempt: []string{"wren", "wren/broker"},
		Reach:  []string{"wren/broker"},
		Why:    "broker assembles a node from every part; a part that imports the assembly cannot be tested without it",
	},
	{
		Name:  "nothing imports net/http",
		From:  []string{"wren/..."},
		Reach: []string{"net/http"},
		Why:   "about 1.5 MiB of the 15 MiB budget; ops answers its four paths itself (TestReleaseBinary checks the linked binary)",
	},
}

// goList runs `go list` in the module's root with the release build's
// settings (scripts/build.sh) and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root is not two levels up: %v", err)
	}
	cmd := exec.Command("go", append([]string{"list", "-tags", "urfave_cli_no_docs"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// moduleGraph is every package of the module and everything they import,
// with the directory and Go files of wren's own.
func moduleGraph(t *testing.T) (g Graph, dirs map[string]string, files map[string][]string) {
	out := goList(t, "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}\t{{join .Imports \" \"}}", "./...")
	g, dirs, files = Graph{}, map[string]string{}, map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q: want 4 tab-separated fields", line)
		}
		name := Name(f[0])
		g[name] = nil
		for _, imp := range strings.Fields(f[3]) {
			g[name] = append(g[name], Name(imp))
		}
		if strings.HasPrefix(name, "wren") {
			dirs[name], files[name] = f[1], strings.Fields(f[2])
		}
	}
	return g, dirs, files
}

// TestLayering checks rules over the module's real package graph.
func TestLayering(t *testing.T) {
	start := time.Now()
	g, _, _ := moduleGraph(t)
	if len(g) < 100 || g["wren/kafka"] == nil {
		t.Fatalf("the graph has %d packages and wren/kafka imports %v: go list did not list the module", len(g), g["wren/kafka"])
	}
	for _, msg := range Check(g, rules) {
		t.Error(msg)
	}
	t.Logf("%d rules over %d packages in %v", len(rules), len(g), time.Since(start).Round(time.Millisecond))
}

// TestPureCoresStartNoGoroutines: the pure cores' files hold no go
// statement, and the pure core files that share a package with their
// driver import nothing a pure core's own code may not.
func TestPureCoresStartNoGoroutines(t *testing.T) {
	_, dirs, files := moduleGraph(t)
	var paths []string
	for _, pkg := range pureCores {
		if dirs[pkg] == "" {
			t.Fatalf("pure core %s is not in the module", pkg)
		}
		for _, f := range files[pkg] {
			paths = append(paths, filepath.Join(dirs[pkg], f))
		}
	}
	root := filepath.Dir(dirs["wren/kafka"])
	for _, f := range pureCoreFiles {
		paths = append(paths, filepath.Join(root, f))
	}
	fset := token.NewFileSet()
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s:%d: a go statement in a pure core: its driver runs the goroutines", rel, fset.Position(g.Pos()).Line)
			}
			return true
		})
		if slices.Contains(pureCoreFiles, filepath.ToSlash(rel)) {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if slices.Contains(pureCoreImportsNot, p) {
					t.Errorf("%s imports %s: a pure core reads no clock, file or socket", rel, p)
				}
			}
		}
	}
	if len(paths) < 10 {
		t.Fatalf("checked %d files", len(paths))
	}
}

// wrongGraph is a small module with the shapes the rules care about.
func wrongGraph() Graph {
	return Graph{
		"wren":                    {"wren/broker"},
		"wren/broker":             {"wren/kafka", "wren/ops", "wren/replication"},
		"wren/kafka":              {"wren/cluster", "wren/ops", "fmt"},
		"wren/ops":                {"wren/groups/coordinator", "wren/internal/health"},
		"wren/groups/coordinator": {"wren/replication"},
		"wren/replication":        {"wren/cluster", "wren/engine"},
		"wren/cluster":            {"wren/cluster/quorum"},
		"wren/cluster/quorum":     {"wren/kafka/splice", "wren/wal"},
		"wren/kafka/splice":       {"wren/engine"},
		"wren/engine":             {"wren/wal"},
		"wren/wal":                {"os"},
		"wren/internal/health":    {"fmt"},
		"wren/election":           {"fmt", "time"},
		"fmt":                     {"os"},
		"os":                      {"time"},
		"time":                    nil,
	}
}

// TestCheckNamesThePath: a deliberately wrong graph breaks the rules, and
// each break names the path of imports that breaks it.
func TestCheckNamesThePath(t *testing.T) {
	g := wrongGraph()
	rules := []Rule{
		{Name: "seam", From: []string{"wren/kafka/..."}, Reach: []string{"wren/replication", "wren/groups/coordinator", "wren/ops"}, Why: "the seam"},
		{Name: "quorum", From: []string{"wren/cluster/..."}, Reach: []string{"wren/engine/..."}, Why: "no engine"},
		{Name: "ops", From: []string{"wren/..."}, Exempt: []string{"wren", "wren/broker", "wren/ops"}, Reach: []string{"wren/ops"}, Why: "the edge"},
		{Name: "clock", From: []string{"wren/election"}, Reach: []string{"time"}, Direct: true, Why: "ticks"},
		{Name: "clock through fmt", From: []string{"wren/internal/health"}, Reach: []string{"time"}, Direct: true, Why: "ticks"},
	}
	got := Check(g, rules)
	want := []string{
		"rule \"clock\" broken: wren/election -> time\n\twhy the rule: ticks",
		"rule \"ops\" broken: wren/kafka -> wren/ops\n\twhy the rule: the edge",
		"rule \"quorum\" broken: wren/cluster/quorum -> wren/kafka/splice -> wren/engine\n\twhy the rule: no engine",
		"rule \"seam\" broken: wren/kafka -> wren/ops\n\twhy the rule: the seam",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Check reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, msg := range got {
		t.Log(msg)
	}

	// Without the import of ops, the seam rule finds the path through
	// the group coordinator's driver once kafka imports it.
	g["wren/kafka"] = []string{"wren/cluster", "wren/groups/coordinator"}
	got = Check(g, rules[:1])
	want = []string{"rule \"seam\" broken: wren/kafka -> wren/groups/coordinator\n\twhy the rule: the seam"}
	if !slices.Equal(got, want) {
		t.Fatalf("Check reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g["wren/kafka"] = []string{"wren/cluster", "wren/internal/health"}
	g["wren/internal/health"] = []string{"wren/groups/coordinator"}
	got = Check(g, rules[:1])
	want = []string{"rule \"seam\" broken: wren/kafka -> wren/internal/health -> wren/groups/coordinator\n\twhy the rule: the seam"}
	if !slices.Equal(got, want) {
		t.Fatalf("Check reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckAllow: an allowed import hides the break it names, and Check
// fails once the exception is stale, so it is deleted with the fix.
func TestCheckAllow(t *testing.T) {
	rule := Rule{Name: "quorum", From: []string{"wren/cluster/..."}, Reach: []string{"wren/engine/..."}, Why: "no engine",
		Allow: []Edge{{From: "wren/cluster/quorum", To: "wren/kafka/splice", Why: "moving"}}}
	g := wrongGraph()
	if got := Check(g, []Rule{rule}); len(got) != 0 {
		t.Fatalf("the allowed import still breaks the rule: %q", got)
	}
	// The wire code moved to a leaf: splice imports no engine.
	g["wren/kafka/splice"] = nil
	want := []string{`rule "quorum": allowed import wren/cluster/quorum -> wren/kafka/splice hides no break any more: delete the exception (moving)`}
	if got := Check(g, []Rule{rule}); !slices.Equal(got, want) {
		t.Fatalf("Check reported %q, want %q", got, want)
	}
	// The quorum no longer imports splice at all.
	g["wren/cluster/quorum"] = []string{"wren/wal"}
	want = []string{`rule "quorum": allowed import wren/cluster/quorum -> wren/kafka/splice no longer exists: delete the exception (moving)`}
	if got := Check(g, []Rule{rule}); !slices.Equal(got, want) {
		t.Fatalf("Check reported %q, want %q", got, want)
	}
	// A second path to the engine is a break of its own.
	g["wren/cluster/quorum"] = []string{"wren/kafka/splice", "wren/engine"}
	g["wren/kafka/splice"] = []string{"wren/engine"}
	want = []string{"rule \"quorum\" broken: wren/cluster/quorum -> wren/engine\n\twhy the rule: no engine"}
	if got := Check(g, []Rule{rule}); !slices.Equal(got, want) {
		t.Fatalf("Check reported %q, want %q", got, want)
	}
}

// TestCheckTableMistakes: a pattern that names no package (a package
// renamed, a typo) is an error, not a rule that silently holds.
func TestCheckTableMistakes(t *testing.T) {
	g := wrongGraph()
	got := Check(g, []Rule{
		{Name: "typo", From: []string{"wren/kafak"}, Reach: []string{"wren/ops"}},
		{Name: "renamed target", From: []string{"wren/kafka"}, Reach: []string{"wren/replicaton", "net/http"}},
	})
	want := []string{
		`rule "renamed target": pattern wren/replicaton matches no package`,
		`rule "typo": pattern wren/kafak matches no package`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Check reported %q, want %q", got, want)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"wren/kafka", "wren/kafka", true},
		{"wren/kafka", "wren/kafka/splice", false},
		{"wren/kafka/...", "wren/kafka", true},
		{"wren/kafka/...", "wren/kafka/splice", true},
		{"wren/kafka/...", "wren/kafkaesque", false},
		{"wren/...", "wren", true},
		{"net", "net/http", false},
	} {
		if got := Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// TestLinkBreaks: a dump holding a reflective method call and net/http
// reports each once, with the chain that kept it.
func TestLinkBreaks(t *testing.T) {
	dump := `# github.com/wren-broker/wren
_ -> main.main
main.main -> github.com/wren-broker/wren/cli.Run
github.com/wren-broker/wren/cli.Run -> text/template.(*Template).Execute
text/template.(*Template).Execute -> text/template.(*state).evalField <ReflectMethod>
text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName
main.main -> github.com/wren-broker/wren/ops.Serve
github.com/wren-broker/wren/ops.Serve -> net/http.(*Server).Serve
net/http.(*Server).Serve -> net/http.(*conn).serve
github.com/wren-broker/wren/ops.Serve -> type:*net/http.Request <UsedInIface>
main.main -> net/netip.ParseAddr
runtime.saveBlockEventStack -> net/http.http2splitHeaderBlock.argliveinfo
net.(*Dialer).dialCtx -> net/http..stmp_328
github.com/klauspost/compress/zstd.(*sequenceDecs).decodeSync -> text/template.(*state).printValue.stkobj
`
	if got := LinkBreaks(dump[strings.Index(dump, "main.main -> net/netip"):], []string{"net/http"}); len(got) != 0 {
		t.Fatalf("a function's auxiliary data, stored once under another package's name, taken for that package: %q", got)
	}
	got := LinkBreaks(dump, []string{"net/http"})
	want := []string{
		"the binary calls a method by a name known only at run time (<ReflectMethod>): the linker keeps every exported method:\n" +
			"\t_\n\t-> main.main\n\t-> github.com/wren-broker/wren/cli.Run\n\t-> text/template.(*Template).Execute\n\t-> text/template.(*state).evalField",
		"the binary links net/http:\n" +
			"\t_\n\t-> main.main\n\t-> github.com/wren-broker/wren/ops.Serve\n\t-> net/http.(*Server).Serve",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("LinkBreaks reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := LinkBreaks("_ -> main.main\nmain.main -> net/netip.ParseAddr\nmain.main -> type:*net/netip.Addr\n", []string{"net/http", "net"}); len(got) != 0 {
		t.Fatalf("net/netip taken for net or net/http: %q", got)
	}
	for sym, pkg := range map[string]string{
		"net/http.(*Server).Serve":               "net/http",
		"type:*net/http.Request":                 "net/http",
		"github.com/wren-broker/wren/ops.Serve":  "github.com/wren-broker/wren/ops",
		"go:main.inittasks":                      "go:main",
		"text/template..inittask":                "text/template",
		"type:[]*github.com/x/y.T":               "github.com/x/y",
		"runtime.unreachableMethod":              "runtime",
		"github.com/x/y.(*T).M-fm":               "github.com/x/y",
		"github.com/klauspost/compress/zstd.dec": "github.com/klauspost/compress/zstd",
	} {
		if got := symbolPackage(sym); got != pkg {
			t.Errorf("symbolPackage(%q) = %q, want %q", sym, got, pkg)
		}
	}
}

// TestReleaseBinary builds the release binary with the linker's
// dependency dump and checks that text/template's reflective method calls
// stay unreachable and net/http is not linked (docs/ARCHITECTURE.md,
// "Binary size"): either would take the binary past its budget. The build
// uses scripts/build.sh's settings, so after that script its packages
// come from the build cache and only the link runs (seconds).
func TestReleaseBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and links the release binary; run without -short")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs",
		"-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "wren"), ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte(" -> main.main")) {
		t.Fatalf("go build -ldflags=-dumpdep printed no dependency dump (%d bytes): the check would see nothing", len(out))
	}
	for _, msg := range LinkBreaks(string(out), []string{"net/http"}) {
		t.Error(msg)
	}
	t.Logf("built and checked in %v", time.Since(start).Round(time.Millisecond))
}
