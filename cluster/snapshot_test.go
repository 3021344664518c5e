package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

// An image of every record kind survives a snapshot's round trip intact.
func TestImageSnapshotRoundTrip(t *testing.T) {
	v := func(s string) *string { return &s }
	a, b := NewUUID(), NewUUID()
	recs := []Record{
		{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: "Y2x1c3RlcgAAAAAAAAAAAA"}},
		{Kind: KindClusterSecret, ClusterSecret: &ClusterSecretRecord{Secret: bytes.Repeat([]byte{5}, ClusterSecretBytes)}},
		{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: 1, Rack: "r1",
			Listeners: []BrokerListener{{Name: "PLAINTEXT", Host: "edge-1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}},
		{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: 2, IncarnationID: NewUUID(), AcksDurable: true}},
		{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: 2, Fenced: true}},
		{Kind: KindBrokerLogDir, BrokerLogDir: &BrokerLogDirRecord{BrokerID: 1, Dir: "/var/lib/wren", Offline: true, Reason: LogDirBelowFloor, Detail: "1 MiB free"}},
		{Kind: KindTopic, Topic: &TopicRecord{Name: "a", ID: a}},
		{Kind: KindPartition, Partition: &PartitionRecord{TopicID: a, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 4}},
		{Kind: KindPartition, Partition: &PartitionRecord{TopicID: a, Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{}, LastKnownELR: []int32{2}, Leader: -1}},
		{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: "a", Key: "retention.ms", Value: v("1000")}},
		{Kind: KindTopic, Topic: &TopicRecord{Name: "b", ID: b}},
		{Kind: KindRemoveTopic, RemoveTopic: &RemoveTopicRecord{ID: b}},
		{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceBroker, Name: "", Key: "log.retention.ms", Value: v("5")}},
		{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceBroker, Name: "1", Key: "log.cleaner.threads", Value: v("2")}},
		{Kind: KindProducerIDs, ProducerIDs: &ProducerIDsRecord{BrokerID: 1, NextBlockStart: 2000, BlockSize: 1000}},
		{Kind: KindDataLoss, DataLoss: &DataLossRecord{TopicID: a, Topic: "a", Partition: 1, LeaderEpoch: 5, PreviousLeader: 2,
			NewLeader: 1, PreviousISR: []int32{2}, Reason: "unclean", FromOffset: 10, ToOffset: 20}},
		{Kind: KindScramCredential, ScramCredential: &ScramCredentialRecord{User: "alice", Mechanism: "SCRAM-SHA-256", Credential: &ScramCredential{
			Salt: []byte("salt"), Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}}},
		{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: QuotaEntity{User: Named("alice"), ClientID: DefaultName()}.Data(),
			Key: QuotaProducerByteRate, Value: 1024}},
		{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: QuotaEntity{ClientID: Named("c")}.Data(), Key: QuotaRequestPercentage, Value: 12.5}},
		{Kind: KindACL, ACL: &ACLRecord{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "a", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}},
		{Kind: KindACL, ACL: &ACLRecord{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: "kafka-cluster", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:*", Host: "10.0.0.1", Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeDeny}},
		{Kind: KindACL, ACL: &ACLRecord{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: "g", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}},
		{Kind: KindACL, ACL: &ACLRecord{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: "g", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow, Delete: true}},
	}
	im := emptyImage()
	for i, r := range recs {
		var err error
		if im, err = im.apply(uint64(i+1), r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := encodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeImage(data)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.ACLs()); n != 2 {
		t.Fatalf("the snapshot kept %d ACLs, want 2", n)
	}
	if !reflect.DeepEqual(got, im) {
		t.Fatalf("snapshot round trip:\n got %+v\nwant %+v", got, im)
	}
	if _, err := decodeImage([]byte(`{"version":2}`)); err == nil {
		t.Fatal("a snapshot of an unknown version decoded")
	}
	// A new field of Image must be added to imageSnapshot: a snapshot that
	// drops it would lose state on every node that restores one.
	// (batch only lives while one entry is applied: no image it is on is
	// ever published.)
	if n := reflect.TypeOf(Image{}).NumField() - 1; n != 12 {
		t.Fatalf("Image has %d fields, imageSnapshot was written for 12: add the new ones to snapshot.go, then update this number", n)
	}
}

// Many metadata changes with a small snapshot threshold: every node
// compacts its log; a follower that was down while the controller's log
// start moved past its log end catches up by the controller's snapshot;
// a restarted node starts from its own snapshot.
func TestQuorumSnapshots(t *testing.T) {
	voters, nodes := listenQuorumNodes(t, 3)
	for _, n := range nodes {
		n.snapshotEntries = 20
	}
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
	}
	defer func() {
		for _, n := range nodes {
			n.c.Close()
		}
	}()
	var ctrl *quorumNode
	pollUntil(t, "a controller with all three brokers", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.c.Acting() && len(n.c.Image().Brokers()) == 3 {
				ctrl = n
				return true
			}
		}
		return false
	})
	var lagging, other *quorumNode
	for _, n := range nodes {
		switch {
		case n == ctrl:
		case lagging == nil:
			lagging = n
		default:
			other = n
		}
	}
	ctx := context.Background()
	st, _, err := lagging.c.QuorumStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	laggingEnd := st.LastIndex
	lagging.c.Close()

	// s0 is deleted halfway, so that more than SnapshotEntries entries
	// follow the delete and every node's last snapshot holds it.
	running := []*quorumNode{ctrl, other}
	const topics = 60
	var deleted int64
	for i := 0; i < topics; i++ {
		name := fmt.Sprintf("s%d", i)
		retried := false
		onActing(t, running, "create topic "+name, func(n *quorumNode) error {
			res, err := n.c.CreateTopics(ctx, []CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
			if err != nil {
				return err
			}
			if retried && errors.Is(res[0].Err, kerr.TopicAlreadyExists) {
				// The refused attempt's entry was committed by the next
				// controller after all, as a Kafka client may also find.
				return nil
			}
			retried = true
			return res[0].Err
		})
		if i != topics/2 {
			continue
		}
		retried = false
		n := onActing(t, running, "delete s0", func(n *quorumNode) error {
			res, err := n.c.DeleteTopics(ctx, []string{"s0"})
			if err != nil {
				return err
			}
			if retried && errors.Is(res[0].Err, kerr.UnknownTopicOrPartition) {
				return nil // as above: an earlier attempt was committed
			}
			retried = true
			return res[0].Err
		})
		// The delete is committed and applied on the node that took it.
		st, _, err := n.c.QuorumStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deleted = st.Applied
	}
	pollUntil(t, "the controller's and the other follower's logs compacted past the delete of s0, both applied to the same index", 10*time.Second, func() bool {
		var applied []int64
		for _, n := range running {
			st, _, err := n.c.QuorumStatus(ctx)
			if err != nil || st.SnapshotIndex <= laggingEnd+1 || st.SnapshotIndex < deleted || st.Applied < st.Commit {
				return false
			}
			applied = append(applied, st.Applied)
		}
		return applied[0] == applied[1]
	})
	want := ctrl.c.Image().TopicNames()
	if got := other.c.Image().TopicNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("with every entry applied, node %d has topics %v and node %d %v", ctrl.id, want, other.id, got)
	}

	// The lagging follower comes back: only a snapshot can catch it up.
	restart := func(n *quorumNode) {
		t.Helper()
		ln, err := net.Listen("tcp", voters[election.NodeID(n.id)])
		if err != nil {
			t.Skipf("port %s taken before the restart: %v", voters[election.NodeID(n.id)], err)
		}
		n.ln, n.fs = ln, n.fs.Crash(vfs.CrashOptions{})
		startQuorumNode(t, n, voters)
	}
	restart(lagging)
	pollUntil(t, "the lagging follower caught up by the controller's snapshot", 10*time.Second, func() bool {
		return reflect.DeepEqual(lagging.c.Image().TopicNames(), want)
	})
	if st, _, err := lagging.c.QuorumStatus(ctx); err != nil || st.SnapshotIndex <= laggingEnd {
		t.Fatalf("the lagging follower's snapshot is at %d (log end before %d): %v", st.SnapshotIndex, laggingEnd, err)
	}

	// A restarted node starts from its own snapshot: its image holds the
	// topics at once, before it has heard from anyone (the poll above saw
	// its snapshot hold the delete of s0).
	other.c.Close()
	restart(other)
	if other.c.Image().Topic("s1") == nil || other.c.Image().Topic("s0") != nil {
		t.Fatalf("restarted from its snapshot, node %d has topics %v", other.id, other.c.Image().TopicNames())
	}
	pollUntil(t, "the restarted node caught up", 10*time.Second, func() bool {
		return reflect.DeepEqual(other.c.Image().TopicNames(), want)
	})
}

