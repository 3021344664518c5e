package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogDirOfflineProcess: a node whose log dir takes no writes hands its
// leaderships to in-sync replicas and leaves every ISR at once, and takes
// them back when space returns. Three `wren serve` processes, each with its
// log dir on its own tmpfs (so one node's disk fills while the others'
// do not), run the fault scenarios' idempotent acks=all workload (RF 3,
// min.insync.replicas 2) with replica.lag.time.max.ms at its default 30 s,
// so an ISR that shrinks within seconds was not shrunk by the lag rule.
//
// First a leader's disk is filled to below its free-space floor (half the
// floor left free): every partition it led must move to an in-sync
// replica, and it must leave the ISR of those it follows; acks on its
// partitions resume on the new leaders; a produce sent to it directly is
// not acknowledged; once the ballast goes it rejoins every ISR and the
// preferred-leader rebalance (checked every second here) gives its
// leaderships back. Then another node's disk is filled to the last byte
// (its appends meet ENOSPC), with the same checks. Finally every
// acknowledged record is read back at its offset, and the replicas' logs
// are compared byte for byte. The ack gap on the partitions that moved,
// how soon leadership moved and the ISRs shrank, and how soon leadership
// came back are logged. WREN_FAULTS=long holds each fault for two
// minutes.
//
// It needs root (to mount); it skips otherwise.
func TestLogDirOfflineProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	if err := canMountTmpfs(t); err != nil {
		t.Skipf("fills a node's own tmpfs, which needs root (and the right to mount): %v", err)
	}
	long := faultsLong(t)
	fc := startFaultClusterWith(t, faultClusterOptions{tmpfsSize: "128m", config: `
[replication]
leader.imbalance.check.interval.seconds = 1
`})
	ctx := context.Background()
	t.Logf("cluster formed %v after the processes started", fc.formed(ctx))
	const topic = "log-dir-offline"
	fc.createTopic(ctx, topic)
	ctrl, ps := fc.waitHealthy(ctx, fc.nodes[0], topic)
	w := startWorkload(t, fc, topic)
	w.waitAcks(t, 500, "before the fault")

	// Two nodes other than the controller (whose own metadata log on a
	// full disk is another matter): the first one's disk goes below its
	// floor, then the second one's fills to the last byte.
	var others []int32
	for _, n := range fc.nodes {
		if int32(n.id) != ctrl {
			others = append(others, int32(n.id))
		}
	}
	observer := fc.node(ctrl)
	for i, full := range []bool{false, true} {
		node := others[i]
		fc.logDirOffline(ctx, t, w, topic, observer, ps, node, full, long)
	}

	w.waitAcks(t, 500, "after healing")
	w.finish(t)
	fc.waitHealthy(ctx, observer, topic)
	w.check(t, fc).mustBeClean(t)
	fc.compareReplicaLogs(t, topic)
}

