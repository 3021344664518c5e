package engine

import (
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	in := map[TopicPartition]int64{{"a", 0}: 17, {"a", 1}: 4, {"b-c", 12}: 0}
	if err := WriteOffsetCheckpoint(fsys, "/d/cp", in); err != nil {
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fsys, "/d/cp")
	if err != nil {
		t.Fatal(err)
	}
	if want := "0\n3\na 0 17\na 1 4\nb-c 12 0\n"; string(data) != want {
		t.Fatalf("checkpoint bytes:\n%q\nwant\n%q", data, want)
	}
	out, err := ReadOffsetCheckpoint(fsys, "/d/cp")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %v, wrote %v", out, in)
	}
	for k, v := range in {
		if out[k] != v {
			t.Fatalf("%v: read %d, wrote %d", k, out[k], v)
		}
	}
	missing, err := ReadOffsetCheckpoint(fsys, "/d/none")
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing checkpoint: %v %v", missing, err)
	}
}

func TestOffsetCheckpointRejectsBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"version":   "1\n0\n",
		"count":     "0\n2\na 0 1\n",
		"fields":    "0\n1\na 0\n",
		"negative":  "0\n1\na 0 -4\n",
		"not a num": "0\n1\na x 4\n",
		"empty":     "",
	} {
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewMem()
			fsys.MkdirAll("/d", 0o755)
			if err := vfs.WriteFileAtomic(fsys, "/d/cp", []byte(body)); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadOffsetCheckpoint(fsys, "/d/cp"); err == nil {
				t.Fatalf("accepted %q", body)
			}
		})
	}
}

func TestParseTopicPartitionDir(t *testing.T) {
	good := map[string]TopicPartition{
		"orders-0":              {"orders", 0},
		"my-topic-12":           {"my-topic", 12},
		"__consumer_offsets-49": {"__consumer_offsets", 49},
	}
	for in, want := range good {
		got, err := ParseTopicPartitionDir(in)
		if err != nil || got != want {
			t.Errorf("%q: got %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"orders", "orders-", "-1", "orders-x", "orders-01", "orders-+1"} {
		if got, err := ParseTopicPartitionDir(bad); err == nil {
			t.Errorf("%q: accepted as %v", bad, got)
		}
	}
}

func TestEpochCache(t *testing.T) {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/p", 0o755)
	c, err := loadEpochCache(&fileDir{fs: fsys, dir: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if e, o := c.endOffsetFor(0, 10); e != -1 || o != -1 {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	for _, a := range []EpochEntry{{0, 0}, {0, 5}, {2, 10}, {1, 12}, {5, 20}} {
		c.assign(a.Epoch, a.StartOffset)
	}
	want := []EpochEntry{{0, 0}, {2, 10}, {5, 20}}
	if got := c.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	// Kafka's LeaderEpochFileCache.endOffsetFor answers.
	for _, tc := range []struct {
		req       int32
		epoch     int32
		endOffset int64
	}{
		{5, 5, 30}, // latest: log end offset
		{2, 2, 20}, // known: next epoch's start
		{3, 2, 20}, // between: floor epoch, next start
		{1, 0, 10}, // between 0 and 2
		{0, 0, 10},
		{6, -1, -1}, // above latest
		{-1, -1, -1},
	} {
		e, o := c.endOffsetFor(tc.req, 30)
		if e != tc.epoch || o != tc.endOffset {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.req, e, o, tc.epoch, tc.endOffset)
		}
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	c2, err := loadEpochCache(&fileDir{fs: fsys, dir: "/p"})
	if err != nil || !equalEpochs(c2.snapshot(), want) {
		t.Fatalf("reloaded %v %v", c2.snapshot(), err)
	}
	c2.truncateFromEnd(20)
	if got := c2.snapshot(); !equalEpochs(got, want[:2]) {
		t.Fatalf("truncateFromEnd(20): %v", got)
	}
	c2.truncateFromStart(12)
	if got := c2.snapshot(); !equalEpochs(got, []EpochEntry{{2, 12}}) {
		t.Fatalf("truncateFromStart(12): %v", got)
	}
	// A request below the first epoch answers with the requested epoch and
	// the first start offset.
	c3 := &epochCache{entries: []EpochEntry{{3, 7}, {4, 9}}}
	if e, o := c3.endOffsetFor(1, 20); e != 1 || o != 7 {
		t.Fatalf("below first: (%d, %d)", e, o)
	}
}

func equalEpochs(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
