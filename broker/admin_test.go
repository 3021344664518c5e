package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
)

// End-to-end tests of the admin APIs: real franz-go clients (kadm, and
// raw kmsg requests where a version or an exact error code matters)
// against a broker on a free loopback port.

// direct sends req to node 1 as it is: no sharding, no retries on error
// codes, so the test sees exactly what the broker answered.
func direct[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(1).Request(testContext(t), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// pinned is a client that sends key at version v at most (exactly v when
// the broker serves v).
func pinned(t *testing.T, b *Broker, key kmsg.Key, v int16) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(key), v)
	cl, _ := newClient(t, b, kgo.MaxVersions(vs))
	return cl
}

func createTopic(t *testing.T, adm *kadm.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testContext(t), partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// produce writes n records to one partition and waits for their acks.
func produce(t *testing.T, b *Broker, topic string, partition int32, n int) {
	t.Helper()
	cl, _ := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v" + strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got != 0 || want != nil && got != want.Code {
		t.Fatalf("%s: error code %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func wantErr(t *testing.T, what string, got error, want *kerr.Error) {
	t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestAdminApiVersionsAdvertised(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	vs, err := adm.ApiVersions(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[int16][2]int16
	vs.Each(func(v kadm.BrokerApiVersions) {
		keys = map[int16][2]int16{}
		v.EachKeySorted(func(key, min, max int16) { keys[key] = [2]int16{min, max} })
	})
	want := map[kmsg.Key][2]int16{
		kmsg.FindCoordinator: {0, 6}, kmsg.DeleteTopics: {1, 6}, kmsg.DeleteRecords: {0, 2},
		kmsg.OffsetForLeaderEpoch: {2, 4}, kmsg.DescribeConfigs: {1, 4}, kmsg.AlterConfigs: {0, 2},
		kmsg.DescribeLogDirs: {1, 4}, kmsg.CreatePartitions: {0, 3}, kmsg.IncrementalAlterConfigs: {0, 1},
		kmsg.DescribeCluster: {0, 1}, kmsg.InitProducerID: {0, 4}, kmsg.DescribeProducers: {0, 0},
		kmsg.OffsetCommit: {0, 9}, kmsg.OffsetFetch: {0, 9}, kmsg.JoinGroup: {0, 9}, kmsg.Heartbeat: {0, 4},
		kmsg.LeaveGroup: {0, 5}, kmsg.SyncGroup: {0, 5}, kmsg.DescribeGroups: {0, 5}, kmsg.ListGroups: {0, 5},
		kmsg.DeleteGroups: {0, 2}, kmsg.OffsetDelete: {0, 0}, kmsg.ElectLeaders: {0, 2},
		kmsg.AlterPartitionAssignments: {0, 1}, kmsg.ListPartitionReassignments: {0, 0},
		kmsg.ConsumerGroupHeartbeat: {0, 1}, kmsg.ConsumerGroupDescribe: {0, 1},
		kmsg.AddPartitionsToTxn: {0, 5}, kmsg.AddOffsetsToTxn: {0, 3}, kmsg.EndTxn: {0, 4}, kmsg.WriteTxnMarkers: {0, 1},
		kmsg.TxnOffsetCommit: {0, 4},
		// Advertised on every listener, as Kafka does; a listener without
		// SASL answers them ILLEGAL_SASL_STATE.
		kmsg.SASLHandshake: {0, 1}, kmsg.SASLAuthenticate: {0, 2},
	}
	for k, r := range want {
		if keys[int16(k)] != r {
			t.Errorf("%s advertised %v, want %v", k.Name(), keys[int16(k)], r)
		}
	}
	// Unimplemented keys stay unadvertised, so clients do not send them.
	for _, k := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.DescribeTransactions, kmsg.ListTransactions} {
		if _, ok := keys[int16(k)]; ok {
			t.Errorf("%s is advertised but not implemented", k.Name())
		}
	}
}

func TestAdminDeleteTopics(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, ""))
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		createTopic(t, adm, name, 2, nil)
	}
	if _, err := os.Stat(filepath.Join(dir, "a-1")); err != nil {
		t.Fatalf("partition dir of a new topic: %v", err)
	}

	resp, err := adm.DeleteTopics(ctx, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete a", resp["a"].Err, nil)
	wantErr(t, "delete missing", resp["missing"].Err, kerr.UnknownTopicOrPartition)
	if b.Controller().Image().Topic("a") != nil {
		t.Fatal("topic a is still in the metadata")
	}
	for _, p := range []string{"a-0", "a-1"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Fatalf("partition dir %s after delete: %v", p, err)
		}
	}

	// v6 by id, and Kafka's refusals of ambiguous entries.
	im := b.Controller().Image()
	idC, idD := [16]byte(im.Topic("c").ID), [16]byte(im.Topic("d").ID)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	for _, e := range []struct {
		name *string
		id   [16]byte
	}{
		{nil, idC},                        // by id
		{nil, [16]byte{1, 2, 3}},          // unknown id
		{kmsg.StringPtr("d"), idD},        // both name and id
		{kmsg.StringPtr("b"), [16]byte{}}, // b twice
		{kmsg.StringPtr("b"), [16]byte{}},
		{nil, [16]byte{}}, // neither
	} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic, rt.TopicID = e.name, e.id
		req.Topics = append(req.Topics, rt)
	}
	r6 := direct[*kmsg.DeleteTopicsResponse](t, cl, req)
	if r6.Version != 6 || len(r6.Topics) != 6 {
		t.Fatalf("v%d response with %d topics", r6.Version, len(r6.Topics))
	}
	wantCode(t, "by id", r6.Topics[0].ErrorCode, nil)
	if deref(r6.Topics[0].Topic) != "c" || r6.Topics[0].TopicID != idC {
		t.Fatalf("by id answered %s %x", deref(r6.Topics[0].Topic), r6.Topics[0].TopicID)
	}
	wantCode(t, "unknown id", r6.Topics[1].ErrorCode, kerr.UnknownTopicID)
	wantCode(t, "name and id", r6.Topics[2].ErrorCode, kerr.InvalidRequest)
	if m := deref(r6.Topics[2].ErrorMessage); m != "You may not specify both topic name and topic id." {
		t.Fatalf("name and id: message %q", m)
	}
	wantCode(t, "duplicate name", r6.Topics[3].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "duplicate name", r6.Topics[4].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "neither", r6.Topics[5].ErrorCode, kerr.InvalidRequest)
	im = b.Controller().Image()
	if im.Topic("c") != nil || im.Topic("b") == nil || im.Topic("d") == nil {
		t.Fatalf("after v6 request: topics %v, want b and d", im.TopicNames())
	}

	// v1, the oldest served, by name.
	v1 := pinned(t, b, kmsg.DeleteTopics, 1)
	req1 := kmsg.NewPtrDeleteTopicsRequest()
	req1.TopicNames = []string{"b"}
	r1, err := req1.RequestWith(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Version != 1 || len(r1.Topics) != 1 {
		t.Fatalf("v1: version %d, %d topics", r1.Version, len(r1.Topics))
	}
	wantCode(t, "v1 delete b", r1.Topics[0].ErrorCode, nil)

	// Internal topics are refused.
	if _, err := b.Controller().CreateTopics(ctx, []cluster.CreateTopic{{Name: "__consumer_offsets", NumPartitions: 1, ReplicationFactor: 1}}, false); err != nil {
		t.Fatal(err)
	}
	resp, err = adm.DeleteTopics(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete __consumer_offsets", resp["__consumer_offsets"].Err, kerr.TopicAuthorizationFailed)
	if b.Controller().Image().Topic("__consumer_offsets") == nil {
		t.Fatal("internal topic deleted")
	}
}

func TestAdminCreatePartitions(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 1, nil)
	partitions := func() int { return len(b.Controller().Image().Topic("t").Partitions) }

	resp, err := adm.UpdatePartitions(ctx, 3, "t", "missing")
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "grow t to 3", resp["t"].Err, nil)
	wantErr(t, "grow missing", resp["missing"].Err, kerr.UnknownTopicOrPartition)
	if partitions() != 3 {
		t.Fatalf("t has %d partitions, want 3", partitions())
	}
	if b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: 2}) == nil {
		t.Fatal("new partition t/2 not hosted")
	}
	produce(t, b, "t", 2, 1)

	resp, err = adm.ValidateUpdatePartitions(ctx, 5, "t")
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "validate grow to 5", resp["t"].Err, nil)
	if partitions() != 3 {
		t.Fatalf("validateOnly changed the partition count to %d", partitions())
	}

	for _, n := range []int{2, 3} {
		resp, err = adm.UpdatePartitions(ctx, n, "t")
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, "set t to "+strconv.Itoa(n), resp["t"].Err, kerr.InvalidPartitions)
	}

	// v0 with explicit assignments.
	v0 := pinned(t, b, kmsg.CreatePartitions, 0)
	req := kmsg.NewPtrCreatePartitionsRequest()
	for _, c := range []struct {
		topic    string
		count    int32
		replicas [][]int32
	}{
		{"t", 4, [][]int32{{1}}},  // fine
		{"t2", 2, [][]int32{{7}}}, // unknown node
	} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = c.topic, c.count
		for _, r := range c.replicas {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = r
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
	}
	createTopic(t, adm, "t2", 1, nil)
	r0, err := req.RequestWith(ctx, v0)
	if err != nil {
		t.Fatal(err)
	}
	if r0.Version != 0 {
		t.Fatalf("sent v%d, want v0", r0.Version)
	}
	wantCode(t, "v0 t to 4 on node 1", r0.Topics[0].ErrorCode, nil)
	wantCode(t, "v0 t2 on node 7", r0.Topics[1].ErrorCode, kerr.InvalidReplicaAssignment)
	if partitions() != 4 {
		t.Fatalf("t has %d partitions, want 4", partitions())
	}

	// A topic named twice, and an internal topic (the broker created
	// __consumer_offsets at start).
	offsetsPartitions := len(b.Controller().Image().Topic("__consumer_offsets").Partitions)
	dup := kmsg.NewPtrCreatePartitionsRequest()
	for _, name := range []string{"t2", "t2", "__consumer_offsets"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, 9
		dup.Topics = append(dup.Topics, rt)
	}
	rd := direct[*kmsg.CreatePartitionsResponse](t, cl, dup)
	wantCode(t, "t2 twice", rd.Topics[0].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "t2 twice", rd.Topics[1].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "internal topic", rd.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
	if n := len(b.Controller().Image().Topic("__consumer_offsets").Partitions); n != offsetsPartitions {
		t.Fatalf("__consumer_offsets went from %d to %d partitions", offsetsPartitions, n)
	}
}

