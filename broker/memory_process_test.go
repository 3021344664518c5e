package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/engine/batch"
)

// memoryCgroupRoot is where the cgroup v1 memory controller is mounted.
const memoryCgroupRoot = "/sys/fs/cgroup/memory"

// TestMemory64MBProcess runs the real wren binary, with its default
// settings, in a cgroup v1 memory group limited to 64 MiB. 200 connections
// send Produce requests just under socket.request.max.bytes and
// decompression bombs (small zstd and gzip batches that expand to the
// per-batch cap, and streamed zstd ones that do not say how far) as fast
// as the broker takes them, while a well-behaved idempotent franz-go
// producer and a consumer keep working. It checks that the broker is not
// OOM-killed, that the well-behaved producer is acknowledged while the
// attack runs, and that every acknowledged record reads back afterwards;
// it logs the peak resident memory.
//
// It needs root and the cgroup v1 memory controller, and runs for about
// half a minute: set WREN_MEMORY_TEST=1.
func TestMemory64MBProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	if os.Getenv("WREN_MEMORY_TEST") == "" {
		t.Skip("set WREN_MEMORY_TEST=1 to run the broker under a 64 MiB memory cgroup (about 30 s, root)")
	}
	cg := newMemoryCgroup(t, 64<<20)

	load := memoryLoad{connections: 200, requestBytes: 8<<20 - 4096, bombs: true, duration: 15 * time.Second,
		brokerExtra: os.Getenv("WREN_MEMORY_TEST_BROKER"), storageExtra: os.Getenv("WREN_MEMORY_TEST_STORAGE")}
	res := runMemoryLoad(t, cg, load)

	oom := readCgroup(t, cg, "memory.oom_control")
	t.Logf("64 MiB cgroup, %d connections: peak RSS %.1f MiB (VmHWM), cgroup peak %.1f MiB (memory.max_usage_in_bytes, page cache included), memory.failcnt %s, oom_control %q",
		load.connections, mib(res.peakRSS), mib(parseInt(t, readCgroup(t, cg, "memory.max_usage_in_bytes"))),
		readCgroup(t, cg, "memory.failcnt"), strings.ReplaceAll(oom, "\n", "; "))
	t.Logf("attack: %d large requests answered, %d bombs answered, %d connections refused or closed; well-behaved: %d records acknowledged during the attack, %d consumed",
		res.largeAnswered, res.bombsAnswered, res.reconnects, res.ackedDuringAttack, res.consumed)
}

// newMemoryCgroup makes a cgroup v1 memory group limited to limit bytes,
// removed when the test ends; it skips the test where it cannot.
func newMemoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creates a memory cgroup, which needs root")
	}
	if _, err := os.Stat(filepath.Join(memoryCgroupRoot, "memory.limit_in_bytes")); err != nil {
		t.Skipf("no cgroup v1 memory controller at %s (%v)", memoryCgroupRoot, err)
	}
	cg := filepath.Join(memoryCgroupRoot, fmt.Sprintf("wren-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup (%v)", err)
	}
	t.Cleanup(func() {
		oom := readCgroup(t, cg, "memory.oom_control")
		t.Logf("64 MiB cgroup: peak %.1f MiB (page cache included), oom_control %q",
			mib(parseInt(t, readCgroup(t, cg, "memory.max_usage_in_bytes"))), strings.ReplaceAll(oom, "\n", "; "))
		if strings.Contains(oom, "oom_kill ") && !strings.Contains(oom, "oom_kill 0") {
			t.Errorf("the OOM killer ran in the cgroup: %q", oom)
		}
		removeCgroup(t, cg)
	})
	writeCgroup(t, cg, "memory.limit_in_bytes", strconv.FormatInt(limit, 10))
	os.WriteFile(filepath.Join(cg, "memory.swappiness"), []byte("0"), 0o644)
	return cg
}

