package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
)

// testBrokers returns the bootstrap address of a broker for one test:
// WREN_TEST_BROKERS when set (to run these tests against a real wren or
// Kafka), else a fresh in-memory kfake cluster on random loopback ports,
// closed when the test ends.
func testBrokers(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("WREN_TEST_BROKERS"); b != "" {
		return b
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID("wren-test-cluster"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

// producerStateBrokers returns the bootstrap address of a broker that
// tracks idempotent producers, which kfake does not (its DescribeProducers
// lists transactional producers only): WREN_TEST_BROKERS when set, else a
// one-node wren broker (wrenBroker).
func producerStateBrokers(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("WREN_TEST_BROKERS"); b != "" {
		return b
	}
	return wrenBroker(t, "")
}

// wrenBroker starts a one-node wren broker with its data in a temporary
// directory and the TOML extra appended to its config, closed when the
// test ends, and returns its address.
func wrenBroker(t *testing.T, extra string) string {
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
%s`, t.TempDir(), extra)
	cfg, err := config.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatalf("broker config: %v", err)
	}
	b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b.Addr().String()
}

// usingKfake reports whether the tests talk to kfake, whose cluster id
// and broker count are known.
func usingKfake() bool { return os.Getenv("WREN_TEST_BROKERS") == "" }

// uniqueTopic names a topic no other test (or earlier run against a real
// broker) uses.
func uniqueTopic(t *testing.T) string {
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	return strings.ToLower(name) + "-" + time.Now().Format("150405.000000")
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the App in-process with stdin and the arguments after "wren",
// under a deadline so that a hang fails the test instead of stalling it.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	env := Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut}
	code := Main(ctx, env, append([]string{"wren"}, args...))
	if ctx.Err() != nil {
		t.Fatalf("wren %s: still running after the test deadline", strings.Join(args, " "))
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// mustRun is run that fails the test unless the command exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("wren %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// mustFail is run that fails the test unless the command exits non-zero.
func mustFail(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code == 0 {
		t.Fatalf("wren %s: exit 0, want failure\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.stdout, r.stderr)
	}
	return r
}