func TestAdminDeleteRecords(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 2, nil)
	createTopic(t, adm, "compacted", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	produce(t, b, "t", 0, 10)

	del := func(offset int64) kadm.DeleteRecordsResponse {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: offset})
		resp, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := resp.Lookup("t", 0)
		if !ok {
			t.Fatalf("no answer for t/0: %v", resp)
		}
		return r
	}
	if r := del(4); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete below 4: low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	start, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("t", 0); o.Offset != 4 {
		t.Fatalf("log start offset %d after delete, want 4", o.Offset)
	}
	if r := del(2); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete below 2 (under the start): low watermark %d, err %v; want 4, nil", r.LowWatermark, r.Err)
	}
	if r := del(11); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete beyond the high watermark: %v", r.Err)
	}
	if r := del(-1); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete to the high watermark (-1): low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	if got := b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: 0}).Log().LogStartOffset(); got != 10 {
		t.Fatalf("log start offset %d, want 10", got)
	}

	// v0, and errors kadm would catch before sending.
	v0 := pinned(t, b, kmsg.DeleteRecords, 0)
	req := kmsg.NewPtrDeleteRecordsRequest()
	for _, c := range []struct {
		topic     string
		partition int32
		offset    int64
	}{{"t", 1, 0}, {"t", 9, 0}, {"missing", 0, 0}, {"compacted", 0, 0}, {"t", 1, -5}} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = c.partition, c.offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	r0, err := v0.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := r0.(*kmsg.DeleteRecordsResponse)
	if resp.Version != 0 {
		t.Fatalf("sent v%d, want v0", resp.Version)
	}
	wantCode(t, "empty partition to 0", resp.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "partition 9", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "missing topic", resp.Topics[2].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "compacted topic", resp.Topics[3].Partitions[0].ErrorCode, kerr.PolicyViolation)
	wantCode(t, "offset -5", resp.Topics[4].Partitions[0].ErrorCode, kerr.OffsetOutOfRange)
	if lw := resp.Topics[1].Partitions[0].LowWatermark; lw != -1 {
		t.Fatalf("low watermark %d on error, want -1", lw)
	}
}

