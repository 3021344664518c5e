package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
)

// testConfig is a one-node config on a free loopback port with data in
// dir. extra is TOML appended to it.
func testConfig(t testing.TB, dir, extra string) *config.Config {
	t.Helper()
	toml := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]

[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]
%s`, dir, extra)
	cfg, err := config.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startBroker runs a broker for the test; it closes at the end.
func startBroker(t testing.TB, cfg *config.Config) *Broker {
	t.Helper()
	b, err := Start(cfg, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newClient is a franz-go client for the broker.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String()), kgo.RequestTimeoutOverhead(10 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wrenBinary builds the wren binary once for the whole test run, for the
// tests that run it as a real process; TestMain removes it. WREN_TEST_BIN
// names a binary to run instead: CI builds one for all its steps, and a
// test run again in a namespace of its own is handed the binary its first
// run built (runInOwnNetns).
func wrenBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if bin := os.Getenv("WREN_TEST_BIN"); bin != "" {
			if _, err := os.Stat(bin); err != nil {
				binErr = fmt.Errorf("WREN_TEST_BIN: %w", err)
				return
			}
			binPath = bin
			return
		}
		dir, err := os.MkdirTemp("", "wren-broker-test-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		bin := filepath.Join(dir, "wren")
		if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binOnce         sync.Once
	binDir, binPath string
	binErr          error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// writeSingleNodeConfig writes dir/wren.toml for one wren process that is
// its own metadata quorum, its data in data, its client and controller
// listeners on fresh loopback ports and its HTTP endpoints on any free
// one. brokerExtra is further lines of the [broker] table, extra further
// tables (such as [storage] or [logging]). It returns the file's path and
// the client address.
func writeSingleNodeConfig(t *testing.T, dir, data, brokerExtra, extra string) (conf, addr string) {
	t.Helper()
	port, cport := freePort(t), freePort(t)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	conf = filepath.Join(dir, "wren.toml")
	text := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://%s", "CONTROLLER://127.0.0.1:%d"]
%s
[cluster]
controller.quorum.voters = ["1@127.0.0.1:%d"]
[http]
listen = "127.0.0.1:0"
%s`, data, addr, cport, brokerExtra, cport, extra)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf, addr
}

// diesWithTest makes a process a test starts die with the test binary
// (SIGKILL when the thread that started it ends, which for Go's threads
// is the process's end): a test binary killed mid-test, by a timeout or
// by hand, leaves no wren running behind it. The setting survives exec,
// so it holds through "sh -c ... exec wren" and nsenter.
func diesWithTest(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}
