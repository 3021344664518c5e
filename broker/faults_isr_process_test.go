package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// The fault scenarios about the ISR and full disks (F13, F15, F16), and
// the byte comparison of replica logs that every scenario ends with. They
// run on a second cluster (TestFaultScenarios starts it once the others
// are done) whose replica.lag.time.max.ms is 5 s instead of 30 s, so an
// ISR shrinks within a short run, and whose nodes, when the test runs as
// root, each keep their log dir on their own small tmpfs, so one node's
// disk can fill while the others' do not.

// isrClusterConfig is what the second cluster changes from the defaults.
const isrClusterConfig = `
[replication]
replica.lag.time.max.ms = 5000
`

// isrClusterTmpfsSize is each node's tmpfs: room for every scenario's
// records in the long runs, small enough to fill in a moment.
const isrClusterTmpfsSize = "256m"

// canMountTmpfs reports why this test process cannot mount a tmpfs, or
// nil when it can (root, and allowed to mount here).
func canMountTmpfs(t *testing.T) error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		return err
	}
	return unix.Unmount(mnt, 0)
}

// fillDisk writes a ballast file into node id's tmpfs until the file
// system has no space left (ENOSPC), and returns its path and size.
func (fc *faultCluster) fillDisk(t *testing.T, id int32) (string, int64) {
	t.Helper()
	path := filepath.Join(fc.mounts[id-1], "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Statfs(fc.mounts[id-1], &st); err != nil {
		t.Fatal(err)
	}
	total := int64(st.Blocks) * int64(st.Bsize)
	var size int64
	// Large chunks first, then pages, so the last page is taken too.
	for _, chunk := range []int{1 << 20, 4 << 10} {
		buf := bytes.Repeat([]byte{0xba}, chunk)
		for i := int64(0); ; i++ {
			if i > total/int64(chunk)+1 {
				t.Fatalf("node %d: wrote %d bytes of ballast to a file system of %d without running out of space", id, size, total)
			}
			n, err := f.Write(buf)
			size += int64(n)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				t.Fatalf("node %d: ballast: %v", id, err)
			}
		}
	}
	return path, size
}

// processAlive reports whether node n's process runs (or is stopped),
// rather than having exited: a process nobody waited for yet is a zombie.
func processAlive(n *clusterNode) bool {
	if n.cmd == nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// logCount is how many lines of node n's log contain s.
func logCount(n *clusterNode, s string) int {
	b, _ := os.ReadFile(n.logf)
	return strings.Count(string(b), s)
}

// waitLog waits until node n's log holds more than before lines with s.
func waitLog(t *testing.T, n *clusterNode, s string, before int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for logCount(n, s) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not log %q within %v", n.id, s, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quorumOnFullDisk checks that node n, whose disk was full, stayed in the
// metadata quorum (its driver waited for space rather than stopping, which
// left a broker serving a metadata image that never moved again), and
// says whether its metadata log had to wait.
func quorumOnFullDisk(t *testing.T, n *clusterNode, fault string) string {
	t.Helper()
	if logCount(n, "this node stops taking part in the quorum") > 0 {
		t.Fatalf("%s: node %d left the metadata quorum for good on its full disk", fault, n.id)
	}
	if logCount(n, "no space left for the metadata log") > 0 {
		return "its metadata log waited for space"
	}
	return "its metadata log never needed space"
}

// replicaBatch is one record batch of a replica's log, as on disk.
type replicaBatch struct {
	base, last int64
	raw        []byte
}

// replicaBatchesBelow reads the segments of a partition's log dir in
// offset order and returns its batches that end below hw. It reads the
// files while the broker runs, which is safe for the bytes below the high
// watermark: they are written once and never change in place.
func replicaBatchesBelow(dir string, hw int64) ([]replicaBatch, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	// The names are zero-padded base offsets: name order is offset order.
	slices.Sort(segs)
	var out []replicaBatch
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			return nil, err
		}
		for pos := 0; pos+27 <= len(b); {
			base := int64(binary.BigEndian.Uint64(b[pos:]))
			length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
			// 49 is the smallest batch length (a header, no records); a
			// zero or shorter length is past the log's end.
			if length < 49 || pos+12+length > len(b) || base >= hw {
				break
			}
			last := base + int64(int32(binary.BigEndian.Uint32(b[pos+23:])))
			if last < hw {
				out = append(out, replicaBatch{base: base, last: last, raw: b[pos : pos+12+length]})
			}
			pos += 12 + length
		}
	}
	return out, nil
}

