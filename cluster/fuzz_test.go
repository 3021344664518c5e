package cluster

import (
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/acl"
)

// FuzzDecodeApp: a peer's app message (heartbeats, forwarded requests,
// ISR changes, answers) comes from the network. Any bytes decode or fail
// with an error, never a panic, and what decodes carries what its kind
// needs.
func FuzzDecodeApp(f *testing.F) {
	for _, m := range []appMessage{
		{Kind: appHeartbeat, Registration: &BrokerRegistrationRecord{BrokerID: 2, Listeners: []BrokerListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}}, BrokerEpoch: 7},
		{Kind: appAlterISR, ID: 3, AlterISR: &alterISRMessage{Partition: 1, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 9, ISR: []int32{2, 3}}},
		{Kind: appAllocateProducerID, ID: 4},
		{Kind: appControlledShutdown, ID: 5},
		{Kind: appKafkaRequest, ID: 6, Body: []byte{0, 19, 0, 4}},
		{Kind: appKafkaRequest, ID: 7, Body: []byte{0, 19, 0, 4}, Principal: "User:CN=device-7,OU=edge", ClientHost: "10.0.0.7"},
		{Kind: appAnswer, ID: 6, ErrorCode: 41, ErrMessage: "not controller"},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"alter_isr","id":1}`))
	f.Add([]byte(`{"kind":"heartbeat"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeApp(body)
		if err != nil {
			return
		}
		switch m.Kind {
		case appHeartbeat:
			if m.Registration == nil {
				t.Fatal("a heartbeat decoded without its registration")
			}
		case appAlterISR:
			if m.AlterISR == nil {
				t.Fatal("an ISR change decoded without its partition")
			}
		case appKafkaRequest:
			if m.Body == nil {
				t.Fatal("a forwarded request decoded without its body")
			}
		}
	})
}

// FuzzDecodeEntry: a metadata-log entry comes from a peer (replicated)
// or from disk. Any bytes decode and apply to an image, or fail with an
// error, never a panic.
func FuzzDecodeEntry(f *testing.F) {
	id := UUID{1, 2, 3}
	for _, recs := range [][]Record{
		{{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: "c1"}}},
		{{Kind: KindClusterSecret, ClusterSecret: &ClusterSecretRecord{Secret: make([]byte, ClusterSecretBytes)}}},
		{{Kind: KindTopic, Topic: &TopicRecord{Name: "t", ID: id}},
			{Kind: KindPartition, Partition: &PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		{{Kind: KindRemoveTopic, RemoveTopic: &RemoveTopicRecord{ID: id}}},
		{{Kind: KindScramCredential, ScramCredential: &ScramCredentialRecord{User: "u", Mechanism: "SCRAM-SHA-256", Credential: &ScramCredential{
			Salt: []byte("salt"), Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}}},
			{Kind: KindScramCredential, ScramCredential: &ScramCredentialRecord{User: "u", Mechanism: "SCRAM-SHA-256"}}},
		{{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: QuotaEntity{User: Named("u"), ClientID: DefaultName()}.Data(), Key: QuotaProducerByteRate, Value: 100}},
			{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: QuotaEntity{User: Named("u"), ClientID: DefaultName()}.Data(), Key: QuotaProducerByteRate, Remove: true}}},
		{{Kind: KindACL, ACL: aclRecord(acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}, false)},
			{Kind: KindACL, ACL: aclRecord(acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypePrefixed,
				Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}, true)}},
	} {
		b, err := json.Marshal(recs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"kind":"partition","partition":{"topic_id":"00000000-0000-0000-0000-000000000000","partition":-1}}]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		recs, err := decodeEntry(payload)
		if err != nil {
			return
		}
		_, _ = applyRecords(emptyImage(), 1, recs)
	})
}

// FuzzDecodeImage: a metadata snapshot comes from the acting controller
// (installed by a follower that fell behind) or from disk. Any bytes
// decode or fail with an error, never a panic; a decoded image encodes
// again, and takes the records a controller would commit next.
func FuzzDecodeImage(f *testing.F) {
	id := UUID{1, 2, 3}
	im, err := emptyImage().With(
		Record{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: "c1"}},
		Record{Kind: KindClusterSecret, ClusterSecret: &ClusterSecretRecord{Secret: make([]byte, ClusterSecretBytes)}},
		Record{Kind: KindTopic, Topic: &TopicRecord{Name: "t", ID: id}},
		Record{Kind: KindPartition, Partition: &PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}},
		Record{Kind: KindScramCredential, ScramCredential: &ScramCredentialRecord{User: "u", Mechanism: "SCRAM-SHA-512", Credential: &ScramCredential{
			Salt: []byte("salt"), Iterations: 8192, StoredKey: make([]byte, 64), ServerKey: make([]byte, 64)}}},
		Record{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: QuotaEntity{ClientID: Named("c")}.Data(), Key: QuotaConsumerByteRate, Value: 1 << 20}},
	)
	if err != nil {
		f.Fatal(err)
	}
	b, err := encodeImage(im)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := decodeImage(data)
		if err != nil {
			return
		}
		if _, err := encodeImage(im); err != nil {
			t.Fatalf("a decoded snapshot does not encode: %v", err)
		}
		for _, name := range im.TopicNames() {
			tp := im.Topic(name)
			_, _ = applyRecords(im, im.Offset+1, []Record{
				{Kind: KindPartition, Partition: &PartitionRecord{TopicID: tp.ID, Partition: int32(len(tp.Partitions)), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}},
				{Kind: KindRemoveTopic, RemoveTopic: &RemoveTopicRecord{ID: tp.ID}},
			})
		}
	})
}