// logDirOffline fills node's disk (below its floor, or full to the last
// byte), checks that it hands every leadership to an in-sync replica and
// leaves every ISR, frees the disk, and checks that its leaderships come
// back (ps: the partitions as they were, each led by its preferred
// replica).
func (fc *faultCluster) logDirOffline(ctx context.Context, t *testing.T, w *faultWorkload, topic string, observer *clusterNode,
	ps []partitionState, node int32, full, long bool) {
	t.Helper()
	what := "below its free-space floor"
	if full {
		what = "full to the last byte"
	}
	var led, followed []int32
	for p, s := range ps {
		if s.leader == node {
			led = append(led, int32(p))
		} else {
			followed = append(followed, int32(p))
		}
	}
	if len(led) == 0 {
		t.Fatalf("node %d leads none of %+v", node, ps)
	}
	n := fc.node(node)
	offlineLogs := logCount(observer, "log dir takes no writes; it leaves every ISR")
	from := time.Now()
	var ballast string
	var size int64
	if full {
		ballast, size = fc.fillDisk(t, node)
	} else {
		ballast, size = fc.fillBelowFloor(t, node)
	}
	filled := time.Since(from)

	// Every partition it led gets another leader, one that was in sync
	// (the rules elect only from the ISR); it leaves the ISR of every
	// partition.
	var movedAfter, leftAfter time.Duration
	_, now := fc.waitFor(ctx, observer, topic, fmt.Sprintf("node %d, its disk %s, to lead nothing and leave every ISR", node, what), 30*time.Second,
		func(_ int32, ps []partitionState) bool {
			if len(ps) != faultTopicPartitions {
				return false
			}
			moved := !slices.ContainsFunc(led, func(p int32) bool { return ps[p].leader < 0 || ps[p].leader == node })
			left := !slices.ContainsFunc(ps, func(s partitionState) bool { return slices.Contains(s.isr, node) })
			if moved && movedAfter == 0 {
				movedAfter = time.Since(from)
			}
			if left && leftAfter == 0 {
				leftAfter = time.Since(from)
			}
			return moved && left
		})
	for _, p := range led {
		if !slices.Contains(ps[p].isr, now[p].leader) {
			t.Fatalf("partition %d moved to node %d, which was not in its ISR %v", p, now[p].leader, ps[p].isr)
		}
	}
	// The controller logs the change once committed, which clients may
	// see in Metadata a moment before the line is written.
	waitLog(t, observer, "log dir takes no writes; it leaves every ISR", offlineLogs, 10*time.Second)
	// Acks go on: on the partitions it led, at their new leaders; on
	// those it followed, with two in the ISR.
	w.waitAcksOn(t, led, 200, fmt.Sprintf("on the partitions node %d led, once moved", node))
	w.waitAcksOn(t, followed, 200, fmt.Sprintf("on the partitions node %d followed, with it out of the ISR", node))
	resumed := time.Since(from)
	direct := produceDirect(ctx, t, n, topic, led[0])
	if direct == "ACKNOWLEDGED" {
		t.Fatalf("node %d, its disk %s and no longer the leader, acknowledged an acks=all produce to partition %d", node, what, led[0])
	}
	if long {
		time.Sleep(2 * time.Minute) // the fault's length
		w.waitAcksOn(t, led, 200, "after holding the fault")
	}
	if !processAlive(n) {
		t.Fatalf("node %d exited with its disk %s", node, what)
	}
	gap := w.longestAckGapOn(led, from, time.Now())

	freed := time.Now()
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	var rejoinedAfter time.Duration
	fc.waitFor(ctx, observer, topic, fmt.Sprintf("node %d to rejoin every ISR and lead partitions %v again", node, led), 60*time.Second,
		func(_ int32, ps []partitionState) bool {
			if len(ps) != faultTopicPartitions {
				return false
			}
			in := !slices.ContainsFunc(ps, func(s partitionState) bool { return !slices.Contains(s.isr, node) })
			if in && rejoinedAfter == 0 {
				rejoinedAfter = time.Since(freed)
			}
			return in && !slices.ContainsFunc(led, func(p int32) bool { return ps[p].leader != node })
		})
	back := time.Since(freed)
	w.waitAcksOn(t, led, 200, fmt.Sprintf("on the partitions node %d leads again", node))
	t.Logf("node %d's disk %s (%d MiB of ballast, %v to write): partitions %v moved to in-sync replicas %v after %v, out of every ISR after %v (replica.lag.time.max.ms 30 s); acks on both its led and followed partitions after %v; longest gap between acks on the partitions it led %v; produce sent to it: %s; ballast deleted: back in every ISR after %v, leading %v again after %v",
		node, what, size>>20, filled.Round(time.Millisecond), led, leadersOf(now, led), movedAfter.Round(time.Millisecond), leftAfter.Round(time.Millisecond),
		resumed.Round(time.Millisecond), gap.Round(time.Millisecond), direct, rejoinedAfter.Round(time.Millisecond), led, back.Round(time.Millisecond))
}

func leadersOf(ps []partitionState, parts []int32) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, ps[p].leader)
	}
	return out
}

// fillBelowFloor writes a ballast file into node id's tmpfs that leaves
// half the default free-space floor (5 % of the file system, the smaller
// of the two defaults on a small one) free, and returns its path and size.
func (fc *faultCluster) fillBelowFloor(t *testing.T, id int32) (string, int64) {
	t.Helper()
	mnt := fc.mounts[id-1]
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	total := int64(st.Blocks) * int64(st.Bsize)
	free := int64(st.Bavail) * int64(st.Bsize)
	floor := total * 5 / 100
	size := free - floor/2
	if size <= 0 {
		t.Fatalf("node %d: only %d bytes free of %d, already below the floor %d", id, free, total, floor)
	}
	path := filepath.Join(mnt, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n, err := f.Write(buf[:min(left, int64(len(buf)))])
		if err != nil {
			t.Fatalf("node %d: ballast: %v", id, err)
		}
		left -= int64(n)
	}
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if now := int64(st.Bavail) * int64(st.Bsize); now >= floor {
		t.Fatalf("node %d: %d bytes free after the ballast, not below the floor %d", id, now, floor)
	}
	return path, size
}
