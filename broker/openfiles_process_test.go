package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOpenFileLimitProcess runs the wren binary under an open-file limit of
// 256 (ulimit -n in a shell that then execs it) with 400 partitions, whose
// segments would take 1,200 descriptors if every file stayed open. The
// derived log.open.files.max is 256 - 64 (connections) - 64 (reserve) =
// 128. Through a restart under the same limit, a franz-go producer writes
// a record to every partition and a consumer reads them all back, while
// the process's descriptors on segment files, counted from
// /proc/<pid>/fd, stay within the budget.
func TestOpenFileLimitProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	const nofile, partitions, budget = 256, 400, 128
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	bin := wrenBinary(t)
	conf, addr := writeSingleNodeConfig(t, dir, data, "", `[logging]
level = "warn"
`)

	var peak atomic.Int64
	start := func() (*exec.Cmd, chan struct{}) {
		cmd := diesWithTest(exec.Command("sh", "-c", fmt.Sprintf("ulimit -n %d && exec %s serve --config %s", nofile, bin, conf)))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, addr)
		if lim := procNofile(t, cmd.Process.Pid); lim != nofile {
			t.Fatalf("the broker runs with an open-file limit of %d, want %d", lim, nofile)
		}
		// Sample the broker's descriptors on segment files while it runs.
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if n := int64(segmentFDs(cmd.Process.Pid, data)); n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(5 * time.Millisecond) // a sampling period, not a wait for a condition
			}
		}()
		return cmd, done
	}
	stop := func(cmd *exec.Cmd, done chan struct{}) {
		close(done)
		cmd.Process.Signal(syscall.SIGTERM)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("broker exited with %v", err)
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("broker did not stop within 60 s of SIGTERM")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd, done := start()
	defer func() { cmd.Process.Kill() }()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, partitions, 1, nil, "many"); err != nil {
		t.Fatal(err)
	}
	adm.Close()

	produce := func(round int) {
		t.Helper()
		producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("many"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30), kgo.RequestRetries(1<<30),
			kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		for p := 0; p < partitions; p++ {
			producer.Produce(ctx, &kgo.Record{Partition: int32(p), Value: []byte(fmt.Sprintf("%d/%d", round, p))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("partition %d: %v", p, err)
				}
			})
		}
		if err := producer.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(rounds int) {
		t.Helper()
		consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("many"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer consumer.Close()
		seen := map[string]bool{}
		for len(seen) < rounds*partitions {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records before the deadline", len(seen), rounds*partitions)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				want := fmt.Sprintf("/%d", r.Partition)
				if !strings.HasSuffix(string(r.Value), want) {
					t.Fatalf("partition %d holds %q", r.Partition, r.Value)
				}
				seen[string(r.Value)] = true
			})
		}
	}

	began := time.Now()
	phase := func(name string) {
		t.Logf("%s: %s", name, time.Since(began).Round(time.Millisecond))
		began = time.Now()
	}
	phase("start and create")
	produce(0)
	phase("produce to every partition")
	consume(1)
	phase("consume every partition")
	stop(cmd, done)
	phase("SIGTERM")

	// A restart loads 400 partitions under the same limit.
	cmd, done = start()
	phase("restart")
	produce(1)
	phase("produce to every partition")
	consume(2)
	phase("consume every partition")
	stop(cmd, done)

	if n := peak.Load(); n > budget {
		t.Fatalf("the broker held %d segment files open at once, budget %d", n, budget)
	}
	t.Logf("%d partitions under an open-file limit of %d: at most %d segment files open at once (budget %d)", partitions, nofile, peak.Load(), budget)
}

// procNofile reads a process's soft open-file limit from /proc.
func procNofile(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
			n, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatalf("limits line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no Max open files in /proc/<pid>/limits")
	return 0
}

// segmentFDs counts a process's descriptors on segment and index files
// under dir (0 once the process is gone).
func segmentFDs(pid int, dir string) int {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(fdDir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		switch filepath.Ext(strings.TrimSuffix(target, " (deleted)")) {
		case ".log", ".index", ".timeindex":
			n++
		}
	}
	return n
}
