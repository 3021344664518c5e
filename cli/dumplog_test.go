package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenDir holds a partition written by Apache Kafka 4.1.1 and
// DumpLogSegments' output for two of its segments (testdata/kafka4).
const goldenDir = "../testdata/kafka4"

// kafkaDumps splits a dump-*.txt reference into the output of each
// kafka-dump-log run, keyed by its arguments ("--files X.index", ...).
func kafkaDumps(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dumps := map[string]string{}
	var key string
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if args, ok := strings.CutPrefix(line, "## kafka-dump-log "); ok {
			if key != "" {
				dumps[key] = out.String()
			}
			key, out = strings.TrimSpace(args), strings.Builder{}
			continue
		}
		if key != "" {
			out.WriteString(line)
		}
	}
	dumps[key] = out.String()
	return dumps
}

// TestDumpLogMatchesKafka runs dump-log where Kafka's tool ran (inside
// golden-0, file names as arguments) and compares the output line for line
// with Kafka's, for an uncompressed and a gzip segment and their indexes.
func TestDumpLogMatchesKafka(t *testing.T) {
	abs, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(abs, "golden-0"))
	for _, base := range []string{"00000000000000000000", "00000000000000000200"} {
		dumps := kafkaDumps(t, filepath.Join(abs, "dump-"+base+".txt"))
		cases := []struct{ kafkaArgs, wrenArgs string }{
			{"--deep-iteration --print-data-log --files " + base + ".log", "--deep-iteration --print-data-log " + base + ".log"},
			{"--files " + base + ".index", base + ".index"},
			{"--files " + base + ".timeindex", base + ".timeindex"},
		}
		for _, tc := range cases {
			want, ok := dumps[tc.kafkaArgs]
			if !ok {
				t.Fatalf("reference for %s has no run %q", base, tc.kafkaArgs)
			}
			got := mustRun(t, "", append([]string{"dump-log"}, strings.Fields(tc.wrenArgs)...)...).stdout
			compareLines(t, "dump-log "+tc.wrenArgs, got, want)
		}
		// Without deep iteration: the batch lines only.
		var batches strings.Builder
		for _, line := range strings.SplitAfter(dumps[cases[0].kafkaArgs], "\n") {
			if !strings.HasPrefix(line, "| ") {
				batches.WriteString(line)
			}
		}
		got := mustRun(t, "", "dump-log", base+".log").stdout
		compareLines(t, "dump-log "+base+".log", got, batches.String())
		// --deep-iteration alone: record lines without key and payload.
		got = mustRun(t, "", "dump-log", "--deep-iteration", base+".log").stdout
		if n, want := strings.Count(got, "\n| offset: "), strings.Count(dumps[cases[0].kafkaArgs], "\n| offset: "); n != want || strings.Contains(got, "payload:") {
			t.Errorf("dump-log --deep-iteration %s.log: %d record lines (want %d), payload printed: %t", base, n, want, strings.Contains(got, "payload:"))
		}
	}
}

func compareLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("%s: line %d differs from Kafka's\n got: %q\nwant: %q", what, i+1, gl, wl)
			return
		}
	}
}