// TestMemoryLoadFigures measures peak resident memory without a cgroup
// under 20, 50 and 100 connections each sending Produce requests just under
// socket.request.max.bytes, for the record. Set WREN_MEMORY_FIGURES=1.
func TestMemoryLoadFigures(t *testing.T) {
	if testing.Short() || os.Getenv("WREN_MEMORY_FIGURES") == "" {
		t.Skip("set WREN_MEMORY_FIGURES=1 to measure peak RSS under 20/50/100 connections (about a minute)")
	}
	for _, n := range []int{20, 50, 100} {
		res := runMemoryLoad(t, "", memoryLoad{connections: n, requestBytes: 8<<20 - 4096, duration: 10 * time.Second})
		t.Logf("%d connections of %d-byte Produce requests: peak RSS %.1f MiB, %d requests answered, %d acknowledged records of the well-behaved producer",
			n, 8<<20-4096, mib(res.peakRSS), res.largeAnswered, res.ackedDuringAttack)
	}
	// Requests above the frame limit are refused at their size prefix.
	res := runMemoryLoad(t, "", memoryLoad{connections: 100, requestBytes: 50 << 20, duration: 10 * time.Second})
	t.Logf("100 connections of 50 MiB Produce requests: peak RSS %.1f MiB, %d connections closed at the size prefix", mib(res.peakRSS), res.reconnects)
}

type memoryLoad struct {
	connections  int
	requestBytes int
	bombs        bool
	duration     time.Duration
	// brokerExtra and storageExtra are TOML lines for those sections.
	brokerExtra, storageExtra string
}

type memoryResult struct {
	peakRSS                      int64
	largeAnswered, bombsAnswered int64
	reconnects                   int64
	ackedDuringAttack, consumed  int64
}

// runMemoryLoad starts wren serve (inside cgroup when not empty), runs the
// load next to a well-behaved producer and consumer, checks that every
// acknowledged record reads back, and returns the figures.
func runMemoryLoad(t *testing.T, cgroup string, load memoryLoad) memoryResult {
	t.Helper()
	dir := t.TempDir()
	bin := wrenBinary(t)
	conf, addr := writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), load.brokerExtra, fmt.Sprintf("[storage]\n%s\n%s", load.storageExtra, `[groups]
offsets.topic.num.partitions = 1
[logging]
level = "info"
`))
	stderr := &lockedBuffer{}
	var cmd *exec.Cmd
	if cgroup != "" {
		// The shell joins the group before exec, so the broker never
		// allocates outside it.
		cmd = diesWithTest(exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" serve --config "$3"`, "sh", cgroup, bin, conf))
	} else {
		cmd = diesWithTest(exec.Command(bin, "serve", "--config", conf))
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)
	waitListening(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, topic := range []string{"good", "attack"} {
		if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}

	// The well-behaved producer and consumer.
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("good"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1<<30), kgo.RequestRetries(1<<30))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("good"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	var res memoryResult
	var ackedMu sync.Mutex
	acked := map[int64]string{} // offset -> value
	attackCtx, stopAttack := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; attackCtx.Err() == nil && i < 1_000_000; i++ {
			value := fmt.Sprintf("record-%d-%s", i, strings.Repeat("x", 1000))
			r, err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).First()
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("well-behaved produce: %v", err)
				}
				return
			}
			ackedMu.Lock()
			acked[r.Offset] = value
			ackedMu.Unlock()
			atomic.AddInt64(&res.ackedDuringAttack, 1)
		}
	}()
	go func() {
		defer wg.Done()
		for attackCtx.Err() == nil {
			fs := consumer.PollFetches(attackCtx)
			fs.EachRecord(func(*kgo.Record) { atomic.AddInt64(&res.consumed, 1) })
		}
	}()

	large := produceFrame(t, "attack", uncompressedBatch(t, load.requestBytes-200))
	var bombs [][]byte
	if load.bombs {
		bombs = bombFrames(t, "attack")
	}
	var attackers sync.WaitGroup
	for i := range load.connections {
		attackers.Add(1)
		go func() {
			defer attackers.Done()
			attack(attackCtx, addr, i, large, bombs, &res)
		}()
	}
	// Sample the broker's resident memory while the attack runs.
	deadline := time.Now().Add(load.duration)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			stopAttack()
			t.Fatalf("the broker exited during the attack: %v\n%s", err, tail(stderr.String(), 2000))
		case <-time.After(200 * time.Millisecond):
		}
		res.peakRSS = max(res.peakRSS, procStatus(t, cmd.Process.Pid, "VmHWM"))
	}
	stopAttack()
	attackers.Wait()
	wg.Wait()
	if res.ackedDuringAttack == 0 {
		t.Errorf("the well-behaved producer got no acknowledgement in %v of attack", load.duration)
	}
	res.peakRSS = max(res.peakRSS, procStatus(t, cmd.Process.Pid, "VmHWM"))

	// Every acknowledged record reads back at its offset.
	reader, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("good"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	seen := 0
	for seen < len(acked) {
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d acknowledged records before the deadline", seen, len(acked))
		}
		fs := reader.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if want, ok := acked[r.Offset]; ok {
				if string(r.Value) != want {
					t.Fatalf("offset %d: read %.20q, acknowledged %.20q", r.Offset, r.Value, want)
				}
				seen++
			}
		})
	}
	select {
	case err := <-exited:
		t.Fatalf("the broker exited: %v\n%s", err, stderr.String())
	default:
	}
	stop()
	return res
}

