package cli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"
	"github.com/wren-broker/wren/engine/batch"
)

// ErrCorruptSegment: dump-log met bytes that are not a record batch where
// one must start (Kafka's CorruptRecordException).
var ErrCorruptSegment = errors.New("cli: corrupt segment")

const (
	// headerSizeUpToMagic is baseOffset + batchLength + partitionLeaderEpoch
	// + magic: what Kafka's FileLogInputStream must see before it reads a
	// batch. Part of the on-disk format; never change.
	headerSizeUpToMagic = batch.MagicOffset + 1
	// minRecordOverhead is Kafka's LegacyRecord.RECORD_OVERHEAD_V0, the
	// smallest batchLength FileLogInputStream accepts.
	minRecordOverhead = 14
	// offsetIndexEntryBytes and timeIndexEntryBytes are the sizes of index
	// entries. Part of the on-disk format; never change.
	offsetIndexEntryBytes = 8
	timeIndexEntryBytes   = 12

	defaultMaxBatchBytes = 64 << 20
	// maxIndexFileBytes bounds what dump-log reads of an index file:
	// several times Kafka's segment.index.bytes default (10 MiB).
	maxIndexFileBytes = 64 << 20
)

func dumpLogCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "dump-log",
		Usage:     "print segment (.log) batches and index (.index, .timeindex) entries as kafka-dump-log does",
		ArgsUsage: "FILE...",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "deep-iteration", Usage: "print every record of every batch"},
			&ucli.BoolFlag{Name: "print-data-log", Usage: "print record keys and values (implies --deep-iteration)"},
			&ucli.IntFlag{Name: "max-batch-bytes", Value: defaultMaxBatchBytes, Usage: "refuse batches larger than this"},
			&ucli.StringFlag{Name: "format", Value: "text", Usage: "output format: text (kafka-dump-log's lines; json is not available for dump-log yet)"},
		},
		Action: func(c *ucli.Context) error {
			if err := wantArgs(c, 1, -1, "at least one FILE"); err != nil {
				return err
			}
			// Every command takes --format; dump-log's output is
			// kafka-dump-log's text, which scripts parse, and it has no
			// JSON form yet: say so rather than print text as "json".
			if format, err := formatOf(c); err != nil {
				return err
			} else if format == formatJSON {
				return fmt.Errorf("%w: dump-log --format json is not available yet: its output is kafka-dump-log's text layout", ErrUsage)
			}
			d := &logDumper{
				printData:     c.Bool("print-data-log"),
				deep:          c.Bool("deep-iteration") || c.Bool("print-data-log"),
				maxBatchBytes: c.Int("max-batch-bytes"),
			}
			if d.maxBatchBytes < batch.RecordBatchOverhead {
				return fmt.Errorf("%w: --max-batch-bytes %d", ErrUsage, d.maxBatchBytes)
			}
			w := bufio.NewWriter(env.Stdout)
			defer w.Flush()
			d.w = w
			for _, path := range c.Args().Slice() {
				if err := d.dumpFile(path, env.Stderr); err != nil {
					return err
				}
			}
			return w.Flush()
		},
	}
}

type logDumper struct {
	w             io.Writer
	deep          bool
	printData     bool
	maxBatchBytes int
	buf           []byte
}

func (d *logDumper) dumpFile(path string, stderr io.Writer) error {
	switch filepath.Ext(path) {
	case ".log":
		return d.dumpSegment(path)
	case ".index":
		return d.dumpIndex(path, offsetIndexEntryBytes, printOffsetIndexEntry)
	case ".timeindex":
		return d.dumpIndex(path, timeIndexEntryBytes, printTimeIndexEntry)
	default:
		fmt.Fprintf(stderr, "Ignoring unknown file %s\n", path)
		return nil
	}
}

// baseOffsetOf reads a segment file's base offset from its name
// (%020d.log), as Kafka does.
func baseOffsetOf(path string) (int64, error) {
	name := filepath.Base(path)
	n, err := strconv.ParseInt(strings.TrimSuffix(name, filepath.Ext(name)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s: file name is not a base offset", ErrUsage, path)
	}
	return n, nil
}

// dumpSegment walks the batches of a .log file the way Kafka's
// FileLogInputStream does: stop when fewer than headerSizeUpToMagic+1
// bytes remain or a batch runs past the end (then report the trailing
// bytes), fail on a length below minRecordOverhead, print a batch whose
// CRC fails with isvalid: false and go on.
func (d *logDumper) dumpSegment(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cli: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cli: %w", err)
	}
	size := st.Size()
	fmt.Fprintf(d.w, "Dumping %s\n", path)
	if base, err := baseOffsetOf(path); err == nil {
		fmt.Fprintf(d.w, "Log starting offset: %d\n", base)
	}
	var pos int64
	var head [headerSizeUpToMagic]byte
	for pos+headerSizeUpToMagic < size {
		if _, err := f.ReadAt(head[:], pos); err != nil {
			return fmt.Errorf("cli: %s: %w", path, err)
		}
		length := int64(int32(binary.BigEndian.Uint32(head[batch.LengthOffset:])))
		if length < minRecordOverhead {
			return fmt.Errorf("%w: found record size %d smaller than minimum record overhead (%d) in file %s",
				ErrCorruptSegment, length, minRecordOverhead, path)
		}
		total := batch.LogOverhead + length
		if pos+total > size {
			break
		}
		if total > int64(d.maxBatchBytes) {
			return fmt.Errorf("%w: %s: batch at position %d is %d bytes, over --max-batch-bytes", ErrCorruptSegment, path, pos, total)
		}
		if err := d.dumpBatch(f, path, pos, int(total)); err != nil {
			return err
		}
		pos += total
	}
	if trailing := size - pos; trailing > 0 {
		fmt.Fprintf(d.w, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path))
	}
	return nil
}

