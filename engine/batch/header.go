package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Byte positions of the RecordBatch v2 header fields, with Kafka's names
// (DefaultRecordBatch.*_OFFSET). All fields are big-endian.
const (
	BaseOffsetOffset           = 0  // Part of the on-disk format; never change.
	LengthOffset               = 8  // Part of the on-disk format; never change.
	PartitionLeaderEpochOffset = 12 // Part of the on-disk format; never change.
	MagicOffset                = 16 // Part of the on-disk format; never change.
	CRCOffset                  = 17 // Part of the on-disk format; never change.
	AttributesOffset           = 21 // Part of the on-disk format; never change.
	LastOffsetDeltaOffset      = 23 // Part of the on-disk format; never change.
	BaseTimestampOffset        = 27 // Part of the on-disk format; never change.
	MaxTimestampOffset         = 35 // Part of the on-disk format; never change.
	ProducerIDOffset           = 43 // Part of the on-disk format; never change.
	ProducerEpochOffset        = 51 // Part of the on-disk format; never change.
	BaseSequenceOffset         = 53 // Part of the on-disk format; never change.
	RecordsCountOffset         = 57 // Part of the on-disk format; never change.
	RecordsOffset              = 61 // Part of the on-disk format; never change.

	// LogOverhead is baseOffset + batchLength: the bytes not counted in
	// batchLength. Part of the on-disk format; never change.
	LogOverhead = 12
	// RecordBatchOverhead is the size of the header, i.e. of a batch with no
	// records. Part of the on-disk format; never change.
	RecordBatchOverhead = RecordsOffset
	// CurrentMagic is the only message format wren reads or writes.
	// Part of the on-disk format; never change.
	CurrentMagic = 2

	// minBatchLength is the smallest legal batchLength: the header after
	// the batchLength field.
	minBatchLength = RecordBatchOverhead - LogOverhead
	// maxBatchLength keeps Size() inside int32, so sizes fit an int on
	// 32-bit ARM too.
	maxBatchLength = math.MaxInt32 - LogOverhead
)

// Attribute bits (DefaultRecordBatch). Part of the on-disk format; never change.
const (
	compressionCodecMask  = 0x07
	timestampTypeMask     = 0x08
	transactionalFlagMask = 0x10
	controlFlagMask       = 0x20
	deleteHorizonFlagMask = 0x40
)

// Kafka's "absent" values (RecordBatch.NO_*).
const (
	NoProducerID           int64 = -1
	NoProducerEpoch        int16 = -1
	NoSequence             int32 = -1
	NoPartitionLeaderEpoch int32 = -1
	NoTimestamp            int64 = -1
)

// CompressionType is the codec id in bits 0-2 of the attributes.
type CompressionType int8

// Kafka's compression type ids. Part of the on-disk format; never change.
const (
	CompressionNone   CompressionType = 0
	CompressionGzip   CompressionType = 1
	CompressionSnappy CompressionType = 2
	CompressionLZ4    CompressionType = 3
	CompressionZstd   CompressionType = 4
)

// String returns Kafka's name for the codec (the compression.type value).
func (c CompressionType) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// Known reports whether c is one of the five codecs Kafka defines.
func (c CompressionType) Known() bool {
	return c >= CompressionNone && c <= CompressionZstd
}

// ParseCompressionType maps Kafka's compression.type names to ids.
func ParseCompressionType(name string) (CompressionType, error) {
	for c := CompressionNone; c <= CompressionZstd; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownCodec, name)
}

// TimestampType is bit 3 of the attributes.
type TimestampType int8

