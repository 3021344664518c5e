package broker

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/config"
)

// TestSASLUsersAuthorizedByACLs: on a SASL listener with the default
// allow.everyone.if.no.acl.found (false there), a SCRAM user may do only
// what ACLs grant it: before any, its produce is refused with
// TOPIC_AUTHORIZATION_FAILED and Metadata lists no topic; with WRITE on
// one topic it produces there and sees that topic alone; with READ on the
// topic and the group it consumes in a group, and a DENY for its host
// takes WRITE back. The admin is an anonymous super user of the
// PLAINTEXT listener (super.users = User:ANONYMOUS).
func TestSASLUsersAuthorizedByACLs(t *testing.T) {
	cfg := saslConfig(t, t.TempDir(), "")
	cfg.AllowEveryoneIfNoACL = nil // the derived default: false, a SASL listener is configured
	cfg.SuperUsers = []string{"User:ANONYMOUS"}
	if cfg.AllowEveryoneIfNoACLFound() {
		t.Fatal("allow.everyone.if.no.acl.found derived true beside a SASL listener")
	}
	b := startBroker(t, cfg)
	_, adm := newClient(t, b)
	ctx := testContext(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "device-1", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw-1"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("create user: %v %+v", err, altered)
	}
	createTopic(t, adm, "readings", 1, nil)
	createTopic(t, adm, "secrets", 1, nil)

	device, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "device-1", Pass: "pw-1"}.AsSha512Mechanism()),
		kgo.RequestTimeoutOverhead(10*time.Second), kgo.RecordRetries(0), kgo.UnknownTopicRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(device.Close)
	deviceAdm := kadm.NewClient(device)
	produce := func(topic string) error {
		return device.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	topicsSeen := func() []string {
		md, err := deviceAdm.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return md.Topics.Names()
	}
	if err := produce("readings"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := topicsSeen(); len(got) != 0 {
		t.Fatalf("Metadata without an ACL lists %v", got)
	}

	grant := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL: %v", r.Err)
			}
		}
	}
	grant(kadm.NewACLs().Allow("User:device-1").Topics("readings").Operations(kadm.OpWrite))
	pollFor(t, "device-1 producing to readings", 10*time.Second, func() bool { return produce("readings") == nil })
	if got := topicsSeen(); !slices.Equal(got, []string{"readings"}) {
		t.Fatalf("Metadata with WRITE on readings lists %v, want [readings]", got)
	}
	if err := produce("secrets"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to a topic without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// A group consumer needs READ on the group and the topic.
	consume := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
			kgo.SASL(scram.Auth{User: "device-1", Pass: "pw-1"}.AsSha512Mechanism()),
			kgo.ConsumerGroup("dashboards"), kgo.ConsumeTopics("readings"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consume: no answer: %v", err)
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				return ferr
			}
			if fs.NumRecords() > 0 {
				return nil
			}
		}
	}
	if err := consume(); !errors.Is(err, kerr.GroupAuthorizationFailed) && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("consume without READ: %v, want an authorization failure", err)
	}
	grant(kadm.NewACLs().Allow("User:device-1").Topics("readings").Groups("dashboards").Operations(kadm.OpRead))
	if err := consume(); err != nil {
		t.Fatalf("consume with READ on the topic and the group: %v", err)
	}

	// DENY wins over ALLOW.
	grant(kadm.NewACLs().Deny("User:device-1").DenyHosts("127.0.0.1").Topics("readings").Operations(kadm.OpWrite))
	pollFor(t, "the DENY refusing device-1's produce", 10*time.Second, func() bool {
		return errors.Is(produce("readings"), kerr.TopicAuthorizationFailed)
	})
}

// TestBootstrapAdminIsSuperUser: on a cluster whose SASL listener makes
// allow.everyone.if.no.acl.found false, the bootstrap admin may do
// everything from the first start (it counts among super.users): create
// a topic and an ACL; an anonymous client of the PLAINTEXT listener may
// not.
func TestBootstrapAdminIsSuperUser(t *testing.T) {
	t.Setenv(config.BootstrapAdminPasswordEnv, "first-password")
	cfg := saslConfig(t, t.TempDir(), "")
	cfg.AllowEveryoneIfNoACL = nil
	cfg.BootstrapAdminUser = "admin"
	b := startBroker(t, cfg)
	ctx := testContext(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "admin", Pass: "first-password"}.AsSha512Mechanism()),
		kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	admin := kadm.NewClient(cl)
	// The credential is recorded once the controller acts: poll.
	pollFor(t, "the bootstrap admin creating a topic", 20*time.Second, func() bool {
		_, err := admin.CreateTopic(ctx, 1, 1, nil, "fleet")
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:device-1").Topics("fleet").Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("the bootstrap admin's ACL: %v", r.Err)
		}
	}
	_, anon := newClient(t, b)
	if _, err := anon.CreateTopic(ctx, 1, 1, nil, "rogue"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("an anonymous client's CreateTopics: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