// compareReplicaLogs checks that every replica of every partition of
// topic holds the same batches, byte for byte, from the log start up to
// the high watermark, and that they cover it without a hole. Run after
// heal with the producer stopped and every ISR full, so each replica's
// log end is at or past the high watermark.
func (fc *faultCluster) compareReplicaLogs(t *testing.T, topic string) {
	t.Helper()
	var seeds []string
	for _, n := range fc.live() {
		seeds = append(seeds, n.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("list end offsets of %s: %v %v", topic, err, ends.Error())
	}
	batches := 0
	for p := int32(0); p < faultTopicPartitions; p++ {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			t.Fatalf("no end offset for %s-%d", topic, p)
		}
		hw := o.Offset
		var ref []replicaBatch
		for i, data := range fc.dataDirs {
			got, err := replicaBatchesBelow(filepath.Join(data, topic+"-"+strconv.Itoa(int(p))), hw)
			if err != nil {
				t.Fatalf("replica of %s-%d on node %d: %v", topic, p, i+1, err)
			}
			next := int64(0)
			for _, b := range got {
				if b.base != next {
					t.Fatalf("replica of %s-%d on node %d: a batch at offset %d where %d was due (high watermark %d)", topic, p, i+1, b.base, next, hw)
				}
				next = b.last + 1
			}
			if next != hw {
				t.Fatalf("replica of %s-%d on node %d ends at offset %d below the high watermark %d", topic, p, i+1, next, hw)
			}
			if i == 0 {
				ref = got
				continue
			}
			for k := range got {
				if !bytes.Equal(got[k].raw, ref[k].raw) {
					t.Fatalf("%s-%d: the batch at offset %d differs between node 1 and node %d below the high watermark %d", topic, p, got[k].base, i+1, hw)
				}
			}
			if len(got) != len(ref) {
				t.Fatalf("%s-%d: node 1 holds %d batches below the high watermark %d, node %d %d", topic, p, len(ref), hw, i+1, len(got))
			}
		}
		batches += len(ref)
	}
	t.Logf("replica logs: %d batches of %s identical on all three nodes below the high watermark", batches, topic)
}

// f13 is F13: the ISR of a partition shrinks to its leader alone, which
// then crashes. The two followers stay up and in the quorum; only their
// fetches from the leader are cut (stopping them with SIGSTOP would take
// two of three voters away, and with them the controller that commits
// the ISR change). With min.insync.replicas 2 the high watermark stops
// when the ISR is the leader alone, so nothing is acknowledged from then
// on, and the followers, which left the ISR holding every acknowledged
// record, are eligible leader replicas (KIP-966): one of them must take
// over, and no acknowledged record may be gone.
//
// SIGKILL keeps the page cache, so the crashed leader loses nothing here;
// the variant that loses unsynced bytes is the election rule's script
// (cluster/testdata/leader/f13.txt) plus the engine's crash tests, which
// drop every unsynced byte through the vfs fault layer.
func (fc *faultCluster) f13(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long bool) {
	ctrl, ps := fc.waitHealthy(ctx, fc.nodes[0], topic)
	// A partition not led by the controller, so the crash is not also a
	// controller failover (F03).
	p := slices.IndexFunc(ps, func(s partitionState) bool { return s.leader != ctrl })
	if p < 0 {
		t.Fatalf("F13: the controller %d leads every partition %+v", ctrl, ps)
	}
	part := []int32{int32(p)}
	leader, epoch := ps[p].leader, ps[p].leaderEpoch
	var followers []int32
	for _, n := range fc.nodes {
		if int32(n.id) != leader {
			followers = append(followers, int32(n.id))
		}
	}
	observer := fc.node(ctrl)
	from := time.Now()
	for _, f := range followers {
		fc.proxies.cutFetches(f, leader)
	}
	fc.waitFor(ctx, observer, topic, fmt.Sprintf("the ISR of partition %d to shrink to its leader %d", p, leader), 60*time.Second,
		func(_ int32, ps []partitionState) bool {
			return len(ps) > p && ps[p].leader == leader && slices.Equal(ps[p].isr, []int32{leader})
		})
	shrunk := time.Since(from)
	// The followers stopped fetching five seconds ago, so every ack of a
	// record they hold has long been delivered: none may come from now on.
	acksAtShrink := w.acksOn(part)
	sentAtShrink := w.sentSoFar()[p]
	refused := produceDirect(ctx, t, fc.node(leader), topic, int32(p))
	if refused == "ACKNOWLEDGED" {
		t.Fatalf("F13: leader %d acknowledged an acks=all produce to partition %d with the ISR at itself alone (min.insync.replicas 2)", leader, p)
	}
	if long {
		time.Sleep(30 * time.Second) // the fault's length
	}
	if n := w.acksOn(part) - acksAtShrink; n != 0 {
		t.Fatalf("F13: %d values of partition %d acknowledged with the ISR at leader %d alone (from value %d on: %v)",
			n, p, leader, sentAtShrink, w.ackedFrom(int32(p), 0, 5))
	}
	killed := time.Now()
	fc.node(leader).kill()
	took, after := fc.waitNewLeader(ctx, observer, topic, p, leader, killed)
	if !slices.Contains(followers, after.leader) {
		t.Fatalf("F13: partition %d is led by %d after its leader %d crashed, want one of the eligible replicas %v", p, after.leader, leader, followers)
	}
	fc.proxies.heal()
	_, back := fc.waitFor(ctx, observer, topic, fmt.Sprintf("the ISR of partition %d to grow back to two", p), 60*time.Second,
		func(_ int32, ps []partitionState) bool { return len(ps) > p && len(ps[p].isr) >= 2 })
	isrBack := time.Since(killed)
	w.waitAcksOn(t, part, 200, "F13: with an eligible replica leading")
	resumed := time.Since(killed)
	gap := w.longestAckGapOn(part, from, time.Now())
	fc.restart(fc.node(leader))
	_, healed := fc.waitHealthy(ctx, observer, topic)
	t.Logf("F13: fetches from leader %d of partition %d (epoch %d) cut: ISR [%d] after %v; produce to it: %s; leader killed after %v more: node %d leads at epoch %d with ISR %v after %v, ISR %v after %v, acks again after %v; old leader back: leader %d epoch %d ISR %v; longest gap between acks on the partition %v",
		leader, p, epoch, leader, shrunk.Round(time.Millisecond), refused, killed.Sub(from.Add(shrunk)).Round(time.Millisecond),
		after.leader, after.leaderEpoch, after.isr, took.Round(time.Millisecond), back[p].isr, isrBack.Round(time.Millisecond), resumed.Round(time.Millisecond),
		healed[p].leader, healed[p].leaderEpoch, healed[p].isr, gap.Round(time.Millisecond))
}

