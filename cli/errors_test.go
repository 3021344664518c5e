package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/broker"
)

func TestKafkaReason(t *testing.T) {
	wrapped := fmt.Errorf("%w: detail", kerr.TopicAlreadyExists)
	for _, tc := range []struct {
		err  error
		msg  string
		want string
	}{
		// The broker's message after the code's name, not after its
		// description ("...already exists.: topic ...").
		{kerr.TopicAlreadyExists, `topic "orders" already exists`, `TOPIC_ALREADY_EXISTS: topic "orders" already exists`},
		// No message, or one that only repeats the code: the code's text.
		{kerr.TopicAlreadyExists, "", "TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{kerr.TopicAlreadyExists, "Topic with this name already exists.", "TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{kerr.TopicAlreadyExists, "TOPIC_ALREADY_EXISTS: Topic with this name already exists.: topic x", "TOPIC_ALREADY_EXISTS: topic x"},
		{kerr.UnknownTopicOrPartition, "TOPIC_ALREADY_EXISTS", "UNKNOWN_TOPIC_OR_PARTITION: TOPIC_ALREADY_EXISTS"},
		{wrapped, "detail", "TOPIC_ALREADY_EXISTS: detail"},
		// Not a Kafka code: the error, then what the message adds.
		{errors.New("no answer"), "", "no answer"},
		{errors.New("no answer"), "later", "no answer: later"},
	} {
		if got := kafkaReason(tc.err, tc.msg); got != tc.want {
			t.Errorf("kafkaReason(%v, %q) = %q, want %q", tc.err, tc.msg, got, tc.want)
		}
	}
	if err := kafkaErr("create topic x", kerr.TopicAlreadyExists, "m"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("kafkaErr does not wrap the code: %v", err)
	}
}

// stutter returns the first part of an error line said twice in a row
// ("ops: ops: ", "...exists.: "), or "".
func stutter(line string) string {
	if strings.Contains(line, ".: ") {
		return ".: "
	}
	parts := strings.Split(line, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] && !strings.Contains(parts[i], " ") {
			return parts[i] + ": " + parts[i]
		}
	}
	return ""
}

// The errors users met, each said once: no package prefix twice, no Kafka
// description joined to the broker's message, the reason of every refusal.
func TestErrorsSayEachThingOnce(t *testing.T) {
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", topic}, fmt.Sprintf("wren: create topic %s: TOPIC_ALREADY_EXISTS: topic %q already exists\n", topic, topic)},
		// CreateTopics refuses a key not in effect as AlterConfigs does.
		{[]string{"topic", "create", topic + "-gz", "-c", "compression.type=gzip"}, "wren: create topic " + topic + "-gz: INVALID_CONFIG: compression.type is not in effect in wren yet"},
		{[]string{"topic", "alter-config", topic, "--set", "compression.type=gzip"}, "INVALID_CONFIG: compression.type is not in effect in wren yet"},
		{[]string{"topic", "alter-config", topic, "--set", "cleanup.policy=bogus"}, "INVALID_CONFIG: Invalid value bogus for configuration cleanup.policy: \"bogus\" is not allowed; allowed values are compact, delete"},
	} {
		r := mustFail(t, "", append(tc.args, "-b", b)...)
		if !strings.HasPrefix(r.stderr, tc.want) && !strings.Contains(r.stderr, tc.want) {
			t.Errorf("wren %q: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
		if s := stutter(r.stderr); s != "" {
			t.Errorf("wren %q: stderr %q says %q", tc.args, r.stderr, s)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "delete", "nosuch", "-b", b}, "wren: unknown topic: nosuch\n"},
		{[]string{"config", "check", "--node-id", "x", "some.toml"}, "wren: usage: --node-id (or WREN_NODE_ID): node id \"x\": want a non-negative integer\n"},
		{[]string{"storage", "check", "a", "b"}, "wren: usage: storage check: want no arguments, got 2 argument(s)\n"},
	} {
		if r := mustFail(t, "", tc.args...); r.stderr != tc.want {
			t.Errorf("wren %q: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
	if topics := topicNames(t, b); strings.Contains(strings.Join(topics, " "), topic+"-gz") {
		t.Errorf("a topic was created with a key not in effect: %v", topics)
	}

	// wren serve on a taken http.listen: "broker: ops: ops: http.listen
	// ADDR: listen tcp ADDR: ..." said the component and the address twice.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := filepath.Join(t.TempDir(), "wren.toml")
	toml := fmt.Sprintf("[broker]\nlog.dirs = [%q]\nlisteners = [\"PLAINTEXT://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:0\"]\n[http]\nlisten = %q\n", t.TempDir(), taken.Addr().String())
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := Env{Stderr: &stderr, Serve: func(ctx context.Context, o ServeOptions) error {
		return broker.ServeFile(ctx, o.ConfigPath, o.LogLevel, o.NodeID)
	}}
	if code := Main(ctx, env, []string{"wren", "serve", "-c", path, "--log-level", "error"}); code != 1 {
		t.Fatalf("serve on a taken http.listen: exit %d, stderr %q", code, stderr.String())
	}
	want := "wren: broker: ops: http.listen: listen tcp " + taken.Addr().String() + ": bind: address already in use\n"
	if stderr.String() != want {
		t.Errorf("serve on a taken http.listen: stderr %q, want %q", stderr.String(), want)
	}
}

// A client pointed at a node's CONTROLLER listener is told so, rather
// than franz-go's "is TLS missing?": the CLI probes the address with the
// listener's own handshake. A client listener is not taken for one.
func TestControllerListenerNamed(t *testing.T) {
	brokers, ports := threeWrenBrokersPorts(t)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	want := fmt.Sprintf("wren: topic list: %s is a wren CONTROLLER (peer) listener, node 1's, which only the cluster's own nodes talk to; clients use the PLAINTEXT listener, port 9092 by default", addr)
	for _, args := range [][]string{
		{"topic", "list", "--timeout", "5s"},
		{"cluster", "info", "--timeout", "5s"},
		{"cluster", "health", "--timeout", "5s"},
		{"produce", "t", "--timeout", "5s"},
	} {
		r := mustFail(t, "k:v\n", append(args, "-b", addr)...)
		if !strings.Contains(r.stderr, want[strings.Index(want, addr):]) || strings.Contains(r.stderr, "TLS") {
			t.Errorf("wren %q at a CONTROLLER listener: stderr %q, want %q", args, r.stderr, want)
		}
	}
	if r := mustFail(t, "", "topic", "list", "--timeout", "5s", "-b", addr); !strings.HasPrefix(r.stderr, want) {
		t.Errorf("topic list at a CONTROLLER listener: stderr %q, want it to start %q", r.stderr, want)
	}
	// A client listener with no such topic: the usual answer, no probe's.
	r := mustFail(t, "", "consume", "nosuch", "-b", brokers[0].Addr().String(), "--timeout", "5s")
	if strings.Contains(r.stderr, "CONTROLLER") {
		t.Errorf("a client listener was taken for a CONTROLLER listener: %q", r.stderr)
	}
}
