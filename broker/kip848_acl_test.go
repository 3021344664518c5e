package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestKIP848RegexAuthorizedTopics: a SCRAM user with READ on its group
// and DESCRIBE on topic a-1 alone, subscribing by ConsumerGroupHeartbeat
// to the regex "a-.*" while a-1 and a-2 exist, is assigned a-1's
// partitions only, as Kafka keeps of a resolved regex the topics the
// member may describe; once it may describe a-2 too, a later heartbeat
// brings a-2's partitions. Subscribing to a-2 by name is refused whole
// with TOPIC_AUTHORIZATION_FAILED, and a group it may not READ with
// GROUP_AUTHORIZATION_FAILED. A franz-go consumer subscribing by regex
// is assigned and reads only the topic its user may describe.
func TestKIP848RegexAuthorizedTopics(t *testing.T) {
	const group = "regex848"
	cfg := saslConfig(t, t.TempDir(), groupsTestConfig)
	cfg.AllowEveryoneIfNoACL = nil // false: a SASL listener is configured
	cfg.SuperUsers = []string{"User:ANONYMOUS"}
	b := startBroker(t, cfg)
	_, adm := newClient(t, b)
	ctx := testContext(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "reader", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("create user: %v %+v", err, altered)
	}
	createTopic(t, adm, "a-1", 2, nil)
	createTopic(t, adm, "a-2", 3, nil)
	createTopic(t, adm, "b-1", 1, nil)
	md, err := adm.Metadata(ctx, "a-1", "a-2")
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := md.Topics["a-1"].ID, md.Topics["a-2"].ID
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
	grant(kadm.NewACLs().Allow("User:reader").Groups(group).Operations(kadm.OpRead))
	grant(kadm.NewACLs().Allow("User:reader").Topics("a-1").Operations(kadm.OpDescribe))

	reader, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "reader", Pass: "pw"}.AsSha512Mechanism()),
		kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)

	var epoch int32
	var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	heartbeat := func(join bool) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = group, "member-r", epoch
		hb.RebalanceTimeoutMillis = -1
		hb.Topics = owned
		if join {
			regex := "a-.*"
			hb.MemberEpoch, hb.RebalanceTimeoutMillis = 0, 30000
			hb.SubscribedTopicRegex = &regex
			hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		r := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, reader, hb)
		if r.ErrorCode == 0 {
			epoch = r.MemberEpoch
			if r.Assignment != nil {
				owned = owned[:0]
				for _, at := range r.Assignment.Topics {
					owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
				}
			}
		}
		return r
	}
	// The coordinator loads and the ACLs reach the image: poll the join.
	var joined *kmsg.ConsumerGroupHeartbeatResponse
	pollFor(t, "the regex member joining", 20*time.Second, func() bool {
		joined = heartbeat(true)
		switch kerr.ErrorForCode(joined.ErrorCode) {
		case kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.GroupAuthorizationFailed:
			return false
		}
		return true
	})
	wantCode(t, "join by regex", joined.ErrorCode, nil)
	assigned := func() map[[16]byte][]int32 {
		out := map[[16]byte][]int32{}
		for _, o := range owned {
			out[o.TopicID] = slices.Sorted(slices.Values(o.Partitions))
		}
		return out
	}
	if got := assigned(); len(got) != 1 || !slices.Equal(got[a1], []int32{0, 1}) {
		t.Fatalf("regex a-.* with DESCRIBE on a-1 only: assigned %v, want a-1 (%v) [0 1]", got, a1)
	}

	// DESCRIBE on a-2 granted: a later heartbeat brings its partitions.
	grant(kadm.NewACLs().Allow("User:reader").Topics("a-2").Operations(kadm.OpDescribe))
	pollFor(t, "a-2 assigned after DESCRIBE on it", 20*time.Second, func() bool {
		wantCode(t, "heartbeat", heartbeat(false).ErrorCode, nil)
		got := assigned()
		return len(got) == 2 && slices.Equal(got[a2], []int32{0, 1, 2})
	})

	// By name, a topic it may not describe refuses the heartbeat; a group
	// it may not read does too.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "member-n", 30000
	hb.SubscribedTopicNames = []string{"a-1", "b-1"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantCode(t, "subscribing to b-1 by name", direct[*kmsg.ConsumerGroupHeartbeatResponse](t, reader, hb).ErrorCode, kerr.TopicAuthorizationFailed)
	hb.Group, hb.SubscribedTopicNames = "other", []string{"a-1"}
	wantCode(t, "a group without READ", direct[*kmsg.ConsumerGroupHeartbeatResponse](t, reader, hb).ErrorCode, kerr.GroupAuthorizationFailed)

	// A franz-go consumer of the KIP-848 protocol subscribing by regex
	// (it sends SubscribedTopicRegex) as a user that may describe and
	// read b-1 alone, while b-1 and b-2 hold records: it reads b-1's and
	// the group's member is assigned b-1 only.
	const kgoGroup = "regex848-kgo"
	createTopic(t, adm, "b-2", 2, nil)
	admin, _ := newClient(t, b)
	for _, topic := range []string{"b-1", "b-2"} {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	grant(kadm.NewACLs().Allow("User:reader").Groups(kgoGroup).Topics("b-1").Operations(kadm.OpRead, kadm.OpDescribe))
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "reader", Pass: "pw"}.AsSha512Mechanism()),
		kgo.ConsumerGroup(kgoGroup), kgo.ConsumeRegex(), kgo.ConsumeTopics("b-.*"),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for read := false; !read; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("regex consumer: no record: %v", err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("regex consumer: %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic != "b-1" {
				t.Fatalf("regex consumer read %s, which it may not describe", r.Topic)
			}
			read = true
		})
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{kgoGroup}
	described := direct[*kmsg.ConsumerGroupDescribeResponse](t, admin, d).Groups[0]
	wantCode(t, "describe the regex group", described.ErrorCode, nil)
	for _, m := range described.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if tp.Topic != "b-1" {
				t.Fatalf("member %s is assigned %s, which its user may not describe", m.MemberID, tp.Topic)
			}
		}
	}
	if len(described.Members) != 1 || len(described.Members[0].Assignment.TopicPartitions) != 1 {
		t.Fatalf("regex group: %+v", described.Members)
	}
}
