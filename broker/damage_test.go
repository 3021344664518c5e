package broker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/health"
)

// TestDamagedSegmentGoesOffline: a byte flipped in an old segment after a
// clean stop is found by the scrubber; the partition then refuses the
// damaged offsets (KAFKA_STORAGE_ERROR) and appends, still serves every
// other acknowledged record at its offset, and nothing is deleted.
func TestDamagedSegmentGoesOffline(t *testing.T) {
	dir := t.TempDir()
	extra := "[storage]\nlog.scrubber.io.max.bytes.per.second = 1073741824\n"
	cfg := testConfig(t, dir, extra)
	b := startBroker(t, cfg)
	cl, adm := newClient(t, b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1048576")}, "d"); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	values := map[int64]string{}
	for i := 0; i < n; i += 100 {
		var rs []*kgo.Record
		for j := i; j < i+100; j++ {
			rs = append(rs, &kgo.Record{Topic: "d", Value: fmt.Appendf(nil, "record-%04d-%01000d", j, j)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			values[r.Offset] = string(r.Value)
		}
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Flip a bit in a record of a batch in the middle of the second segment.
	segs, _ := filepath.Glob(filepath.Join(dir, "d-0", "*.log"))
	sort.Strings(segs)
	if len(segs) < 4 {
		t.Fatalf("want several segments, got %v", segs)
	}
	data, err := os.ReadFile(segs[1])
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	for pos := int64(0); pos < int64(len(data)); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, pos)
		pos += int64(h.Size())
	}
	badPos := starts[len(starts)/2]
	badHeader, _ := batch.ParseHeader(data[badPos:])
	data[badPos+int64(badHeader.Size())-10] ^= 0x04
	if err := os.WriteFile(segs[1], data, 0o644); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, testConfig(t, dir, extra))
	deadline := time.Now().Add(30 * time.Second)
	var damage []engine.Damage
	for len(damage) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scrubber found no damage within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
		damage = b2.logs.Damaged()
	}
	d := damage[0]
	if d.FirstOffset != badHeader.BaseOffset || d.LastOffset != badHeader.LastOffset() || d.Position != badPos {
		t.Fatalf("damage %v, want offsets %d..%d at %d", d, badHeader.BaseOffset, badHeader.LastOffset(), badPos)
	}
	// The damage shows in /metrics.
	series := scrape(t, b2)
	dirLabel := fmt.Sprintf("{log_dir=%q}", dir)
	if series["wren_storage_damaged_partitions"+dirLabel] != 1 || series["wren_storage_damaged_ranges"+dirLabel] != 1 {
		t.Fatalf("damage metrics: partitions %v ranges %v", series["wren_storage_damaged_partitions"+dirLabel],
			series["wren_storage_damaged_ranges"+dirLabel])
	}
	// And in every health answer, by the same rule: the cluster is
	// unhealthy while the node still serves (ready).
	checkDamageHealth(t, b2, health.DamagedPartition{Node: 1, Partition: "d/0", Ranges: 1})
	cl2, _ := newClient(t, b2)
	fetch := func(offset int64) (int16, []kgo.Record) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxWaitMillis = 10
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "d"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl2)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "d", Partition: 0, Offset: offset}, &p, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil && p.ErrorCode == 0 {
			t.Fatalf("fetch at %d: %v", offset, fp.Err)
		}
		var recs []kgo.Record
		for _, r := range fp.Records {
			recs = append(recs, *r)
		}
		return p.ErrorCode, recs
	}
	// Every acknowledged record outside the damaged batch reads back at its
	// offset; the damaged ones are refused.
	for off := int64(0); off < n; {
		code, recs := fetch(off)
		if off >= d.FirstOffset && off <= d.LastOffset {
			if code != kerr.KafkaStorageError.Code {
				t.Fatalf("fetch at damaged offset %d: error %d", off, code)
			}
			off = d.LastOffset + 1
			continue
		}
		if code != 0 || len(recs) == 0 {
			t.Fatalf("fetch at %d: error %d, %d records", off, code, len(recs))
		}
		for _, r := range recs {
			if r.Offset >= d.FirstOffset && r.Offset <= d.LastOffset {
				t.Fatalf("fetch at %d served damaged offset %d", off, r.Offset)
			}
			if r.Offset < off {
				continue
			}
			if values[r.Offset] != string(r.Value) {
				t.Fatalf("offset %d reads %q, want %q", r.Offset, r.Value, values[r.Offset])
			}
			off = r.Offset + 1
		}
	}
	// Appends are refused with a retriable storage error and a message.
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "d"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneRecordBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl2)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.KafkaStorageError.Code || p.ErrorMessage == nil {
		t.Fatalf("produce to a damaged partition: error %d, message %v", p.ErrorCode, p.ErrorMessage)
	}
	// Nothing was deleted: the damaged file is as it was left.
	after, err := os.ReadFile(segs[1])
	if err != nil || string(after) != string(data) {
		t.Fatalf("the damaged segment changed on disk (%v)", err)
	}
}

// checkDamageHealth checks that /v1/cluster/health, the wren_cluster_
// metrics and `wren cluster health` list want as the one damaged replica
// and call the cluster unhealthy for it, while /readyz stays 200.
func checkDamageHealth(t *testing.T, b *Broker, want health.DamagedPartition) {
	t.Helper()
	code, body := httpGet(t, b, "/v1/cluster/health")
	var h health.ClusterHealth
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK {
		t.Fatalf("/v1/cluster/health: %d %s (%v)", code, body, err)
	}
	if h.Healthy || !reflect.DeepEqual(h.UnhealthyReasons, []string{health.ReasonDamaged}) ||
		!reflect.DeepEqual(h.DamagedPartitions, []health.DamagedPartition{want}) {
		t.Fatalf("/v1/cluster/health with %+v damaged: %s", want, body)
	}
	if code, body := httpGet(t, b, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with a damaged partition: %d %s; the node still serves the rest", code, body)
	}
	series := scrape(t, b)
	if series["wren_cluster_damaged_partitions"] != 1 || series["wren_cluster_healthy"] != 0 {
		t.Fatalf("wren_cluster_damaged_partitions %v, wren_cluster_healthy %v", series["wren_cluster_damaged_partitions"], series["wren_cluster_healthy"])
	}
	code, out := clusterHealthCLI(t, b, "--format", "json")
	var cli health.ClusterHealth
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &cli); err != nil || code != 1 ||
		!reflect.DeepEqual(cli.DamagedPartitions, h.DamagedPartitions) || !reflect.DeepEqual(cli.UnhealthyReasons, h.UnhealthyReasons) {
		t.Fatalf("wren cluster health with %+v damaged: exit %d (%v)\n%s", want, code, err, out)
	}
}

func oneRecordBatch(t *testing.T) []byte {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.Append(batch.Record{Value: []byte("x"), Timestamp: time.Now().UnixMilli()})
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
