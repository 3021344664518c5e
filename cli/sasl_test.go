package cli

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
)

// TestSASLFlags: a client command authenticates on a SASL listener with
// --sasl-mechanism and --sasl-user, the password from WREN_SASL_PASSWORD
// or --sasl-password, with each mechanism the listener offers; without
// them, or with a wrong password, it is refused; a half-given or unknown
// mechanism is a usage error.
func TestSASLFlags(t *testing.T) {
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
sasl.enabled.mechanisms = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]

[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[security]
super.users = ["User:ANONYMOUS", "User:ops"]
`, t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	plain, sasl := b.Addr().String(), b.ListenerAddr("SASL_PLAINTEXT").String()
	mustRun(t, "", "user", "create", "ops", "--password", "ops-pw", "-b", plain)
	mustRun(t, "", "user", "create", "ops", "--password", "ops-pw", "--mechanism", "SCRAM-SHA-256", "-b", plain)

	t.Setenv("WREN_SASL_PASSWORD", "ops-pw")
	for i, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"} {
		topic := fmt.Sprintf("over-sasl-%d", i)
		mustRun(t, "", "topic", "create", topic, "-b", sasl, "--sasl-mechanism", mech, "--sasl-user", "ops")
		if r := mustRun(t, "", "topic", "list", "-b", sasl, "--sasl-mechanism", mech, "--sasl-user", "ops"); !strings.Contains(r.stdout, topic) {
			t.Fatalf("%s: topic list lacks %s:\n%s", mech, topic, r.stdout)
		}
	}
	if r := mustFail(t, "", "topic", "list", "-b", sasl, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "ops", "--sasl-password", "wrong",
		"--timeout", "5s"); !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password: %s", r.stderr)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--sasl-user", "ops"}, "--sasl-mechanism and --sasl-user go together"},
		{[]string{"--sasl-mechanism", "GSSAPI", "--sasl-user", "ops"}, `--sasl-mechanism "GSSAPI"`},
	} {
		r := mustFail(t, "", append([]string{"topic", "list", "-b", sasl}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.err) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, r.code, r.stderr, c.err)
		}
	}
}
