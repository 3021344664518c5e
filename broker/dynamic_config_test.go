package broker

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A cluster-wide message.max.bytes altered at run time applies at once to
// every topic without its own max.message.bytes, and deleting it restores
// the file's value.
func TestDynamicMessageMaxBytes(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	cl, adm := newClient(t, b, kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("5000")}, "own"); err != nil {
		t.Fatal(err)
	}
	// Random-looking bytes would do too: franz-go does not compress here.
	value := bytes.Repeat([]byte("x"), 1000)
	produce := func(topic string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr()
	}
	if err := produce("plain"); err != nil {
		t.Fatalf("before the change: %v", err)
	}

	alter := func(op kadm.IncrementalOp, value string) {
		t.Helper()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "message.max.bytes", Value: kmsg.StringPtr(value)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs[0].Err; err != nil {
			t.Fatalf("alter message.max.bytes: %v (%s)", err, rs[0].ErrMessage)
		}
	}
	alter(kadm.SetConfig, "100")
	if err := produce("plain"); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("1000-byte record under a cluster-wide message.max.bytes=100: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := produce("own"); err != nil {
		t.Fatalf("topic with its own max.message.bytes: %v", err)
	}
	// Described as the cluster default.
	rcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rcs.On("", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cfg := range c.Configs {
		found = found || (cfg.Key == "message.max.bytes" && cfg.MaybeValue() == "100")
	}
	if !found {
		t.Errorf("message.max.bytes=100 not described: %+v", c.Configs)
	}

	alter(kadm.DeleteConfig, "")
	if err := produce("plain"); err != nil {
		t.Fatalf("after deleting the dynamic value: %v", err)
	}
}

// Settings wren does not apply, or reads only at start, are refused at
// run time with INVALID_CONFIG and a message naming the key.
func TestAlterConfigsRefusesIneffectiveKeys(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		broker     bool
		key, value string
		text       string
	}{
		{true, "log.cleaner.threads", "2", "log.cleaner.threads is not in effect in wren yet"},
		{true, "log.cleaner.backoff.ms", "1000", "only at start"},
		{false, "segment.jitter.ms", "1000", "segment.jitter.ms is not in effect in wren yet"},
	} {
		set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.key, Value: kmsg.StringPtr(tc.value)}}
		var rs kadm.AlterConfigsResponses
		var err error
		if tc.broker {
			rs, err = adm.AlterBrokerConfigs(ctx, set)
		} else {
			rs, err = adm.AlterTopicConfigs(ctx, set, "t")
		}
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(rs[0].Err, kerr.InvalidConfig) || !strings.Contains(rs[0].ErrMessage, tc.text) {
			t.Errorf("incremental %s=%s: %v %q, want INVALID_CONFIG saying %q", tc.key, tc.value, rs[0].Err, rs[0].ErrMessage, tc.text)
		}
		// The legacy AlterConfigs the same.
		var legacy kadm.AlterConfigsResponses
		if tc.broker {
			legacy, err = adm.AlterBrokerConfigsState(ctx, set)
		} else {
			legacy, err = adm.AlterTopicConfigsState(ctx, set, "t")
		}
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(legacy[0].Err, kerr.InvalidConfig) || !strings.Contains(legacy[0].ErrMessage, tc.text) {
			t.Errorf("legacy %s=%s: %v %q, want INVALID_CONFIG saying %q", tc.key, tc.value, legacy[0].Err, legacy[0].ErrMessage, tc.text)
		}
	}
}

// lockedBuffer is a log destination that goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The start-up log names each setting the file set that wren ignores.
func TestStartLogsIneffectiveSettings(t *testing.T) {
	var logs lockedBuffer
	cfg := testConfig(t, t.TempDir(), "[storage]\nlog.roll.jitter.hours = 1\n")
	b, err := Start(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "key=log.roll.jitter.hours") {
		t.Errorf("start-up log does not warn about log.roll.jitter.hours:\n%s", out)
	}
	if strings.Contains(out, "key=node.id") {
		t.Errorf("start-up log warns about node.id:\n%s", out)
	}
}

// TestDynamicConnectionLimits: max.connections.per.ip altered at run time
// (cluster-wide, as Kafka allows) governs the next connections: with the
// admin client's connection open, one more from the same address is
// closed at once.
func TestDynamicConnectionLimits(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.connections.per.ip", Value: kmsg.StringPtr("1")}}
	rs, err := adm.AlterBrokerConfigs(ctx, set)
	if err != nil || rs[0].Err != nil {
		t.Fatalf("altering max.connections.per.ip: %v %v %s", err, rs[0].Err, rs[0].ErrMessage)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, rerr := nc.Read(make([]byte, 1))
		nc.Close()
		if errors.Is(rerr, io.EOF) {
			return // refused: closed at once
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second connection from the address is still accepted after max.connections.per.ip = 1 (read: %v)", rerr)
		}
	}
}

// Through real clients: CreateTopics refuses a key not in effect exactly
// as AlterConfigs does, and unclean.leader.election.enable, in effect, is
// accepted on a topic (at creation and altered) and as the cluster-wide
// default, and refused for one broker.
func TestCreateTopicsRefusesIneffectiveKeys(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	created, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": kmsg.StringPtr("gzip")}, "gz")
	if err == nil {
		err = created.Err
	}
	if r, cerr := adm.CreateTopic(ctx, 1, 1, map[string]*string{"unclean.leader.election.enable": kmsg.StringPtr("true")}, "t"); cerr != nil || r.Err != nil {
		t.Fatalf("create with unclean.leader.election.enable: %v %v", cerr, r.Err)
	}
	altered, aerr := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: kmsg.StringPtr("gzip")}}, "t")
	if aerr != nil {
		t.Fatal(aerr)
	}
	if !errors.Is(err, kerr.InvalidConfig) || created.ErrMessage != altered[0].ErrMessage || !strings.HasPrefix(created.ErrMessage, "compression.type is not in effect in wren yet") {
		t.Errorf("create with compression.type: %v %q; alter: %v %q", err, created.ErrMessage, altered[0].Err, altered[0].ErrMessage)
	}
	if topics, err := adm.ListTopics(ctx); err != nil || topics.Has("gz") {
		t.Errorf("the refused topic exists: %v %v", topics.Names(), err)
	}
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("true")}}
	for what, rs := range map[string]func() (kadm.AlterConfigsResponses, error){
		"topic":        func() (kadm.AlterConfigsResponses, error) { return adm.AlterTopicConfigs(ctx, set, "t") },
		"cluster-wide": func() (kadm.AlterConfigsResponses, error) { return adm.AlterBrokerConfigs(ctx, set) },
		"broker 1":     func() (kadm.AlterConfigsResponses, error) { return adm.AlterBrokerConfigs(ctx, set, 1) },
	} {
		r, err := rs()
		if err != nil {
			t.Fatal(err)
		}
		if refused := what == "broker 1"; refused != errors.Is(r[0].Err, kerr.InvalidConfig) || !refused && r[0].Err != nil {
			t.Errorf("unclean.leader.election.enable on %s: %v %q", what, r[0].Err, r[0].ErrMessage)
		}
	}
}