func (d *logDumper) dumpBatch(f *os.File, path string, pos int64, total int) error {
	if cap(d.buf) < total {
		d.buf = make([]byte, total)
	}
	b := d.buf[:total]
	if _, err := f.ReadAt(b, pos); err != nil {
		return fmt.Errorf("cli: %s: %w", path, err)
	}
	_, h, err := batch.Scan(b)
	valid := err == nil
	if err != nil && !errors.Is(err, batch.ErrCRC) {
		return fmt.Errorf("%w: %s: batch at position %d: %w", ErrCorruptSegment, path, pos, err)
	}
	printBatchLine(d.w, h, pos, valid)
	if !d.deep || !valid {
		return nil
	}
	err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
		d.printRecord(h, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s: records of the batch at position %d: %w", ErrCorruptSegment, path, pos, err)
	}
	return nil
}

// printBatchLine prints Kafka 4's DumpLogSegments.printBatchLevel line for
// a v2 batch.
func printBatchLine(w io.Writer, h batch.Header, pos int64, valid bool) {
	horizon := "OptionalLong.empty"
	if h.HasDeleteHorizonMs() {
		horizon = fmt.Sprintf("OptionalLong[%d]", h.DeleteHorizonMs())
	}
	fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d "+
		"producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t "+
		"deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, h.LastSequence(),
		h.ProducerID, h.ProducerEpoch, h.PartitionLeaderEpoch, h.IsTransactional(), h.IsControl(),
		horizon, pos, h.TimestampType(), h.MaxTimestamp, h.Size(), h.Magic, h.CompressionType(), h.CRC, valid)
}

// printRecord prints DumpLogSegments' "| offset: ..." line of one record.
func (d *logDumper) printRecord(h batch.Header, r batch.Record) {
	sequence := batch.NoSequence
	if h.BaseSequence >= 0 {
		sequence = batch.IncrementSequence(h.BaseSequence, r.OffsetDelta)
	}
	keys := make([]string, len(r.Headers))
	for i, hd := range r.Headers {
		keys[i] = hd.Key
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
		r.Offset, h.TimestampType(), r.Timestamp, sizeOf(r.Key), sizeOf(r.Value), sequence, strings.Join(keys, ","))
	switch {
	case h.IsControl():
		b.WriteString(controlRecordText(r))
	case d.printData:
		if r.Key != nil {
			b.WriteString(" key: " + javaString(r.Key))
		}
		if r.Value != nil {
			b.WriteString(" payload: " + javaString(r.Value))
		}
	}
	b.WriteByte('\n')
	io.WriteString(d.w, b.String())
}

// controlTypes are Kafka's ControlRecordType names by id.
var controlTypes = []string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// controlRecordText describes a control record: a transaction marker as
// Kafka prints it (endTxnMarker: COMMIT coordinatorEpoch: N); other control
// types by name only, where Kafka would also decode their payload.
func controlRecordText(r batch.Record) string {
	if len(r.Key) < 4 {
		return " controlType: UNKNOWN(-1)"
	}
	id := int16(binary.BigEndian.Uint16(r.Key[2:4]))
	name := "UNKNOWN"
	if id >= 0 && int(id) < len(controlTypes) {
		name = controlTypes[id]
	}
	if (id == 0 || id == 1) && len(r.Value) >= 6 {
		epoch := int32(binary.BigEndian.Uint32(r.Value[2:6]))
		return fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", name, epoch)
	}
	return fmt.Sprintf(" controlType: %s(%d)", name, id)
}

// javaString decodes b as Java's new String(b, UTF_8) does for
// DumpLogSegments: each byte that starts no valid sequence becomes U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			s.WriteRune(utf8.RuneError)
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}

// dumpIndex prints an offset index or time index. As Kafka, it takes the
// entries as the file length allows (rounded down) and stops at the first
// entry after the first whose offset is the base offset: the start of the
// zero-filled, preallocated tail.
func (d *logDumper) dumpIndex(path string, entryBytes int, print func(io.Writer, []byte, int64)) error {
	base, err := baseOffsetOf(path)
	if err != nil {
		return err
	}
	data, err := readFileLimited(path, maxIndexFileBytes)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "Dumping %s\n", path)
	for i := 0; i+entryBytes <= len(data); i += entryBytes {
		entry := data[i : i+entryBytes]
		if i > 0 && indexEntryOffset(entry, base) == base {
			break
		}
		print(d.w, entry, base)
	}
	return nil
}

// indexEntryOffset is the absolute offset an index entry names: the
// relative offset is the first 4 bytes of an offset index entry and the
// last 4 of a time index entry.
func indexEntryOffset(entry []byte, base int64) int64 {
	rel := entry[len(entry)-4:]
	if len(entry) == offsetIndexEntryBytes {
		rel = entry[:4]
	}
	return base + int64(int32(binary.BigEndian.Uint32(rel)))
}

func printOffsetIndexEntry(w io.Writer, entry []byte, base int64) {
	fmt.Fprintf(w, "offset: %d position: %d\n", indexEntryOffset(entry, base), int32(binary.BigEndian.Uint32(entry[4:])))
}

func printTimeIndexEntry(w io.Writer, entry []byte, base int64) {
	fmt.Fprintf(w, "timestamp: %d offset: %d\n", int64(binary.BigEndian.Uint64(entry)), indexEntryOffset(entry, base))
}

func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cli: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cli: %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrUsage, path, limit)
	}
	return data, nil
}