// onActing runs change on the acting controller among nodes, retrying
// with a deadline while it answers NOT_CONTROLLER, as a Kafka client
// retries a controller request: an election may move the controller
// between finding it and calling it. It returns the node that took the
// change.
func onActing(t *testing.T, nodes []*quorumNode, what string, change func(*quorumNode) error) *quorumNode {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 1; ; attempt++ {
		var acting *quorumNode
		pollUntil(t, "an acting controller for "+what, 10*time.Second, func() bool {
			for _, n := range nodes {
				if n.c.Acting() {
					acting = n
					return true
				}
			}
			return false
		})
		err := change(acting)
		if err == nil {
			return acting
		}
		if !errors.Is(err, kerr.NotController) || time.Now().After(deadline) {
			t.Fatalf("%s on node %d (attempt %d): %v", what, acting.id, attempt, err)
		}
		t.Logf("%s on node %d: %v; retrying on the acting controller", what, acting.id, err)
		time.Sleep(10 * time.Millisecond)
	}
}

// A few large entries (created topics of many partitions) compact the
// log by their bytes, however far below SnapshotEntries their count is:
// a restart then replays little.
func TestQuorumSnapshotsByBytes(t *testing.T) {
	voters, nodes := listenQuorumNodes(t, 3)
	for _, n := range nodes {
		n.snapshotEntries = 100000
		n.snapshotBytes = 64 << 10
	}
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
	}
	defer func() {
		for _, n := range nodes {
			n.c.Close()
		}
	}()
	pollUntil(t, "a controller with all three brokers", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.c.Acting() && len(n.c.Image().Brokers()) == 3 {
				return true
			}
		}
		return false
	})
	ctx := context.Background()
	for i := range 4 {
		name := fmt.Sprintf("wide%d", i)
		retried := false
		onActing(t, nodes, "create topic "+name, func(n *quorumNode) error {
			res, err := n.c.CreateTopics(ctx, []CreateTopic{{Name: name, NumPartitions: 200, ReplicationFactor: 3}}, false)
			if err != nil {
				return err
			}
			if retried && errors.Is(res[0].Err, kerr.TopicAlreadyExists) {
				return nil
			}
			retried = true
			return res[0].Err
		})
	}
	for _, n := range nodes {
		pollUntil(t, fmt.Sprintf("node %d compacts its log by bytes", n.id), 20*time.Second, func() bool {
			st, _, err := n.c.QuorumStatus(ctx)
			return err == nil && st.SnapshotIndex > 0
		})
	}
}