func TestAdminOffsetForLeaderEpoch(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 2, nil)
	produce(t, b, "t", 0, 5)

	var req kadm.OffsetForLeaderEpochRequest
	req.Add("t", 0, 0)
	req.Add("t", 1, 0) // empty: epoch 0 has begun at 0 all the same
	resp, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["t"][0]; r.Err != nil || r.LeaderEpoch != 0 || r.EndOffset != 5 {
		t.Fatalf("t/0 epoch 0: %+v, want epoch 0 end 5", r)
	}
	if r := resp["t"][1]; r.Err != nil || r.LeaderEpoch != 0 || r.EndOffset != 0 {
		t.Fatalf("t/1 epoch 0: %+v, want epoch 0 end 0", r)
	}
	// Cross-check with the log: its end offset is the answer for the
	// current epoch.
	if leo := b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: 0}).Log().LogEndOffset(); leo != 5 {
		t.Fatalf("log end offset %d", leo)
	}

	for _, v := range []int16{2, 4} {
		pc := pinned(t, b, kmsg.OffsetForLeaderEpoch, v)
		raw := kmsg.NewPtrOffsetForLeaderEpochRequest()
		raw.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		for _, c := range []struct{ partition, current, epoch int32 }{
			{0, 0, 0},  // current epoch given and right
			{0, -1, 1}, // an epoch the log has not reached
			{0, 1, 0},  // client's metadata ahead of ours
			{0, -2, 0}, // anything but -1 below ours is fenced
			{7, -1, 0}, // no such partition
		} {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = c.partition, c.current, c.epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		raw.Topics = append(raw.Topics, rt)
		r, err := pc.Broker(1).Request(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		out := r.(*kmsg.OffsetForLeaderEpochResponse)
		if out.Version != v {
			t.Fatalf("sent v%d, want v%d", out.Version, v)
		}
		ps := out.Topics[0].Partitions
		if p := ps[0]; p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 5 {
			t.Fatalf("v%d epoch 0: %+v", v, p)
		}
		if p := ps[1]; p.ErrorCode != 0 || p.LeaderEpoch != -1 || p.EndOffset != -1 {
			t.Fatalf("v%d epoch 1: %+v, want -1, -1", v, p)
		}
		wantCode(t, "current epoch ahead", ps[2].ErrorCode, kerr.UnknownLeaderEpoch)
		wantCode(t, "current epoch -2", ps[3].ErrorCode, kerr.FencedLeaderEpoch)
		wantCode(t, "partition 7", ps[4].ErrorCode, kerr.UnknownTopicOrPartition)
	}
}

// configOf finds one config of a described resource.
func configOf(t *testing.T, rcs kadm.ResourceConfigs, resource, name string) kadm.Config {
	t.Helper()
	rc, err := rcs.On(resource, nil)
	if err != nil {
		t.Fatalf("resource %s: %v", resource, err)
	}
	if rc.Err != nil {
		t.Fatalf("resource %s: %v (%s)", resource, rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("resource %s has no config %s", resource, name)
	return kadm.Config{}
}

func TestAdminDescribeConfigs(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), "\n[storage]\nlog.retention.hours = 48\n"))
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1048576")})

	rcs, err := adm.DescribeTopicConfigs(ctx, "t", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if rc, _ := rcs.On("missing", nil); !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: %v", rc.Err)
	}
	seg := configOf(t, rcs, "t", "segment.bytes")
	if seg.MaybeValue() != "1048576" || seg.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("segment.bytes: %s from %v", seg.MaybeValue(), seg.Source)
	}
	if len(seg.Synonyms) < 2 || seg.Synonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig || seg.Synonyms[1].Key != "log.segment.bytes" {
		t.Fatalf("segment.bytes synonyms: %+v", seg.Synonyms)
	}
	ret := configOf(t, rcs, "t", "retention.ms")
	if ret.MaybeValue() != strconv.Itoa(48*3600*1000) || ret.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms: %s from %v, want 48 hours from the file", ret.MaybeValue(), ret.Source)
	}

	brokers, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := configOf(t, brokers, "1", "node.id"); c.MaybeValue() != "1" {
		t.Fatalf("node.id: %+v", c)
	}
	if c := configOf(t, brokers, "1", "log.retention.hours"); c.MaybeValue() != "48" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.retention.hours: %s from %v", c.MaybeValue(), c.Source)
	}

	// v1 and v4 raw: flags, types, documentation, name filter, errors.
	for _, v := range []int16{1, 4} {
		pc := pinned(t, b, kmsg.DescribeConfigs, v)
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeDocumentation = true
		for _, r := range []struct {
			rt    kmsg.ConfigResourceType
			name  string
			names []string
		}{
			{kmsg.ConfigResourceTypeTopic, "t", []string{"segment.bytes", "no.such.config"}},
			{kmsg.ConfigResourceTypeBroker, "1", []string{"node.id", "log.cleanup.policy"}},
			{kmsg.ConfigResourceTypeBroker, "2", nil},
			{kmsg.ConfigResourceTypeBroker, "", nil},
			{kmsg.ConfigResourceTypeTopic, "bad/name", nil},
			{kmsg.ConfigResourceTypeBrokerLogger, "1", nil},
		} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = r.rt, r.name, r.names
			req.Resources = append(req.Resources, rr)
		}
		r, err := pc.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.DescribeConfigsResponse)
		if resp.Version != v || len(resp.Resources) != 6 {
			t.Fatalf("v%d response with %d resources", resp.Version, len(resp.Resources))
		}
		topic := resp.Resources[0]
		if topic.ErrorCode != 0 || len(topic.Configs) != 1 || topic.Configs[0].Name != "segment.bytes" {
			t.Fatalf("v%d topic filtered by names: %+v", v, topic)
		}
		c := topic.Configs[0]
		if c.ReadOnly || c.IsSensitive || c.Source != kmsg.ConfigSourceDynamicTopicConfig || len(c.ConfigSynonyms) != 0 {
			t.Fatalf("v%d segment.bytes flags: %+v", v, c)
		}
		wantType := kmsg.ConfigType(0) // not in v1: decodes as zero
		if v >= 3 {
			wantType = kmsg.ConfigTypeInt
			if c.Documentation == nil || *c.Documentation == "" {
				t.Fatalf("v%d: no documentation though asked", v)
			}
		} else if c.Documentation != nil {
			t.Fatalf("v%d: documentation in a version without it", v)
		}
		if c.ConfigType != wantType {
			t.Fatalf("v%d segment.bytes type %v, want %v", v, c.ConfigType, wantType)
		}
		broker := resp.Resources[1]
		if broker.ErrorCode != 0 || len(broker.Configs) != 2 {
			t.Fatalf("v%d broker 1: %+v", v, broker)
		}
		for _, c := range broker.Configs {
			if want := c.Name == "node.id"; c.ReadOnly != want {
				t.Fatalf("v%d broker %s read-only %v, want %v", v, c.Name, c.ReadOnly, want)
			}
		}
		wantCode(t, "broker 2", resp.Resources[2].ErrorCode, kerr.InvalidRequest)
		if m := deref(resp.Resources[2].ErrorMessage); m != "Unexpected broker id, expected 1 or empty string, but received 2" {
			t.Fatalf("broker 2 message %q", m)
		}
		if cd := resp.Resources[3]; cd.ErrorCode != 0 || len(cd.Configs) != 0 {
			t.Fatalf("v%d cluster default before any alteration: %+v", v, cd)
		}
		wantCode(t, "topic bad/name", resp.Resources[4].ErrorCode, kerr.InvalidTopicException)
		wantCode(t, "broker logger", resp.Resources[5].ErrorCode, kerr.InvalidRequest)
	}

	// A small request cannot ask for an unbounded response: the configs
	// of one response are capped, later resources refused.
	many := kmsg.NewPtrDescribeConfigsRequest()
	for range 400 {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		many.Resources = append(many.Resources, rr)
	}
	resp := direct[*kmsg.DescribeConfigsResponse](t, cl, many)
	total, refused := 0, 0
	for _, r := range resp.Resources {
		total += len(r.Configs)
		if r.ErrorCode == kerr.InvalidRequest.Code {
			refused++
		}
	}
	if len(resp.Resources) != 400 || resp.Resources[0].ErrorCode != 0 || refused == 0 || total > 16384 || total < 16384-200 {
		t.Fatalf("400 broker resources: %d answered, %d refused, %d configs in all", len(resp.Resources), refused, total)
	}
}