// attack sends the large request and the bombs in turn on one connection
// as fast as the broker answers, reconnecting when it is closed.
func attack(ctx context.Context, addr string, id int, large []byte, bombs [][]byte, res *memoryResult) {
	for n := 0; ctx.Err() == nil && n < 1_000_000; n++ {
		nc, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		stop := context.AfterFunc(ctx, func() { nc.Close() })
		for i := id; ctx.Err() == nil; i++ {
			req, counter := large, &res.largeAnswered
			if len(bombs) > 0 && i%2 == 1 {
				req, counter = bombs[i/2%len(bombs)], &res.bombsAnswered
			}
			if _, err := nc.Write(req); err != nil {
				break
			}
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err != nil {
				break
			}
			if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
				break
			}
			atomic.AddInt64(counter, 1)
		}
		stop()
		nc.Close()
		atomic.AddInt64(&res.reconnects, 1)
	}
}

// uncompressedBatch is one valid batch of about size bytes: a single
// record. Above max.message.bytes it gets MESSAGE_TOO_LARGE, after the
// whole request was read.
func uncompressedBatch(t *testing.T, size int) []byte {
	b := batch.NewBuilder(batch.CompressionNone)
	b.Append(batch.Record{Value: bytes.Repeat([]byte{'w'}, size)})
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bombFrames are Produce requests each holding one small compressed batch
// that expands to just under the default per-batch cap
// (max.decompressed.batch.bytes, 8 MiB): zstd that declares its size,
// gzip, and zstd streamed without a declared size.
func bombFrames(t *testing.T, topic string) [][]byte {
	var out [][]byte
	for _, b := range bombBatches(t) {
		out = append(out, produceFrame(t, topic, b))
	}
	return out
}

func bombBatches(t *testing.T) [][]byte {
	raw := uncompressedBatch(t, 8<<20-4096)
	section := raw[batch.RecordsOffset:]
	zs, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	declared := zs.EncodeAll(section, nil)
	var streamed bytes.Buffer
	sw, _ := zstd.NewWriter(&streamed, zstd.WithWindowSize(1<<16))
	sw.Write(section)
	sw.Close()
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(section)
	gw.Close()
	var out [][]byte
	for _, c := range []struct {
		codec   int16
		section []byte
	}{{4, declared}, {1, gz.Bytes()}, {4, streamed.Bytes()}} {
		out = append(out, withSection(raw, c.codec, c.section))
	}
	return out
}

// withSection is raw's header with a compressed records section: length,
// codec and CRC-32C fixed up.
func withSection(raw []byte, codec int16, section []byte) []byte {
	b := append(bytes.Clone(raw[:batch.RecordsOffset]), section...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	attrs := binary.BigEndian.Uint16(b[21:])
	binary.BigEndian.PutUint16(b[21:], attrs&^7|uint16(codec))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produceFrame is a Produce v7 request (acks=1) for partition 0 of topic,
// with its size prefix.
func produceFrame(t *testing.T, topic string, records []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = 1
	req.TimeoutMillis = 30000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = records
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	b := make([]byte, 4, len(records)+128)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 1) // correlation id
	b = binary.BigEndian.AppendUint16(b, 6)
	b = append(b, "attack"...)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// procStatus reads a kB field of /proc/PID/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0 // exited; the caller notices
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return parseInt(t, strings.TrimSuffix(strings.TrimSpace(rest), " kB")) << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func writeCgroup(t *testing.T, cg, file, value string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cg, file), []byte(value), 0o644); err != nil {
		t.Fatalf("cgroup %s = %s: %v", file, value, err)
	}
}

func readCgroup(t *testing.T, cg, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cg, file))
	if err != nil {
		t.Fatalf("cgroup %s: %v", file, err)
	}
	return strings.TrimSpace(string(data))
}

// removeCgroup removes the test's group once its processes are gone.
func removeCgroup(t *testing.T, cg string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(cg)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("removing cgroup %s: %v", cg, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func parseInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return n
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

func mib(n int64) float64 { return float64(n) / (1 << 20) }
