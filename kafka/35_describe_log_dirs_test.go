package kafka

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

// fakeLogDir is the log directory: a real directory (statfs reads it),
// with the logs of its list.
type fakeLogDir struct {
	dir    string
	failed error
	logs   []PartitionLog
}

func (d *fakeLogDir) Dir() string          { return d.dir }
func (d *fakeLogDir) Failed() error        { return d.failed }
func (d *fakeLogDir) Logs() []PartitionLog { return d.logs }

// fakeLog is one partition log of the dir.
type fakeLog struct {
	tp           engine.TopicPartition
	size, logEnd int64
}

func (l fakeLog) TopicPartition() engine.TopicPartition { return l.tp }
func (l fakeLog) Size() int64                           { return l.size }
func (l fakeLog) LogEndOffset() int64                   { return l.logEnd }

// logDirFixture hosts t-0 (leader, caught up), t-1 (a follower 2 behind
// its high watermark) and u-0 (a log no hosted partition owns).
func logDirFixture(t *testing.T) *seamFixture {
	t.Helper()
	f := newSeamFixture(t)
	f.partitions.logDir = &fakeLogDir{dir: t.TempDir(), logs: []PartitionLog{
		fakeLog{engine.TopicPartition{Topic: "t", Partition: 0}, 100, 10},
		fakeLog{engine.TopicPartition{Topic: "t", Partition: 1}, 80, 8},
		fakeLog{engine.TopicPartition{Topic: "u", Partition: 0}, 5, 1},
	}}
	return f
}

// logDirPartitions lists an answer's partitions as "topic-p:size/lag".
func logDirPartitions(dir kmsg.DescribeLogDirsResponseDir) string {
	var out []string
	for _, dt := range dir.Topics {
		for _, dp := range dt.Partitions {
			out = append(out, fmt.Sprintf("%s-%d:%d/%d", dt.Topic, dp.Partition, dp.Size, dp.OffsetLag))
		}
	}
	return fmt.Sprint(out)
}

// TestDescribeLogDirs: the one log dir by absolute path, every log with
// its size and its lag behind the high watermark (-1 for a log no hosted
// partition owns); the file system's sizes from v4.
func TestDescribeLogDirs(t *testing.T) {
	f := logDirFixture(t)
	for v := int16(1); v <= 4; v++ {
		resp := onWire(t, f.do(t, func() *kmsg.DescribeLogDirsRequest {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.SetVersion(v)
			return req
		}()).(*kmsg.DescribeLogDirsResponse))
		if len(resp.Dirs) != 1 {
			t.Fatalf("v%d: %d dirs, want 1", v, len(resp.Dirs))
		}
		dir := resp.Dirs[0]
		wantCode(t, fmt.Sprintf("v%d", v), dir.ErrorCode, nil)
		if dir.Dir != f.partitions.logDir.dir || !filepath.IsAbs(dir.Dir) {
			t.Errorf("v%d: dir %q, want %q", v, dir.Dir, f.partitions.logDir.dir)
		}
		if got := logDirPartitions(dir); got != "[t-0:100/0 t-1:80/2 u-0:5/-1]" {
			t.Errorf("v%d: %s", v, got)
		}
		if (dir.TotalBytes > 0 && dir.UsableBytes >= 0) != (v >= 4) {
			t.Errorf("v%d: total %d usable %d bytes, want the file system's from v4", v, dir.TotalBytes, dir.UsableBytes)
		}
	}
}

// TestDescribeLogDirsTopics: only the partitions named, leaving out those
// the dir does not hold; a failed dir is KAFKA_STORAGE_ERROR with no
// partitions.
func TestDescribeLogDirsTopics(t *testing.T) {
	f := logDirFixture(t)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	for _, topic := range []string{"t", "missing"} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{1, 7}
		req.Topics = append(req.Topics, rt)
	}
	resp := f.do(t, req).(*kmsg.DescribeLogDirsResponse)
	if got := logDirPartitions(resp.Dirs[0]); got != "[t-1:80/2]" {
		t.Errorf("t-1, t-7, missing-1, missing-7: %s, want t-1 only", got)
	}

	f.partitions.logDir.failed = fmt.Errorf("%w: fdatasync: input/output error", engine.ErrLogDirFailed)
	resp = f.do(t, req).(*kmsg.DescribeLogDirsResponse)
	wantCode(t, "failed dir", resp.Dirs[0].ErrorCode, kerr.KafkaStorageError)
	if len(resp.Dirs[0].Topics) != 0 {
		t.Errorf("failed dir: %s, want no partitions", logDirPartitions(resp.Dirs[0]))
	}
}