// alterOne applies incremental ops to one topic and returns its result.
func alterOne(t *testing.T, adm *kadm.Client, validate bool, topic string, ops ...kadm.AlterConfig) kadm.AlterConfigsResponse {
	t.Helper()
	alter := adm.AlterTopicConfigs
	if validate {
		alter = adm.ValidateAlterTopicConfigs
	}
	resp, err := alter(testContext(t), ops, topic)
	if err != nil && len(resp) == 0 {
		t.Fatal(err)
	}
	if len(resp) != 1 {
		t.Fatalf("%d results", len(resp))
	}
	return resp[0]
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return configOf(t, rcs, topic, name)
}

func TestAdminIncrementalAlterConfigs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 1, nil)
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v} }

	if r := alterOne(t, adm, false, "t", set("retention.ms", "60000")); r.Err != nil {
		t.Fatalf("set retention.ms: %v %s", r.Err, r.ErrMessage)
	}
	if c := topicConfig(t, adm, "t", "retention.ms"); c.MaybeValue() != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after set: %s from %v", c.MaybeValue(), c.Source)
	}
	// The log runs with it.
	if got := b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: 0}).Log().Options().RetentionMs; got != 60000 {
		t.Fatalf("log retention %d ms, want 60000", got)
	}

	for _, c := range []struct {
		op      kadm.AlterConfig
		code    *kerr.Error
		message string
	}{
		{set("retention.ms", "abc"), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{set("no.such.config", "1"), kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
		{kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}, kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}, kerr.InvalidConfig, "Invalid value  for configuration cleanup.policy: List must not be empty"},
	} {
		r := alterOne(t, adm, false, "t", c.op)
		if !errors.Is(r.Err, c.code) || r.ErrMessage != c.message {
			t.Errorf("%s %s: %v %q, want %v %q", c.op.Name, deref(c.op.Value), r.Err, r.ErrMessage, c.code, c.message)
		}
	}

	// validateOnly checks and does not persist.
	if r := alterOne(t, adm, true, "t", set("segment.ms", "1000")); r.Err != nil {
		t.Fatalf("validate segment.ms: %v", r.Err)
	}
	if r := alterOne(t, adm, true, "t", set("segment.ms", "-5")); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Fatalf("validate bad segment.ms: %v", r.Err)
	}
	if c := topicConfig(t, adm, "t", "segment.ms"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.ms persisted by validateOnly: %s from %v", c.MaybeValue(), c.Source)
	}

	// APPEND starts from the value in force, SUBTRACT removes.
	if r := alterOne(t, adm, false, "t", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact,delete")}); r.Err != nil {
		t.Fatalf("append: %v %s", r.Err, r.ErrMessage)
	}
	if c := topicConfig(t, adm, "t", "cleanup.policy"); c.MaybeValue() != "delete,compact" {
		t.Fatalf("cleanup.policy after append: %q", c.MaybeValue())
	}
	if r := alterOne(t, adm, false, "t", kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}); r.Err != nil {
		t.Fatalf("subtract: %v %s", r.Err, r.ErrMessage)
	}
	if c := topicConfig(t, adm, "t", "cleanup.policy"); c.MaybeValue() != "compact" {
		t.Fatalf("cleanup.policy after subtract: %q", c.MaybeValue())
	}
	// DELETE returns to the default; deleting what is not set is fine.
	if r := alterOne(t, adm, false, "t", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "cleanup.policy"}, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "never.set"}); r.Err != nil {
		t.Fatalf("delete: %v %s", r.Err, r.ErrMessage)
	}
	if c := topicConfig(t, adm, "t", "cleanup.policy"); c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cleanup.policy after delete: %s from %v", c.MaybeValue(), c.Source)
	}
	if r := alterOne(t, adm, false, "missing", set("retention.ms", "1")); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: %v", r.Err)
	}

	// Broker resources: this node, and the cluster-wide default.
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.cleanup.policy", "compact")}, 1)
	if err != nil || resp[0].Err != nil {
		t.Fatalf("broker 1 log.cleanup.policy: %v %v", err, resp)
	}
	resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", "86400000")})
	if err != nil || resp[0].Err != nil {
		t.Fatalf("cluster-wide log.retention.ms: %v %v", err, resp)
	}
	resp, _ = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("node.id", "2")}, 1)
	if !errors.Is(resp[0].Err, kerr.InvalidRequest) || resp[0].ErrMessage != "Cannot update these configs dynamically: Set(node.id)" {
		t.Fatalf("read-only node.id: %v %q", resp[0].Err, resp[0].ErrMessage)
	}
	resp, _ = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", "soon")}, 1)
	if !errors.Is(resp[0].Err, kerr.InvalidRequest) || !strings.HasPrefix(resp[0].ErrMessage, "Invalid value soon for configuration log.retention.ms") {
		t.Fatalf("bad broker value: %v %q", resp[0].Err, resp[0].ErrMessage)
	}
	brokers, err := adm.DescribeBrokerConfigs(ctx) // "" only
	if err != nil {
		t.Fatal(err)
	}
	if rc, _ := brokers.On("", nil); len(rc.Configs) != 1 || rc.Configs[0].Key != "log.retention.ms" ||
		rc.Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster-wide configs: %+v", rc)
	}
	if c := topicConfig(t, adm, "t", "cleanup.policy"); c.MaybeValue() != "compact" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic cleanup.policy from broker 1's layer: %s from %v", c.MaybeValue(), c.Source)
	}

	// Kafka's refusals of malformed resources.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		name string
		cfgs []kmsg.IncrementalAlterConfigsRequestResourceConfig
	}{
		{"t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}, {Name: "retention.ms", Value: kmsg.StringPtr("2")}}},
		{"t2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms"}}},
		{"t3", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: 9, Value: kmsg.StringPtr("1")}}},
	} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeTopic, r.name, r.cfgs
		req.Resources = append(req.Resources, rr)
	}
	// Sent as v0 (kadm above sent v1).
	r := direct[*kmsg.IncrementalAlterConfigsResponse](t, pinned(t, b, kmsg.IncrementalAlterConfigs, 0), req)
	if r.Version != 0 {
		t.Fatalf("sent v%d, want v0", r.Version)
	}
	for i, want := range []string{"Error due to duplicate config keys", "Null value not supported for : retention.ms", "Unknown operations type 9"} {
		wantCode(t, want, r.Resources[i].ErrorCode, kerr.InvalidRequest)
		if m := deref(r.Resources[i].ErrorMessage); m != want {
			t.Errorf("message %q, want %q", m, want)
		}
	}
}

