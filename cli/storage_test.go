package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// brokerOn starts a one-node wren broker on the data directory dir with
// 1 MiB segments, and returns its address and a function that stops it.
func brokerOn(t *testing.T, dir string) (string, func()) {
	t.Helper()
	toml := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]

[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[storage]
log.segment.bytes = 1048576
`, dir)
	cfg, err := config.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatalf("broker config: %v", err)
	}
	b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := b.Close(); err != nil {
				t.Errorf("close broker: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return b.Addr().String(), stop
}

// produceNumbered produces n 1 KiB records to partition 0 of a new topic,
// acknowledged, and returns each value by its offset.
func produceNumbered(t *testing.T, addr, topic string, n int) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	values := map[int64]string{}
	const perCall = 50
	for i := 0; i < n; i += perCall {
		var rs []*kgo.Record
		for j := i; j < min(n, i+perCall); j++ {
			v := fmt.Sprintf("record-%06d|%s", j, strings.Repeat("x", 1000))
			rs = append(rs, &kgo.Record{Value: []byte(v), Partition: 0})
		}
		results := cl.ProduceSync(ctx, rs...)
		if err := results.FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, r := range results {
			values[r.Record.Offset] = string(r.Record.Value)
		}
	}
	return values
}

// consumeAll reads partition 0 of topic from the start up to its high
// watermark and returns each value by its offset.
func consumeAll(t *testing.T, addr, topic string, want int) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int64]string{}
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), want)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	return got
}

// readTree returns every file under dir by its path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// damagedBatch flips a byte in the body of the second batch of the
// partition's second segment and returns that batch's offsets.
func damageSecondSegment(t *testing.T, partDir string) (first, last int64) {
	t.Helper()
	names, err := filepath.Glob(partDir + "/*.log")
	if err != nil || len(names) < 3 {
		t.Fatalf("want at least 3 segments in %s, got %v (%v)", partDir, names, err)
	}
	data, err := os.ReadFile(names[1])
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := batch.Scan(data)
	if err != nil {
		t.Fatal(err)
	}
	m, h, err := batch.Scan(data[n:])
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(names[1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos := int64(n + m - 10)
	if _, err := f.WriteAt([]byte{data[pos] ^ 0xff}, pos); err != nil {
		t.Fatal(err)
	}
	return h.BaseOffset, h.LastOffset()
}

// End to end: records produced to a wren broker, a byte flipped on disk
// with the broker stopped, then check, a dry run, a refused repair beside
// an open data directory, the repair, and a restarted broker serving every
// record outside the damaged batch at its offset to a franz-go consumer.
func TestStorageCheckAndRepairSkip(t *testing.T) {
	dir := t.TempDir()
	addr, stop := brokerOn(t, dir)
	values := produceNumbered(t, addr, "t", 3000)
	stop()
	partDir := dir + "/t-0"
	first, last := damageSecondSegment(t, partDir)

	r := run(t, "", "storage", "check", "--dir", dir)
	if r.code != exitDamaged {
		t.Fatalf("check of a damaged dir: exit %d, want %d\n%s%s", r.code, exitDamaged, r.stdout, r.stderr)
	}
	offsets := fmt.Sprintf("%d-%d", first, last)
	for _, want := range []string{"PARTITION", "RECORDS-AFTER", "t-0 ", offsets, "CRC mismatch", "partitions checked in " + dir + ": 1 damaged (1 damaged range)",
		"wren storage repair --dir " + dir + " t-0 --skip|--truncate"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("check output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = run(t, "", "storage", "check", "--dir", dir, "--format", "json")
	var res checkResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != exitDamaged {
		t.Fatalf("check --format json: exit %d, %v:\n%s", r.code, err, r.stdout)
	}
	var damaged *partitionResult
	for i := range res.Partitions {
		if res.Partitions[i].Topic == "t" {
			damaged = &res.Partitions[i]
		}
	}
	if res.Damaged != 1 || damaged == nil || len(damaged.Damage) != 1 || damaged.Damage[0].FirstOffset != first || damaged.Damage[0].LastOffset != last ||
		damaged.Damage[0].RecordsAfter != int64(len(values))-1-last {
		t.Fatalf("check json: %+v", res)
	}
	if r := run(t, "", "storage", "check", "--dir", dir, "--partition", "t-0"); r.code != exitDamaged || strings.Contains(r.stdout, "__consumer_offsets") {
		t.Fatalf("check --partition t-0: exit %d\n%s", r.code, r.stdout)
	}
	if r := mustFail(t, "", "storage", "check", "--dir", dir, "--partition", "nosuch-0"); !strings.Contains(r.stderr, "no partition nosuch-0") {
		t.Fatalf("check of a missing partition: %s", r.stderr)
	}

	// Usage errors.
	if r := mustFail(t, "", "storage", "repair", "t-0", "--dir", dir); !strings.Contains(r.stderr, "--skip") {
		t.Fatalf("repair without a mode: %s", r.stderr)
	}
	if r := mustFail(t, "", "storage", "repair", "t-0", "--dir", dir, "--skip", "--truncate"); !strings.Contains(r.stderr, "not both") {
		t.Fatalf("repair with both modes: %s", r.stderr)
	}

	// A dry run changes nothing.
	before := readTree(t, dir)
	r = mustRun(t, "", "storage", "repair", "t-0", "--dir", dir, "--skip")
	for _, want := range []string{"plan to repair t-0", fmt.Sprintf("offsets %d to %d become a gap", first, last),
		fmt.Sprintf("at most %d in the damaged ranges; no valid record", last-first+1)} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "add --execute") {
		t.Fatalf("dry run does not say so: %s", r.stderr)
	}
	if after := readTree(t, dir); !maps.Equal(before, after) {
		t.Fatal("the dry run changed files in the data directory")
	}

	// Refused while the data directory is open.
	m, err := engine.OpenManager(vfs.NewOS(), dir, engine.ManagerConfig{NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	r = mustFail(t, "", "storage", "repair", "t-0", "--dir", dir, "--skip", "--execute")
	if !strings.Contains(r.stderr, "is in use (is the broker running? stop it first)") {
		t.Fatalf("repair beside an open data directory: %s", r.stderr)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	r = mustRun(t, "", "storage", "repair", "t-0", "--dir", dir, "--skip", "--execute")
	if !strings.Contains(r.stdout, "repaired t-0") {
		t.Fatalf("repair output:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "storage", "check", "--dir", dir); !strings.Contains(r.stdout, ": 0 damaged") {
		t.Fatalf("check after the repair:\n%s", r.stdout)
	}

	addr, _ = brokerOn(t, dir)
	want := len(values) - int(last-first+1)
	got := consumeAll(t, addr, "t", want)
	for off, v := range values {
		if off >= first && off <= last {
			if _, ok := got[off]; ok {
				t.Fatalf("offset %d of the damaged batch was served", off)
			}
			continue
		}
		if got[off] != v {
			t.Fatalf("offset %d: got %.20q, want %.20q", off, got[off], v)
		}
	}
	if len(got) != want {
		t.Fatalf("consumed %d records, want %d", len(got), want)
	}
}

// Truncate mode through the CLI: the plan says how many valid records go
// and that offsets will be reused; after it the log ends at the damage.
func TestStorageRepairTruncate(t *testing.T) {
	dir := t.TempDir()
	addr, stop := brokerOn(t, dir)
	values := produceNumbered(t, addr, "t", 2500)
	stop()
	first, _ := damageSecondSegment(t, dir+"/t-0")
	r := mustRun(t, "", "storage", "repair", "t-0", "--dir", dir, "--truncate", "--execute", "--format", "json")
	var res repairResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("repair json: %v\n%s", err, r.stdout)
	}
	if !res.Executed || res.Mode != "truncate" || res.LogEndOffset != first || res.ReusedFrom == nil || *res.ReusedFrom != first ||
		res.DamagedRecordsAtMost == nil || res.RecordsDropped+*res.DamagedRecordsAtMost != int64(len(values))-first {
		t.Fatalf("repair json: %+v", res)
	}
	addr, _ = brokerOn(t, dir)
	got := consumeAll(t, addr, "t", int(first))
	for off := int64(0); off < first; off++ {
		if got[off] != values[off] {
			t.Fatalf("offset %d: got %.20q, want %.20q", off, got[off], values[off])
		}
	}
	if len(got) != int(first) {
		t.Fatalf("consumed %d records, want %d", len(got), first)
	}
}

// With no flag, the data directory comes from the config's log.dirs.
func TestStorageCheckFindsTheDirInTheConfig(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "wren.toml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf("[broker]\nlog.dirs = [%q]\n", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "storage", "check", "-c", cfgFile)
	if !strings.Contains(r.stdout, "0 partitions checked in "+dir+": 0 damaged") {
		t.Fatalf("check by config:\n%s", r.stdout)
	}
	if r := mustFail(t, "", "storage", "check", "-c", cfgFile+".missing"); !strings.Contains(r.stderr, "wren:") {
		t.Fatalf("check with a missing config: %s", r.stderr)
	}
}

// storage check and repair with a file shared by the cluster act on the
// data directory of the node --node-id or WREN_NODE_ID names, its
// [node.N.broker] log.dirs, as serve would open it; without either, they
// refuse as serve does rather than check some other node's directory.
func TestStorageNodeID(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	path := sharedClusterFile(t, dirs...)
	r := mustRun(t, "", "storage", "check", "-c", path, "--node-id", "2")
	if !strings.Contains(r.stdout, "checked in "+dirs[1]+":") {
		t.Errorf("storage check --node-id 2 checked another directory:\n%s", r.stdout)
	}
	r = mustFail(t, "", "storage", "repair", "-c", path, "--node-id", "3", "--skip", "t-0")
	if !strings.Contains(r.stderr, "no partition t-0 in "+dirs[2]) {
		t.Errorf("storage repair --node-id 3 looked elsewhere: %s", r.stderr)
	}
	t.Setenv("WREN_NODE_ID", "3")
	if r := mustRun(t, "", "storage", "check", "-c", path); !strings.Contains(r.stdout, "checked in "+dirs[2]+":") {
		t.Errorf("WREN_NODE_ID=3 storage check checked another directory:\n%s", r.stdout)
	}
	t.Setenv("WREN_NODE_ID", "")
	for _, args := range [][]string{{"storage", "check", "-c", path}, {"storage", "repair", "-c", path, "--skip", "t-0"}} {
		r := mustFail(t, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "this node is not found in controller.quorum.voters") || strings.Contains(r.stdout, "checked in") {
			t.Errorf("wren %s without a node id: exit %d, stdout %q, stderr %q", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	// --dir still names the directory outright.
	if r := mustRun(t, "", "storage", "check", "-c", path, "--dir", dirs[0]); !strings.Contains(r.stdout, "checked in "+dirs[0]+":") {
		t.Errorf("storage check --dir:\n%s", r.stdout)
	}
}
