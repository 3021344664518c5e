package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testClock is an injected clock that tests move by hand.
type testClock struct{ ms int64 }

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms) }
func (c *testClock) advance(d time.Duration) { c.ms += d.Milliseconds() }

func testOptions(clock *testClock) Options {
	o := DefaultOptions()
	o.SegmentBytes = 64 << 10
	o.IndexIntervalBytes = 1024
	o.RetentionMs = -1
	if clock != nil {
		o.Now = clock.now
	}
	return o
}

// makeBatch builds a batch of n records whose values say which batch and
// record they are, so a read can be checked byte for byte.
func makeBatch(t tb, codec batch.CompressionType, id, n, valueSize int, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder(codec)
	for i := 0; i < n; i++ {
		v := bytes.Repeat([]byte{byte(id + i)}, valueSize)
		copy(v, fmt.Sprintf("b%d-r%d|", id, i))
		b.Append(batch.Record{
			Timestamp: ts + int64(i),
			Key:       []byte(fmt.Sprintf("k%d", i%7)),
			Value:     v,
			Headers:   []batch.RecordHeader{{Key: "h", Value: []byte{byte(i)}}},
		})
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openTestLog(t tb, fsys vfs.FS, opts Options, oo OpenOptions) *Log {
	t.Helper()
	l, _, err := Open(fsys, "/data/t-0", TopicPartition{"t", 0}, opts, oo)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readAll reads every batch from the log start to the end.
func readAll(t tb, l *Log) []byte {
	t.Helper()
	return readUpTo(t, l, l.LogEndOffset())
}

// readUpTo reads every batch from the log start offset up to end.
func readUpTo(t tb, l *Log, end int64) []byte {
	t.Helper()
	var out []byte
	off := l.LogStartOffset()
	for off < end {
		b, err := l.ReadBatches(off, 1<<20, end)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("empty read at %d below the log end offset %d", off, l.LogEndOffset())
		}
		out = append(out, b...)
		last, err := lastOffsetIn(b)
		if err != nil {
			t.Fatal(err)
		}
		off = last + 1
	}
	return out
}

// lastOffsetIn walks whole batches and returns the last offset.
func lastOffsetIn(b []byte) (int64, error) {
	last := int64(-1)
	for len(b) > 0 {
		n, h, err := batch.Scan(b)
		if err != nil {
			return 0, err
		}
		last = h.LastOffset()
		b = b[n:]
	}
	return last, nil
}

// batchesOf splits a byte string of whole batches.
func batchesOf(t tb, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		n, _, err := batch.Scan(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// withOffset returns a copy of a batch as the log stores it.
func withOffset(b []byte, base int64, epoch int32) []byte {
	c := append([]byte(nil), b...)
	batch.SetBaseOffset(c, base)
	batch.SetPartitionLeaderEpoch(c, epoch)
	return c
}

func mustNotErr(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testSeed returns WREN_SEED if set, else a fresh seed, and prints it
// when the test fails so the run can be replayed exactly.
func testSeed(t testing.TB) int64 {
	seed := time.Now().UnixNano()
	if s := os.Getenv("WREN_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("WREN_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with WREN_SEED=%d", seed)
		}
	})
	return seed
}

// envInt reads a positive count from the environment, for longer runs.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var _ = errors.Is
var _ = rand.New

// setOptions changes l's options in a copy: the value l points to may be
// shared with other logs (sharedOptions) and is never written through.
func setOptions(l *Log, change func(*Options)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := *l.opts
	change(&o)
	l.setOptionsLocked(&o)
}