func TestAdminAlterConfigs(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000"), "segment.ms": kmsg.StringPtr("2000")})
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Name: k, Value: &v} }

	// validateOnly persists nothing.
	resp, err := adm.ValidateAlterTopicConfigsState(ctx, []kadm.AlterConfig{set("max.message.bytes", "2000")}, "t")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("validate: %v %v", err, resp)
	}
	if got := b.Controller().Image().Topic("t").Configs; len(got) != 2 {
		t.Fatalf("validateOnly changed the overrides: %v", got)
	}
	// Replacing drops the keys not given.
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("max.message.bytes", "2000")}, "t")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter: %v %v", err, resp)
	}
	if got := b.Controller().Image().Topic("t").Configs; len(got) != 1 || got["max.message.bytes"] != "2000" {
		t.Fatalf("overrides after replace: %v", got)
	}
	if c := topicConfig(t, adm, "t", "retention.ms"); c.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms survived a replace: %s", c.MaybeValue())
	}
	resp, _ = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("min.compaction.lag.ms", "10"), set("max.compaction.lag.ms", "5")}, "t")
	if !errors.Is(resp[0].Err, kerr.InvalidConfig) || !strings.Contains(resp[0].ErrMessage, "min.compaction.lag.ms") {
		t.Fatalf("contradicting values: %v %q", resp[0].Err, resp[0].ErrMessage)
	}

	// v0, a broker resource, a null value, a resource given twice.
	v0 := pinned(t, b, kmsg.AlterConfigs, 0)
	req := kmsg.NewPtrAlterConfigsRequest()
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
		cfgs []kmsg.AlterConfigsRequestResourceConfig
	}{
		{kmsg.ConfigResourceTypeBroker, "1", []kmsg.AlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("5000")}}},
		{kmsg.ConfigResourceTypeTopic, "t", []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms"}}},
		{kmsg.ConfigResourceTypeBroker, "x", nil},
		{kmsg.ConfigResourceTypeTopic, "dup", nil},
		{kmsg.ConfigResourceTypeTopic, "dup", nil},
	} {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = r.rt, r.name, r.cfgs
		req.Resources = append(req.Resources, rr)
	}
	raw, err := v0.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r0 := raw.(*kmsg.AlterConfigsResponse)
	if r0.Version != 0 {
		t.Fatalf("sent v%d, want v0", r0.Version)
	}
	wantCode(t, "broker 1", r0.Resources[0].ErrorCode, nil)
	wantCode(t, "null value", r0.Resources[1].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "broker x", r0.Resources[2].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "dup", r0.Resources[3].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "dup", r0.Resources[4].ErrorCode, kerr.InvalidRequest)
	if got := b.Controller().Image().BrokerConfigs("1"); got["log.retention.ms"] != "5000" {
		t.Fatalf("broker 1 layer: %v", got)
	}
}

func TestAdminConfigsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 1, nil)
	if r := alterOne(t, adm, false, "t", kadm.AlterConfig{Name: "retention.ms", Value: kmsg.StringPtr("777")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.cleanup.policy", Value: kmsg.StringPtr("compact")}}); err != nil || resp[0].Err != nil {
		t.Fatalf("cluster-wide alter: %v %v", err, resp)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, testConfig(t, dir, ""))
	_, adm = newClient(t, b)
	if c := topicConfig(t, adm, "t", "retention.ms"); c.MaybeValue() != "777" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after restart: %s from %v", c.MaybeValue(), c.Source)
	}
	if c := topicConfig(t, adm, "t", "cleanup.policy"); c.MaybeValue() != "compact" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cleanup.policy after restart: %s from %v", c.MaybeValue(), c.Source)
	}
	if got := b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: 0}).Log().Options().RetentionMs; got != 777 {
		t.Fatalf("log retention %d ms after restart, want 777", got)
	}
}

func TestAdminDescribeCluster(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	addr := b.Addr().String()
	for _, v := range []int16{0, 1} {
		cl := pinned(t, b, kmsg.DescribeCluster, v)
		req := kmsg.NewPtrDescribeClusterRequest()
		r := direct[*kmsg.DescribeClusterResponse](t, cl, req)
		if r.Version != v || r.ErrorCode != 0 {
			t.Fatalf("v%d: version %d error %v", v, r.Version, kerr.ErrorForCode(r.ErrorCode))
		}
		if r.ClusterID != b.Controller().ClusterID() || r.ControllerID != 1 || len(r.Brokers) != 1 {
			t.Fatalf("v%d: cluster %q controller %d brokers %+v", v, r.ClusterID, r.ControllerID, r.Brokers)
		}
		if br := r.Brokers[0]; br.NodeID != 1 || br.Host+":"+strconv.Itoa(int(br.Port)) != addr || br.Rack != nil {
			t.Fatalf("v%d: broker %+v, want node 1 at %s", v, br, addr)
		}
		if v == 1 {
			for _, c := range []struct {
				endpoint int8
				code     *kerr.Error
			}{{2, kerr.MismatchedEndpointType}, {7, kerr.UnsupportedEndpointType}} {
				req.EndpointType = c.endpoint
				r := direct[*kmsg.DescribeClusterResponse](t, cl, req)
				wantCode(t, "endpoint type "+strconv.Itoa(int(c.endpoint)), r.ErrorCode, c.code)
			}
		}
	}
}

func TestAdminDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	createTopic(t, adm, "t", 2, nil)
	produce(t, b, "t", 0, 20)

	dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	d, ok := dirs[abs]
	if !ok || len(dirs) != 1 || d.Err != nil {
		t.Fatalf("log dirs %+v, want just %s", dirs, abs)
	}
	for p := int32(0); p < 2; p++ {
		got, ok := dirs.Lookup(abs, "t", p)
		want := b.Replicas().Partition(engine.TopicPartition{Topic: "t", Partition: p}).Log().Size()
		if !ok || got.Size != want || (p == 0) != (got.Size > 0) {
			t.Fatalf("t/%d size %d (listed %v), log says %d", p, got.Size, ok, want)
		}
		if got.OffsetLag != 0 || got.IsFuture {
			t.Fatalf("t/%d: lag %d future %v", p, got.OffsetLag, got.IsFuture)
		}
	}
	// Total and usable bytes, cross-checked with statfs here.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if total := int64(st.Blocks) * int64(st.Bsize); d.TotalBytes != total || d.UsableBytes <= 0 || d.UsableBytes > total {
		t.Fatalf("total %d usable %d, statfs total %d", d.TotalBytes, d.UsableBytes, total)
	}

	// v1 (no byte counts), asking for one partition only.
	v1 := pinned(t, b, kmsg.DescribeLogDirs, 1)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{1, 5}
	req.Topics = append(req.Topics, rt)
	r := direct[*kmsg.DescribeLogDirsResponse](t, v1, req)
	if r.Version != 1 || len(r.Dirs) != 1 {
		t.Fatalf("v%d: %d dirs", r.Version, len(r.Dirs))
	}
	if got := r.Dirs[0]; got.TotalBytes != -1 || len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 || got.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("v1 filtered: %+v", got)
	}
}