// Part of the on-disk format; never change.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Header is the fixed 61-byte part of a RecordBatch v2, decoded.
type Header struct {
	BaseOffset int64
	// BatchLength counts the bytes after this field: Size() - LogOverhead.
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	// CRC is CRC-32C over the bytes from Attributes to the end of the batch.
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// CompressionType is the codec of the records section.
func (h Header) CompressionType() CompressionType {
	return CompressionType(h.Attributes & compressionCodecMask)
}

// TimestampType says whether record timestamps are the producer's
// (CreateTime) or MaxTimestamp is every record's timestamp (LogAppendTime).
func (h Header) TimestampType() TimestampType {
	if h.Attributes&timestampTypeMask != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports the transactional bit.
func (h Header) IsTransactional() bool { return h.Attributes&transactionalFlagMask != 0 }

// IsControl reports a control batch (transaction markers), which clients
// may not produce.
func (h Header) IsControl() bool { return h.Attributes&controlFlagMask != 0 }

// HasDeleteHorizonMs reports that the log cleaner stored a delete horizon in
// BaseTimestamp (KIP-534).
func (h Header) HasDeleteHorizonMs() bool { return h.Attributes&deleteHorizonFlagMask != 0 }

// DeleteHorizonMs is the cleaner's delete horizon, or NoTimestamp.
func (h Header) DeleteHorizonMs() int64 {
	if h.HasDeleteHorizonMs() {
		return h.BaseTimestamp
	}
	return NoTimestamp
}

// HasProducerID reports whether the batch comes from an idempotent or
// transactional producer.
func (h Header) HasProducerID() bool { return h.ProducerID > NoProducerID }

// LastOffset is the offset of the batch's last record (of the last record
// the batch had before compaction, which keeps LastOffsetDelta).
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows this batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the batch's total size in bytes, header included.
func (h Header) Size() int { return int(h.BatchLength) + LogOverhead }

// LastSequence is the sequence number of the last record. Sequences wrap
// from math.MaxInt32 to 0 (Kafka's DefaultRecordBatch.incrementSequence).
func (h Header) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds increment to a producer sequence, wrapping past
// math.MaxInt32 to 0 as Kafka does.
func IncrementSequence(sequence, increment int32) int32 {
	if sequence > math.MaxInt32-increment {
		return increment - (math.MaxInt32 - sequence) - 1
	}
	return sequence + increment
}

// ParseHeader decodes the header at the start of b. It checks only what the
// header alone can show: magic 2 and a batchLength in range. It does not
// look at the CRC or at b beyond the header; use Scan or Validate for that.
//
// Errors: ErrIncomplete when b is shorter than the header,
// ErrUnsupportedMagic, ErrCorrupt.
func ParseHeader(b []byte) (Header, error) {
	if len(b) > MagicOffset && b[MagicOffset] != CurrentMagic {
		return Header{}, fmt.Errorf("%w: %d", ErrUnsupportedMagic, int8(b[MagicOffset]))
	}
	if len(b) < RecordBatchOverhead {
		return Header{}, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrIncomplete, len(b), RecordBatchOverhead)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[BaseOffsetOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[LengthOffset:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[PartitionLeaderEpochOffset:])),
		Magic:                int8(b[MagicOffset]),
		CRC:                  binary.BigEndian.Uint32(b[CRCOffset:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[AttributesOffset:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[LastOffsetDeltaOffset:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[BaseTimestampOffset:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[MaxTimestampOffset:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[ProducerIDOffset:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[ProducerEpochOffset:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[BaseSequenceOffset:])),
		RecordCount:          int32(binary.BigEndian.Uint32(b[RecordsCountOffset:])),
	}
	if err := checkBatchLength(h.BatchLength); err != nil {
		return Header{}, err
	}
	return h, nil
}

func checkBatchLength(n int32) error {
	if n < minBatchLength {
		return fmt.Errorf("%w: batchLength %d is below the %d-byte minimum", ErrCorrupt, n, minBatchLength)
	}
	if n > maxBatchLength {
		return fmt.Errorf("%w: batchLength %d is over %d", ErrCorrupt, n, maxBatchLength)
	}
	return nil
}

// appendHeader encodes h. The caller fills in BatchLength and CRC
// consistently (assemble does).
func appendHeader(dst []byte, h *Header) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BatchLength))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = binary.BigEndian.AppendUint32(dst, h.CRC)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.RecordCount))
	return dst
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// computeCRC is the CRC-32C of a whole batch's covered bytes.
// Invariant: len(b) >= RecordBatchOverhead.
func computeCRC(b []byte) uint32 {
	return crc32.Checksum(b[AttributesOffset:], castagnoli)
}

func checkCRC(b []byte) error {
	stored := binary.BigEndian.Uint32(b[CRCOffset:])
	if computed := computeCRC(b); stored != computed {
		return fmt.Errorf("%w: stored %#08x, computed %#08x", ErrCRC, stored, computed)
	}
	return nil
}

// mustHeader panics unless b holds at least a header: the Set* editors are
// only ever given batches the caller already validated.
func mustHeader(b []byte, op string) {
	if len(b) < RecordBatchOverhead {
		panic(fmt.Sprintf("batch: %s on %d bytes, a batch has at least %d", op, len(b), RecordBatchOverhead))
	}
}

// SetBaseOffset rewrites baseOffset in place. baseOffset is outside the CRC,
// so the records and the CRC stay as they are: this is how the leader
// assigns offsets without re-encoding. b must be a validated batch.
func SetBaseOffset(b []byte, baseOffset int64) {
	mustHeader(b, "SetBaseOffset")
	binary.BigEndian.PutUint64(b[BaseOffsetOffset:], uint64(baseOffset))
}

// SetPartitionLeaderEpoch stamps the leader epoch in place; it is outside the
// CRC too. b must be a validated batch.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	mustHeader(b, "SetPartitionLeaderEpoch")
	binary.BigEndian.PutUint32(b[PartitionLeaderEpochOffset:], uint32(epoch))
}

// SetMaxTimestamp sets the timestamp type bit and maxTimestamp and
// recomputes the CRC, leaving the records untouched (Kafka's
// DefaultRecordBatch.setMaxTimestamp). When nothing changes it writes
// nothing. The old CRC is checked first so that a corrupt batch is never
// given a fresh, valid CRC.
func SetMaxTimestamp(b []byte, t TimestampType, maxTimestamp int64) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() != len(b) {
		return fmt.Errorf("%w: batchLength says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	if err := checkCRC(b); err != nil {
		return err
	}
	attrs := h.Attributes &^ timestampTypeMask
	if t == LogAppendTime {
		attrs |= timestampTypeMask
	}
	if attrs == h.Attributes && maxTimestamp == h.MaxTimestamp {
		return nil
	}
	binary.BigEndian.PutUint16(b[AttributesOffset:], uint16(attrs))
	binary.BigEndian.PutUint64(b[MaxTimestampOffset:], uint64(maxTimestamp))
	binary.BigEndian.PutUint32(b[CRCOffset:], computeCRC(b))
	return nil
}

// SetLogAppendTime marks the batch LogAppendTime with timestamp now, as a
// leader does for topics with message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, now int64) error {
	return SetMaxTimestamp(b, LogAppendTime, now)
}