// copyGolden copies a golden segment to a temp dir, for damaging.
func copyGolden(t *testing.T, name string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, "golden-0", name))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(t.TempDir(), name), data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Damage is reported the way DumpLogSegments reports it (see the table in
// testdata/kafka4/README.md).
func TestDumpLogDamage(t *testing.T) {
	const seg = "00000000000000000000.log"
	path, data := copyGolden(t, seg)

	// A torn last batch: the batches before it, then the trailing bytes.
	writeFile(t, path, data[:len(data)-100])
	out := mustRun(t, "", "dump-log", path).stdout
	if !strings.Contains(out, "Found 3750 invalid bytes at the end of "+seg+"\n") || strings.Count(out, "baseOffset: ") != 3 {
		t.Errorf("torn tail:\n%s", out)
	}

	// A flipped byte inside the first batch's records: isvalid: false, and
	// the walk goes on to the next batch.
	bad := bytes.Clone(data)
	bad[200] ^= 0xff
	writeFile(t, path, bad)
	out = mustRun(t, "", "dump-log", "--deep-iteration", path).stdout
	lines := strings.Split(out, "\n")
	if !strings.HasSuffix(lines[2], "isvalid: false") || !strings.HasPrefix(lines[3], "baseOffset: 13 ") {
		t.Errorf("flipped byte:\n%s", strings.Join(lines[:4], "\n"))
	}

	// Garbage with a length field below the minimum: an error, exit 1.
	writeFile(t, path, append(bytes.Clone(data), bytes.Repeat([]byte{0xff}, 20)...))
	r := mustFail(t, "", "dump-log", path)
	if !strings.Contains(r.stderr, "smaller than minimum record overhead") {
		t.Errorf("garbage tail: stderr %q", r.stderr)
	}

	// Fewer than 17 stray bytes: trailing bytes, exit 0.
	writeFile(t, path, append(bytes.Clone(data), 1, 2, 3))
	if out := mustRun(t, "", "dump-log", path).stdout; !strings.HasSuffix(out, "Found 3 invalid bytes at the end of "+seg+"\n") {
		t.Errorf("3 stray bytes:\n%s", out)
	}
}

func TestDumpLogIndexZeroTail(t *testing.T) {
	// A preallocated index: entries, then zeros. Kafka stops at the first
	// entry after the first that names the base offset.
	dir := t.TempDir()
	idx := filepath.Join(dir, "00000000000000000100.index")
	writeFile(t, idx, []byte{0, 0, 0, 5, 0, 0, 1, 0, 0, 0, 0, 9, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	out := mustRun(t, "", "dump-log", idx).stdout
	if want := "Dumping " + idx + "\noffset: 105 position: 256\noffset: 109 position: 512\n"; out != want {
		t.Errorf("index with zero tail:\n%s\nwant:\n%s", out, want)
	}
	ti := filepath.Join(dir, "00000000000000000100.timeindex")
	writeFile(t, ti, []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	out = mustRun(t, "", "dump-log", ti).stdout
	if want := "Dumping " + ti + "\ntimestamp: 7 offset: 105\n"; out != want {
		t.Errorf("time index with zero tail:\n%s\nwant:\n%s", out, want)
	}
	// An index whose name is not a base offset cannot be read.
	bad := filepath.Join(dir, "x.index")
	writeFile(t, bad, make([]byte, 8))
	mustFail(t, "", "dump-log", bad)
	// Unknown files are skipped with a note, as Kafka does.
	r := mustRun(t, "", "dump-log", filepath.Join(dir, "leader-epoch-checkpoint"))
	if !strings.HasPrefix(r.stderr, "Ignoring unknown file ") {
		t.Errorf("unknown file: stderr %q", r.stderr)
	}
	mustFail(t, "", "dump-log", filepath.Join(dir, "missing.log"))
}

// manifestBatch is a batch as testdata/kafka4/manifest.json lists it
// (from Kafka's own dump of every segment).
type manifestBatch struct {
	BaseOffset           int64  `json:"base_offset"`
	LastOffset           int64  `json:"last_offset"`
	Count                int32  `json:"count"`
	BaseSequence         int32  `json:"base_sequence"`
	LastSequence         int32  `json:"last_sequence"`
	ProducerID           int64  `json:"producer_id"`
	ProducerEpoch        int16  `json:"producer_epoch"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch"`
	IsTransactional      bool   `json:"is_transactional"`
	IsControl            bool   `json:"is_control"`
	Position             int64  `json:"position"`
	MaxTimestamp         int64  `json:"max_timestamp"`
	Size                 int    `json:"size"`
	Codec                string `json:"codec"`
	CRC                  uint32 `json:"crc"`
	Segment              int64  `json:"segment"`
}

// TestDumpLogAllSegmentsMatchManifest covers the codecs the two dump
// references do not (snappy in xerial framing, lz4, zstd, mixed segments):
// every batch line of every segment, against Kafka's own numbers, and
// every record once with --deep-iteration.
func TestDumpLogAllSegmentsMatchManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Batches []manifestBatch `json:"batches"`
	}
	decodeJSON(t, string(data), &manifest)
	if len(manifest.Batches) == 0 {
		t.Fatal("manifest lists no batches")
	}
	segments, err := filepath.Glob(filepath.Join(goldenDir, "golden-0", "*.log"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no golden segments: %v", err)
	}
	var want strings.Builder
	for _, b := range manifest.Batches {
		fmt.Fprintf(&want, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d "+
			"producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t "+
			"deleteHorizonMs: OptionalLong.empty position: %d CreateTime: %d size: %d magic: 2 compresscodec: %s crc: %d isvalid: true\n",
			b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence, b.ProducerID, b.ProducerEpoch,
			b.PartitionLeaderEpoch, b.IsTransactional, b.IsControl, b.Position, b.MaxTimestamp, b.Size, b.Codec, b.CRC)
	}
	out := mustRun(t, "", append([]string{"dump-log", "--deep-iteration"}, segments...)...).stdout
	var got strings.Builder
	next := int64(0)
	for _, line := range strings.SplitAfter(out, "\n") {
		switch {
		case strings.HasPrefix(line, "baseOffset: "):
			got.WriteString(line)
		case strings.HasPrefix(line, "| offset: "):
			var off int64
			if _, err := fmt.Sscanf(line, "| offset: %d", &off); err != nil || off != next {
				t.Fatalf("record line %q: want offset %d", line, next)
			}
			next++
		}
	}
	compareLines(t, "batch lines of every segment", got.String(), want.String())
	if next != 1040 {
		t.Errorf("deep iteration saw %d records, want 1040", next)
	}
}
