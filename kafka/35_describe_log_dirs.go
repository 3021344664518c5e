package kafka

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/engine"
)

// DescribeLogDirs: v1-4
//
// Behavior:
// * One log dir, the node's (wren serves exactly one), by absolute path,
//   with KAFKA_STORAGE_ERROR and no partitions once it has failed (an
//   fdatasync error).
// * Per partition log in the dir: its size (the bytes of its segments),
//   offset lag max(0, high watermark - log end offset) as Kafka computes
//   it for a current log (so 0 on a leader; -1 for a log no hosted
//   partition owns), is-future false (no log moves between dirs).
// * Topics null: every log; otherwise only the partitions named (names
//   the dir does not hold are left out, as Kafka does).
// * v4: the file system's total and usable bytes (statfs: blocks and
//   blocks available to unprivileged users, times the block size); -1
//   when statfs fails.
// * Authorization: DESCRIBE on the cluster, or CLUSTER_AUTHORIZATION_FAILED
//   and no log dir.
//
// Not implemented:
// * Authorization (Kafka's CLUSTER_AUTHORIZATION_FAILED, v3+).

func (s *Server) handleDescribeLogDirs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	n := s.node()
	logs := n.Partitions.LogDir()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = logs.Dir()
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	if r.Version >= 4 {
		var st unix.Statfs_t
		if err := unix.Statfs(logs.Dir(), &st); err == nil {
			// Field widths differ between architectures (int32 block
			// size on armv7): widen before multiplying.
			dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
	}
	if err := logs.Failed(); err != nil {
		dir.ErrorCode = kerr.KafkaStorageError.Code
		resp.Dirs = append(resp.Dirs, dir)
		return Respond(resp), nil
	}
	var want map[engine.TopicPartition]bool
	if r.Topics != nil {
		want = make(map[engine.TopicPartition]bool)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				want[engine.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	for _, l := range logs.Logs() { // sorted by topic, then partition
		tp := l.TopicPartition()
		if want != nil && !want[tp] {
			continue
		}
		if k := len(dir.Topics); k == 0 || dir.Topics[k-1].Topic != tp.Topic {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = tp.Topic
			dir.Topics = append(dir.Topics, dt)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition = tp.Partition
		dp.Size = l.Size()
		dp.OffsetLag = -1
		if p := n.Partitions.Partition(tp); p != nil {
			dp.OffsetLag = max(0, p.HighWatermark()-l.LogEndOffset())
		}
		dt := &dir.Topics[len(dir.Topics)-1]
		dt.Partitions = append(dt.Partitions, dp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return Respond(resp), nil
}
