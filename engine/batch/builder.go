package batch

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Builder assembles a RecordBatch v2 from records, as a producer does
// (Kafka's MemoryRecordsBuilder): offset deltas 0, 1, 2, ..., baseTimestamp
// from the first record, maxTimestamp the largest, the records compressed as
// one blob, then the CRC. Tests and wren's own clients use it; the broker
// never re-encodes a batch it stores.
//
// The exported fields are the header's; NewBuilder sets Kafka's "absent"
// values for a plain, non-idempotent producer.
type Builder struct {
	CompressionType CompressionType
	// SnappyXerial writes snappy in xerial framing, as the Java client does,
	// instead of one raw block, as librdkafka does.
	SnappyXerial         bool
	BaseOffset           int64
	PartitionLeaderEpoch int32
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	IsTransactional      bool
	IsControl            bool

	records []Record
	raw     []byte // scratch: the uncompressed records section
	section []byte // scratch: the compressed records section
}

// NewBuilder returns a Builder for codec ct with no producer id, epoch,
// sequence or leader epoch.
func NewBuilder(ct CompressionType) *Builder {
	return &Builder{
		CompressionType:      ct,
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
	}
}

// Append adds a record. Only Timestamp, Attributes, Key, Value and Headers
// are used; the offset delta is the record's position. The slices are
// referenced, not copied, until the next Build.
func (b *Builder) Append(r Record) { b.records = append(b.records, r) }

// Len is the number of records appended since the last Reset.
func (b *Builder) Len() int { return len(b.records) }

// Reset drops the records and keeps the header settings.
func (b *Builder) Reset() {
	clear(b.records)
	b.records = b.records[:0]
}

// Build returns the batch's bytes.
func (b *Builder) Build() ([]byte, error) { return b.AppendTo(nil) }

// AppendTo appends the batch to dst. Records stay in the Builder.
func (b *Builder) AppendTo(dst []byte) ([]byte, error) {
	if len(b.records) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d records", ErrTooLarge, len(b.records))
	}
	baseTs, maxTs := NoTimestamp, NoTimestamp
	if len(b.records) > 0 {
		baseTs = b.records[0].Timestamp
		maxTs = baseTs
	}
	raw := b.raw[:0]
	var err error
	for i := range b.records {
		r := &b.records[i]
		maxTs = max(maxTs, r.Timestamp)
		if raw, err = appendRecord(raw, r, int32(i), r.Timestamp-baseTs); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	b.raw = raw
	section := raw
	if b.CompressionType != CompressionNone {
		if section, err = appendCompressed(b.section[:0], b.CompressionType, raw, b.SnappyXerial); err != nil {
			return nil, err
		}
		b.section = section
	}
	if len(section) > maxBatchLength-minBatchLength {
		return nil, fmt.Errorf("%w: records section of %d bytes", ErrTooLarge, len(section))
	}
	attrs := int16(b.CompressionType) & compressionCodecMask
	if b.IsTransactional {
		attrs |= transactionalFlagMask
	}
	if b.IsControl {
		attrs |= controlFlagMask
	}
	h := Header{
		BaseOffset:           b.BaseOffset,
		PartitionLeaderEpoch: b.PartitionLeaderEpoch,
		Magic:                CurrentMagic,
		Attributes:           attrs,
		LastOffsetDelta:      int32(max(len(b.records)-1, 0)),
		BaseTimestamp:        baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		BaseSequence:         b.BaseSequence,
		RecordCount:          int32(len(b.records)),
	}
	return appendBatch(dst, h, section), nil
}

// appendBatch appends a batch made of h and the records section, filling
// in BatchLength and CRC; every other field is written as given.
// Invariant: len(section) <= maxBatchLength-minBatchLength.
func appendBatch(dst []byte, h Header, section []byte) []byte {
	if len(section) > maxBatchLength-minBatchLength {
		panic(fmt.Sprintf("batch: records section of %d bytes is over %d", len(section), maxBatchLength-minBatchLength))
	}
	start := len(dst)
	h.BatchLength = int32(minBatchLength + len(section))
	h.CRC = 0
	dst = appendHeader(dst, &h)
	dst = append(dst, section...)
	binary.BigEndian.PutUint32(dst[start+CRCOffset:], computeCRC(dst[start:]))
	return dst
}

// appendRecord encodes one record. Its length prefix is computed first, so
// the record is written once.
func appendRecord(dst []byte, r *Record, offsetDelta int32, timestampDelta int64) ([]byte, error) {
	if len(r.Headers) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d headers", ErrTooLarge, len(r.Headers))
	}
	size := int64(1 + varlongSize(timestampDelta) + varintSize(offsetDelta))
	size += bytesSize(r.Key) + bytesSize(r.Value) + int64(varintSize(int32(len(r.Headers))))
	for _, hd := range r.Headers {
		size += int64(varintSize(int32(min(len(hd.Key), math.MaxInt32)))) + int64(len(hd.Key)) + bytesSize(hd.Value)
	}
	if size > math.MaxInt32 || len(r.Key) > math.MaxInt32 || len(r.Value) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: record of %d bytes", ErrTooLarge, size)
	}
	dst = appendVarint(dst, int32(size))
	dst = append(dst, byte(r.Attributes))
	dst = appendVarlong(dst, timestampDelta)
	dst = appendVarint(dst, offsetDelta)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for _, hd := range r.Headers {
		dst = appendVarint(dst, int32(len(hd.Key)))
		dst = append(dst, hd.Key...)
		dst = appendBytes(dst, hd.Value)
	}
	return dst, nil
}

// bytesSize is the encoded size of a nullable byte string.
func bytesSize(b []byte) int64 {
	if b == nil {
		return 1
	}
	return int64(varintSize(int32(min(len(b), math.MaxInt32)))) + int64(len(b))
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
