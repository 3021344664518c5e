package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/wren-broker/wren/engine/batch"
)

// The cleaner rewrites a batch it keeps only part of, as Kafka's
// MemoryRecords.filterTo does, and this is the one place the broker
// encodes records. engine/batch.Builder cannot do it: it numbers offset
// deltas 0, 1, 2... and takes the base timestamp from the first record,
// while a cleaned batch keeps every record's original offset delta, the
// batch's lastOffsetDelta (so the producer's last sequence survives), and,
// once it holds a tombstone, the delete horizon in baseTimestamp (KIP-534).

// deleteHorizonFlag is attribute bit 6: baseTimestamp holds the delete
// horizon (KIP-534). engine/batch reads it (Header.HasDeleteHorizonMs) but
// exports no constant. Part of the on-disk format; never change.
const deleteHorizonFlag = 0x40

// compressionCodecBits are the attribute bits of the codec. Part of the
// on-disk format; never change.
const compressionCodecBits = 0x07

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// batchRewriter re-encodes batches; it keeps its scratch buffers between
// batches.
type batchRewriter struct {
	raw []byte
}

// appendRetained appends to dst the batch src (validated, header h) with
// only the records whose keep flag is set, in Kafka's form for a cleaned
// batch: same baseOffset, lastOffsetDelta, partition leader epoch,
// producer id, epoch and base sequence, codec and flags; the kept records
// with their own offset deltas; baseTimestamp the delete horizon when
// deleteHorizonMs >= 0 (with the flag set), else the first kept record's
// timestamp; maxTimestamp the largest kept timestamp (under LogAppendTime,
// the batch's). keep has one flag per record, in order. It returns the new
// batch's header.
func (w *batchRewriter) appendRetained(dst, src []byte, h batch.Header, keep []bool, deleteHorizonMs int64, lim batch.Limits) ([]byte, batch.Header, error) {
	raw := w.raw[:0]
	i := 0
	kept := int32(0)
	baseTs := deleteHorizonMs
	maxTs := batch.NoTimestamp
	logAppendTime := h.TimestampType() == batch.LogAppendTime
	err := batch.Records(src, lim, func(r batch.Record) error {
		k := keep[i]
		i++
		if !k {
			return nil
		}
		if kept == 0 && deleteHorizonMs < 0 {
			baseTs = r.Timestamp
		}
		kept++
		maxTs = max(maxTs, r.Timestamp)
		var err error
		raw, err = appendRecordWithDelta(raw, &r, r.Timestamp-baseTs)
		return err
	})
	w.raw = raw
	if err != nil {
		return dst, batch.Header{}, err
	}
	if kept == 0 {
		panic(fmt.Sprintf("engine: rewriting batch at %d with no record kept", h.BaseOffset))
	}
	if logAppendTime {
		maxTs = h.MaxTimestamp
	}
	section := raw
	if ct := h.CompressionType(); ct != batch.CompressionNone {
		if section, err = batch.Compress(ct, raw); err != nil {
			return dst, batch.Header{}, fmt.Errorf("engine: recompressing batch at %d: %w", h.BaseOffset, err)
		}
	}
	attrs := h.Attributes &^ deleteHorizonFlag
	if deleteHorizonMs >= 0 {
		attrs |= deleteHorizonFlag
	}
	nh := h
	nh.Attributes = attrs
	nh.BaseTimestamp = baseTs
	nh.MaxTimestamp = maxTs
	nh.RecordCount = kept
	start := len(dst)
	dst, nh, err = appendBatchBytes(dst, nh, section)
	if err != nil {
		return dst, batch.Header{}, err
	}
	// Check the bytes right after making them: a wrong batch here would be
	// served to every consumer of the partition.
	if _, verr := batch.Validate(dst[start:], batch.Limits{MaxDecompressedBytes: maxDecompressedRead, Origin: batch.AppendOriginReplication}); verr != nil {
		panic(fmt.Sprintf("engine: cleaner rewrote batch at %d into an invalid batch: %v", h.BaseOffset, verr))
	}
	return dst, nh, nil
}

// appendEmptyBatch appends the header of src with no records (Kafka's
// DefaultRecordBatch.writeEmptyHeader): what the cleaner keeps of a batch
// whose records all go but whose offsets must stay spanned (a producer's
// last batch, which carries its last sequence and epoch). The codec is
// none, baseTimestamp NoTimestamp, and the delete horizon flag is cleared.
func appendEmptyBatch(dst []byte, h batch.Header) []byte {
	nh := h
	nh.Attributes = h.Attributes &^ (deleteHorizonFlag | compressionCodecBits)
	nh.BaseTimestamp = batch.NoTimestamp
	nh.RecordCount = 0
	dst, _, err := appendBatchBytes(dst, nh, nil)
	if err != nil {
		panic(fmt.Sprintf("engine: empty batch at %d: %v", h.BaseOffset, err))
	}
	return dst
}

// appendBatchBytes writes header h (BatchLength and CRC filled in) and the
// records section.
func appendBatchBytes(dst []byte, h batch.Header, section []byte) ([]byte, batch.Header, error) {
	length := int64(batch.RecordBatchOverhead-batch.LogOverhead) + int64(len(section))
	if length > math.MaxInt32-batch.LogOverhead {
		return dst, batch.Header{}, fmt.Errorf("%w: rewritten batch at %d would be %d bytes", ErrRecordTooLarge, h.BaseOffset, length)
	}
	h.BatchLength = int32(length)
	h.Magic = batch.CurrentMagic
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BatchLength))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, below
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.RecordCount))
	dst = append(dst, section...)
	h.CRC = crc32.Checksum(dst[start+batch.AttributesOffset:], crc32c)
	binary.BigEndian.PutUint32(dst[start+batch.CRCOffset:], h.CRC)
	return dst, h, nil
}

// appendRecordWithDelta encodes one record (Kafka's DefaultRecord) with
// its own offset delta and the given timestamp delta. Varints are zigzag,
// as binary.AppendVarint writes them; for values in int32 range the
// encoding equals Kafka's 32-bit varint.
func appendRecordWithDelta(dst []byte, r *batch.Record, timestampDelta int64) ([]byte, error) {
	size := int64(1 + varintLen(timestampDelta) + varintLen(int64(r.OffsetDelta)))
	size += nullableBytesLen(r.Key) + nullableBytesLen(r.Value) + int64(varintLen(int64(len(r.Headers))))
	for _, hd := range r.Headers {
		size += int64(varintLen(int64(len(hd.Key)))+len(hd.Key)) + nullableBytesLen(hd.Value)
	}
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: record at %d would be %d bytes", ErrRecordTooLarge, r.Offset, size)
	}
	dst = binary.AppendVarint(dst, size)
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, timestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullableBytes(dst, r.Key)
	dst = appendNullableBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, hd := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(hd.Key)))
		dst = append(dst, hd.Key...)
		dst = appendNullableBytes(dst, hd.Value)
	}
	return dst, nil
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

func nullableBytesLen(b []byte) int64 {
	if b == nil {
		return 1
	}
	return int64(varintLen(int64(len(b))) + len(b))
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