func TestAdminFindCoordinator(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	for _, v := range []int16{0, 3} {
		cl := pinned(t, b, kmsg.FindCoordinator, v)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		r := direct[*kmsg.FindCoordinatorResponse](t, cl, req)
		if r.Version != v || r.NodeID != 1 || r.Port <= 0 {
			t.Fatalf("v%d: version %d node %d port %d", v, r.Version, r.NodeID, r.Port)
		}
		wantCode(t, "group coordinator", r.ErrorCode, nil)
		if v == 3 {
			// A transactional id: COORDINATOR_NOT_AVAILABLE (retriable)
			// while __transaction_state is being created, then this node.
			req.CoordinatorType = 1
			deadline := time.Now().Add(30 * time.Second)
			for {
				r = direct[*kmsg.FindCoordinatorResponse](t, cl, req)
				if r.ErrorCode == 0 || time.Now().After(deadline) {
					break
				}
				wantCode(t, "transaction coordinator, topic not created yet", r.ErrorCode, kerr.CoordinatorNotAvailable)
				time.Sleep(20 * time.Millisecond)
			}
			wantCode(t, "transaction coordinator", r.ErrorCode, nil)
			if r.NodeID != 1 {
				t.Fatalf("transaction coordinator: node %d", r.NodeID)
			}
			req.CoordinatorType = 2
			r = direct[*kmsg.FindCoordinatorResponse](t, cl, req)
			wantCode(t, "share coordinator before v6", r.ErrorCode, kerr.InvalidRequest)
		}
	}
	cl, _ := newClient(t, b)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"g1", "g2"}
	r := direct[*kmsg.FindCoordinatorResponse](t, cl, req)
	if r.Version != 6 || len(r.Coordinators) != 2 {
		t.Fatalf("batched: v%d %+v", r.Version, r.Coordinators)
	}
	var keys []string
	for _, c := range r.Coordinators {
		keys = append(keys, c.Key)
		wantCode(t, "batched "+c.Key, c.ErrorCode, nil)
		if c.NodeID != 1 {
			t.Fatalf("%s: node %d", c.Key, c.NodeID)
		}
	}
	if !slices.Equal(keys, []string{"g1", "g2"}) {
		t.Fatalf("keys %v", keys)
	}
}
