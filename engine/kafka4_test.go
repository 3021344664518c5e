package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// The golden data in ../testdata/kafka4 was written by a real Apache Kafka
// 4.x broker (scripts/kafka-golden.sh): a partition with several segments
// and batches of every codec, plus Kafka's own checkpoints and
// meta.properties. manifest.json lists every batch and record.
type kafkaManifest struct {
	KafkaVersion string `json:"kafka_version"`
	Batches      []struct {
		BaseOffset           int64  `json:"base_offset"`
		LastOffset           int64  `json:"last_offset"`
		Count                int32  `json:"count"`
		ProducerID           int64  `json:"producer_id"`
		PartitionLeaderEpoch int32  `json:"partition_leader_epoch"`
		Position             int64  `json:"position"`
		MaxTimestamp         int64  `json:"max_timestamp"`
		Size                 int    `json:"size"`
		Codec                string `json:"codec"`
		CRC                  uint32 `json:"crc"`
		Segment              int64  `json:"segment"`
	} `json:"batches"`
	Records []struct {
		Offset      int64   `json:"offset"`
		Codec       string  `json:"codec"`
		Timestamp   int64   `json:"timestamp"`
		Key         *string `json:"key"`
		Value       *string `json:"value"`
		ValueLen    *int    `json:"value_len"`
		ValueSHA256 string  `json:"value_sha256"`
		Headers     []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"headers"`
	} `json:"records"`
}

// copyGolden copies ../testdata/kafka4 into a fresh data directory.
func copyGolden(t *testing.T) (string, *kafkaManifest) {
	t.Helper()
	src := filepath.Join("..", "testdata", "kafka4")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var m kafkaManifest
	data, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	mustNotErr(t, err)
	mustNotErr(t, json.Unmarshal(data, &m))
	return dst, &m
}

func b64(t *testing.T, s *string) []byte {
	t.Helper()
	if s == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	mustNotErr(t, err)
	if b == nil {
		b = []byte{}
	}
	return b
}

func TestKafkaWrittenPartitionOpensReadsAndExtends(t *testing.T) {
	dir, man := copyGolden(t)
	fsys := vfs.NewOS()
	meta, err := parseMeta(mustRead(t, filepath.Join(dir, MetaPropertiesFile)))
	mustNotErr(t, err)
	cfg := ManagerConfig{ClusterID: meta.ClusterID, NodeID: meta.NodeID, Defaults: DefaultOptions()}
	m, err := OpenManager(fsys, dir, cfg)
	mustNotErr(t, err)
	tp := TopicPartition{"golden", 0}
	l := m.Log(tp)
	if l == nil {
		t.Fatal("golden-0 not found")
	}
	last := man.Batches[len(man.Batches)-1]
	if l.LogStartOffset() != 0 || l.LogEndOffset() != last.LastOffset+1 {
		t.Fatalf("log start %d end %d, want 0 and %d", l.LogStartOffset(), l.LogEndOffset(), last.LastOffset+1)
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("Kafka wrote several segments, engine sees %d", n)
	}
	checkIndexesAgree(t, l)
	checkGoldenContents(t, l, man)

	// Timestamp lookups agree with a scan of the manifest.
	for _, probe := range []int{0, 1, 150, 600, len(man.Records) - 1} {
		target := man.Records[probe].Timestamp
		off, ts, _, found, err := l.OffsetForTimestamp(target)
		mustNotErr(t, err)
		for _, r := range man.Records {
			if r.Timestamp >= target {
				if !found || off != r.Offset || ts != r.Timestamp {
					t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; manifest says %d, %d", target, off, ts, found, r.Offset, r.Timestamp)
				}
				break
			}
		}
	}

	// Extend the Kafka-written log with every codec, in a new leader epoch.
	leo := l.LogEndOffset()
	var added []byte
	for i := 0; i < 5; i++ {
		b := makeBatch(t, batch.CompressionType(i), i, 20, 300, last.MaxTimestamp+int64(i))
		info, err := l.Append(b, 1)
		mustNotErr(t, err)
		added = append(added, b...)
		if i == 0 && info.FirstOffset != leo {
			t.Fatalf("first appended offset %d, want %d", info.FirstOffset, leo)
		}
	}
	mustNotErr(t, l.Roll())
	mustNotErr(t, m.Close())

	// Reopen from the recovery point (no scan) and again with a full scan.
	for _, full := range []bool{false, true} {
		if full {
			mustNotErr(t, os.Remove(filepath.Join(dir, RecoveryPointCheckpointFile)))
		}
		m2, err := OpenManager(fsys, dir, cfg)
		mustNotErr(t, err)
		l2 := m2.Log(tp)
		checkIndexesAgree(t, l2)
		checkGoldenContents(t, l2, man)
		got, err := l2.ReadBatches(leo, 1<<20, l2.LogEndOffset())
		mustNotErr(t, err)
		if !bytes.Equal(got, added) {
			t.Fatalf("appended batches read back differently (full scan %v)", full)
		}
		if ep := l2.LeaderEpochs(); len(ep) != 2 || ep[1] != (EpochEntry{1, leo}) {
			t.Fatalf("leader epochs %v", ep)
		}
		mustNotErr(t, m2.Close())
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	mustNotErr(t, err)
	return b
}

// checkGoldenContents compares every batch header and record with the
// manifest Kafka's own reader produced.
func checkGoldenContents(t *testing.T, l *Log, man *kafkaManifest) {
	t.Helper()
	codecs := map[string]batch.CompressionType{"none": batch.CompressionNone, "gzip": batch.CompressionGzip, "snappy": batch.CompressionSnappy, "lz4": batch.CompressionLZ4, "zstd": batch.CompressionZstd}
	last := man.Batches[len(man.Batches)-1].LastOffset
	data, err := l.ReadBatches(0, 1<<30, last+1)
	mustNotErr(t, err)
	var all [][]byte
	// ReadBatches stops at a segment's end; read on until the last offset.
	for {
		all = append(all, batchesOf(t, data)...)
		h, _ := batch.ParseHeader(all[len(all)-1])
		if h.LastOffset() >= last {
			break
		}
		data, err = l.ReadBatches(h.LastOffset()+1, 1<<30, last+1)
		mustNotErr(t, err)
	}
	if len(all) != len(man.Batches) {
		t.Fatalf("%d batches, manifest has %d", len(all), len(man.Batches))
	}
	ri := 0
	for i, b := range all {
		want := man.Batches[i]
		h, err := batch.Validate(b, batch.Limits{Origin: batch.AppendOriginReplication})
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if h.BaseOffset != want.BaseOffset || h.LastOffset() != want.LastOffset || h.CRC != want.CRC ||
			h.MaxTimestamp != want.MaxTimestamp || len(b) != want.Size || h.CompressionType() != codecs[want.Codec] ||
			h.PartitionLeaderEpoch != want.PartitionLeaderEpoch || h.ProducerID != want.ProducerID {
			t.Fatalf("batch %d header %+v differs from manifest %+v", i, h, want)
		}
		err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
			w := man.Records[ri]
			ri++
			if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, b64(t, w.Key)) {
				t.Fatalf("record %d: offset %d ts %d key %q; manifest %+v", ri-1, r.Offset, r.Timestamp, r.Key, w)
			}
			if w.ValueLen != nil {
				sum := sha256.Sum256(r.Value)
				if len(r.Value) != *w.ValueLen || hex.EncodeToString(sum[:]) != w.ValueSHA256 {
					t.Fatalf("record %d: value of %d bytes differs from the manifest's hash", r.Offset, len(r.Value))
				}
			} else if !bytes.Equal(r.Value, b64(t, w.Value)) || (r.Value == nil) != (w.Value == nil) {
				t.Fatalf("record %d: value %q", r.Offset, r.Value)
			}
			if len(r.Headers) != len(w.Headers) {
				t.Fatalf("record %d: %d headers, want %d", r.Offset, len(r.Headers), len(w.Headers))
			}
			for j, hd := range r.Headers {
				if hd.Key != w.Headers[j].Key || !bytes.Equal(hd.Value, b64(t, w.Headers[j].Value)) {
					t.Fatalf("record %d header %d: %q=%q", r.Offset, j, hd.Key, hd.Value)
				}
			}
			return nil
		})
		mustNotErr(t, err)
	}
	if ri != len(man.Records) {
		t.Fatalf("read %d records, manifest has %d", ri, len(man.Records))
	}
}
