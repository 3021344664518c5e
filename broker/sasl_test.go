package broker

import (
	"errors"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/kafka"
)

// startSASLListener serves b's handlers on a second client listener that
// authenticates with SASL under b's settings, as a SASL_PLAINTEXT
// listener will once the listener model starts one; it returns its
// address. The Node is the client listener's (broker.go), advertising
// this listener's address.
func startSASLListener(t *testing.T, b *Broker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	srv, err := kafka.NewServer(kafka.ServerConfig{
		ListenerName: "SASL_PLAINTEXT",
		Logger:       b.logger,
		SASL:         kafka.SASLConfigFrom(b.cfg, kafka.ImageAuthenticator(b.controller)),
	}, &kafka.Node{Config: b.cfg, Metadata: b.controller, Controller: b.controller,
		Partitions: kafkaPartitions{b.replicas}, Host: addr.IP.String(), Port: int32(addr.Port),
		ProducerIDs: b.producerIDs, Groups: kafkaGroupCoordinator(b.groups), Health: b.ops.health})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, kafka.ErrServerClosed) {
			t.Errorf("SASL listener: %v", err)
		}
	})
	return addr.String()
}

// TestSASLListener: a user created with AlterUserScramCredentials (kadm,
// as kafka-configs does) produces and consumes over SCRAM-SHA-512 and
// SCRAM-SHA-256 on a SASL listener, under the default settings; a wrong
// password and an unknown user are refused alike; PLAIN is not offered
// unless sasl.enabled.mechanisms lists it; a client without SASL gets
// nothing but a closed connection.
func TestSASLListener(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	// One credential per mechanism, in a request each (Kafka refuses a
	// user twice in one).
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256} {
		altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "device-1", Mechanism: m, Iterations: 8192, Password: "pw-1"}})
		if err != nil || !altered.Ok() {
			t.Fatalf("create: %v %+v", err, altered)
		}
	}
	createTopic(t, adm, "readings", 1, nil)
	addr := startSASLListener(t, b)

	client := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "device-1", Pass: "pw-1"}.AsSha512Mechanism(),
		kscram.Auth{User: "device-1", Pass: "pw-1"}.AsSha256Mechanism(),
	} {
		value := []byte("from " + m.Name())
		cl := client(m, kgo.ConsumeTopics("readings"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "readings", Value: value}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", m.Name(), err)
		}
		found := false
		for !found {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: no record back: %v", m.Name(), err)
			}
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == string(value) })
		}
	}

	var refusals []string
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "device-1", Pass: "wrong"}.AsSha512Mechanism(),
		kscram.Auth{User: "device-2", Pass: "wrong"}.AsSha512Mechanism(),
	} {
		err := client(m).Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		refusals = append(refusals, err.Error())
	}
	if refusals[0] != refusals[1] {
		t.Fatalf("a wrong password and an unknown user refused differently:\n%s\n%s", refusals[0], refusals[1])
	}
	if err := client(plain.Auth{User: "device-1", Pass: "pw-1"}.AsMechanism()).Ping(ctx); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(0), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a client without SASL was served")
	}
}
