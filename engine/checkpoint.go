package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/wren-broker/wren/internal/vfs"
)

// Kafka's checkpoint files (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint,
// leader-epoch-checkpoint) share one text layout:
//
//	0            version
//	2            number of entries
//	topic 0 17   one entry a line, fields separated by one space
//	topic 1 4
//
// Part of the on-disk format; never change.
const checkpointVersion = 0

// Names of the data-directory and partition-directory files.
// Part of the on-disk format; never change.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	MetaPropertiesFile           = "meta.properties"
)

// maxCheckpointBytes bounds what a checkpoint read may allocate.
const maxCheckpointBytes = 64 << 20

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// Less orders partitions by topic, then partition.
func (tp TopicPartition) Less(o TopicPartition) bool {
	return tp.Topic < o.Topic || tp.Topic == o.Topic && tp.Partition < o.Partition
}

// ParseTopicPartitionDir splits a partition directory name
// "<topic>-<partition>" at its last dash.
func ParseTopicPartitionDir(name string) (TopicPartition, error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, fmt.Errorf("%w: %q", ErrInvalidTopicPartition, name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || name[i+1] == '+' || (len(name[i+1:]) > 1 && name[i+1] == '0') {
		return TopicPartition{}, fmt.Errorf("%w: %q", ErrInvalidTopicPartition, name)
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, nil
}

// writeCheckpoint crash-safely replaces a checkpoint file.
func writeCheckpoint(fsys vfs.FS, path string, lines []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return vfs.WriteFileAtomic(fsys, path, b.Bytes())
}

// readCheckpoint returns the entry lines split into fields, each with
// exactly fields fields. A missing file is (nil, nil).
func readCheckpoint(fsys vfs.FS, path string, fields int) ([][]string, error) {
	data, err := readSmallFile(fsys, path, maxCheckpointBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, errTooBig) {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	bad := func(line int, why string) error {
		return fmt.Errorf("engine: checkpoint %s line %d: %s", path, line, why)
	}
	var out [][]string
	line, want := 0, -1
	for sc.Scan() {
		line++
		text := sc.Text()
		switch line {
		case 1:
			if text != strconv.Itoa(checkpointVersion) {
				return nil, bad(line, fmt.Sprintf("unsupported version %q", text))
			}
		case 2:
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 {
				return nil, bad(line, fmt.Sprintf("bad entry count %q", text))
			}
			want = n
		default:
			f := strings.Split(text, " ")
			if len(f) != fields {
				return nil, bad(line, fmt.Sprintf("want %d fields, got %q", fields, text))
			}
			out = append(out, f)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", path, err)
	}
	if want < 0 || len(out) != want {
		return nil, fmt.Errorf("engine: checkpoint %s: header says %d entries, found %d", path, want, len(out))
	}
	return out, nil
}

// WriteOffsetCheckpoint writes a topic-partition → offset checkpoint.
func WriteOffsetCheckpoint(fsys vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeCheckpoint(fsys, path, lines)
}

// ReadOffsetCheckpoint reads a topic-partition → offset checkpoint; a
// missing file is an empty map.
func ReadOffsetCheckpoint(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	rows, err := readCheckpoint(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(rows))
	for _, r := range rows {
		p, err1 := strconv.ParseInt(r[1], 10, 32)
		off, err2 := strconv.ParseInt(r[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("engine: checkpoint %s: bad entry %q", path, strings.Join(r, " "))
		}
		out[TopicPartition{Topic: r[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// errTooBig: a file read whole is larger than its kind may be.
var errTooBig = vfs.ErrTooLarge

// readSmallFile reads a whole file of at most limit bytes: one open, one
// fstat and one read, where a stat of its path first would cost a lookup
// more (a start reads one checkpoint of every partition).
func readSmallFile(fsys vfs.FS, path string, limit int64) ([]byte, error) {
	return vfs.ReadFileLimit(fsys, path, limit)
}