// f15 is F15: the disk of a partition leader fills up (a ballast file
// takes every free byte of its tmpfs). Produce to the partitions it leads
// is refused there, with the retriable KAFKA_STORAGE_ERROR, or with
// NOT_LEADER_OR_FOLLOWER once its image shows its leaderships moved to
// in-sync replicas (its heartbeats report the full log dir; a node whose
// metadata log has no space left keeps its stale image, and keeps
// refusing), and nothing produced after the refusal is acknowledged by
// it; the broker keeps running; it leaves the ISR of the partitions it
// follows, which keep two members and go on taking writes; when the
// ballast goes, writes resume with no restart and it rejoins every ISR.
func (fc *faultCluster) f15(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long bool) {
	ctrl, ps := fc.waitHealthy(ctx, fc.nodes[0], topic)
	// A leader that is not the controller: the controller's own metadata
	// log on a full disk is another fault.
	i := slices.IndexFunc(ps, func(s partitionState) bool { return s.leader != ctrl })
	if i < 0 {
		t.Fatalf("F15: the controller %d leads every partition %+v", ctrl, ps)
	}
	leader := ps[i].leader
	n := fc.node(leader)
	observer := fc.node(ctrl)
	var led, followed []int32
	for p, s := range ps {
		if s.leader == leader {
			led = append(led, int32(p))
		} else {
			followed = append(followed, int32(p))
		}
	}
	const below, above = "below its free-space floor", "back above its free-space floor"
	floorEvents, aboveEvents := logCount(n, below), logCount(n, above)
	from := time.Now()
	ballast, size := fc.fillDisk(t, leader)
	waitLog(t, n, below, floorEvents, 30*time.Second)
	noticed := time.Since(from)
	refusal := produceDirect(ctx, t, n, topic, led[0])
	if !strings.Contains(refusal, "KAFKA_STORAGE_ERROR") && !strings.Contains(refusal, "NOT_LEADER") {
		t.Fatalf("F15: a produce to partition %d on node %d with its disk full: %s, want KAFKA_STORAGE_ERROR or NOT_LEADER_OR_FOLLOWER", led[0], leader, refusal)
	}
	sentAtRefusal := w.sentSoFar()
	// It leaves the ISRs of the partitions it follows at once (its
	// heartbeats report its log dir), and they go on with two.
	fc.waitFor(ctx, observer, topic, fmt.Sprintf("node %d to leave the ISR of partitions %v", leader, followed), 60*time.Second,
		func(_ int32, ps []partitionState) bool {
			for _, p := range followed {
				if len(ps) <= int(p) || slices.Contains(ps[p].isr, leader) || len(ps[p].isr) != 2 {
					return false
				}
			}
			return true
		})
	left := time.Since(from)
	w.waitAcksOn(t, followed, 200, "F15: on the partitions the full node follows, with it out of their ISR")
	if long {
		time.Sleep(longFullDiskHold) // the fault's length
		w.waitAcksOn(t, followed, 200, "F15: on the partitions the full node follows, after holding the fault")
	}
	held := time.Since(from)
	_, now, err := topicState(ctx, observer, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range led {
		if now[p].leader != leader {
			t.Logf("F15: partition %d moved to node %d during the fault", p, now[p].leader)
			continue
		}
		if vs := w.ackedFrom(p, sentAtRefusal[p], 5); len(vs) > 0 {
			t.Fatalf("F15: node %d, its disk full, acknowledged values %v of partition %d produced after it refused writes", leader, vs, p)
		}
	}
	if !processAlive(n) {
		t.Fatalf("F15: node %d exited with its disk full", leader)
	}
	freed := time.Now()
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitLog(t, n, above, aboveEvents, 30*time.Second)
	writable := time.Since(freed)
	w.waitAcksOn(t, led, 200, "F15: after the ballast went")
	resumed := time.Since(freed)
	fc.waitHealthy(ctx, observer, topic)
	rejoined := time.Since(freed)
	if !processAlive(n) {
		t.Fatalf("F15: node %d exited after its disk filled", leader)
	}
	quorum := quorumOnFullDisk(t, n, "F15")
	t.Logf("F15: disk of leader %d (partitions %v) filled with %d MiB of ballast: below the floor after %v; produce to it: %s; out of the ISR of partitions %v after %v; held %v: nothing produced after the refusal acknowledged on its partitions; ballast deleted: writable again after %v, acks on its partitions after %v, every ISR full after %v; %s; longest gap between acks on its partitions %v, on all %v",
		leader, led, size>>20, noticed.Round(time.Millisecond), refusal, followed, left.Round(time.Millisecond), held.Round(time.Millisecond), writable.Round(time.Millisecond), resumed.Round(time.Millisecond), rejoined.Round(time.Millisecond),
		quorum, w.longestAckGapOn(led, from, time.Now()).Round(time.Millisecond), w.longestAckGap(from, time.Now()).Round(time.Millisecond))
}

// f16 is F16: a follower's disk fills up. Its appends fail, so it leaves
// the ISR of every partition it follows; those keep two ISR members and
// keep taking acks=all writes; when the ballast goes it catches up and
// rejoins. The partitions it leads are refused meanwhile, as in F15.
func (fc *faultCluster) f16(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long bool) {
	ctrl, ps := fc.waitHealthy(ctx, fc.nodes[0], topic)
	// Not the controller (see f15); the lowest id of the others.
	follower := int32(1)
	if follower == ctrl {
		follower = 2
	}
	n := fc.node(follower)
	var followed, led []int32
	for p, s := range ps {
		if s.leader == follower {
			led = append(led, int32(p))
		} else {
			followed = append(followed, int32(p))
		}
	}
	observer := fc.node(ctrl)
	from := time.Now()
	ballast, size := fc.fillDisk(t, follower)
	fc.waitFor(ctx, observer, topic, fmt.Sprintf("node %d to leave the ISR of partitions %v", follower, followed), 60*time.Second,
		func(_ int32, ps []partitionState) bool {
			for _, p := range followed {
				if len(ps) <= int(p) || slices.Contains(ps[p].isr, follower) || len(ps[p].isr) != 2 {
					return false
				}
			}
			return true
		})
	left := time.Since(from)
	w.waitAcksOn(t, followed, 200, "F16: with the full follower out of the ISR")
	if long {
		time.Sleep(longFullDiskHold) // the fault's length
		w.waitAcksOn(t, followed, 200, "F16: with the full follower out of the ISR, after holding the fault")
	}
	if !processAlive(n) {
		t.Fatalf("F16: node %d exited with its disk full", follower)
	}
	gapFull := w.longestAckGapOn(followed, from, time.Now())
	freed := time.Now()
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	fc.waitFor(ctx, observer, topic, fmt.Sprintf("node %d to rejoin the ISR of partitions %v", follower, followed), 60*time.Second,
		func(_ int32, ps []partitionState) bool {
			for _, p := range followed {
				if len(ps) <= int(p) || !slices.Contains(ps[p].isr, follower) {
					return false
				}
			}
			return true
		})
	rejoined := time.Since(freed)
	if len(led) > 0 {
		w.waitAcksOn(t, led, 200, "F16: on the partitions the follower leads, after the ballast went")
	}
	quorum := quorumOnFullDisk(t, n, "F16")
	t.Logf("F16: disk of node %d filled with %d MiB of ballast: out of the ISR of partitions %v after %v (replica.lag.time.max.ms 5 s); longest gap between acks there while full %v; ballast deleted: back in every ISR after %v; %s; partitions it leads %v: longest gap between acks %v",
		follower, size>>20, followed, left.Round(time.Millisecond), gapFull.Round(time.Millisecond), rejoined.Round(time.Millisecond),
		quorum, led, w.longestAckGapOn(led, from, time.Now()).Round(time.Millisecond))
}
