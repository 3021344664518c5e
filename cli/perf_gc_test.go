package cli

import (
	"bytes"
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPerfGC checks that the perf commands' collector target applies when
// GOGC is unset, is left alone when the user set GOGC, and is restored.
func TestPerfGC(t *testing.T) {
	t.Setenv("GOGC", "") // restored at the end of the test
	os.Unsetenv("GOGC")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	restore := perfGC()
	if got := debug.SetGCPercent(perfGCPercent); got != perfGCPercent {
		t.Errorf("GOGC unset: collector target %d, want %d", got, perfGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after restore: collector target %d, want 100", got)
	}

	t.Setenv("GOGC", "100")
	restore = perfGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: collector target %d, want 100 left alone", got)
	}
	restore()
}

// BenchmarkPerfConsume runs `wren perf consume` of 1 KiB records from an
// in-memory broker in this process, at Go's default collector target and
// at the perf commands' own. The broker shares the process and its
// collector, so read the two against each other, not as the client's
// cost alone; bench-tls.sh measures a real broker over TLS.
func BenchmarkPerfConsume(b *testing.B) {
	const records = 20000
	brokers := testBrokers(b)
	topic := "perf-consume-bench"
	wren := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}
		if code := Main(ctx, env, append([]string{"wren"}, args...)); code != 0 {
			b.Fatalf("wren %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
	wren("perf", "produce", "--topic", topic, "--num-records", strconv.Itoa(records), "--record-size", "1024",
		"--throughput", "-1", "--partitions", "1", "--reporting-interval", "1h", "-b", brokers)
	for _, c := range []struct {
		name string
		gogc string // "" leaves GOGC unset: perfGC applies
	}{{"GOGC=100", "100"}, {"perf", ""}} {
		b.Run(c.name, func(b *testing.B) {
			b.Setenv("GOGC", c.gogc)
			if c.gogc == "" {
				os.Unsetenv("GOGC")
			} else {
				n, _ := strconv.Atoi(c.gogc)
				defer debug.SetGCPercent(debug.SetGCPercent(n))
			}
			b.SetBytes(records * 1024)
			for b.Loop() {
				wren("perf", "consume", "--topic", topic, "--num-records", strconv.Itoa(records),
					"--reporting-interval", "1h", "-b", brokers)
			}
		})
	}
}
