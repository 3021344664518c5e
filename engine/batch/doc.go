// Package batch reads, checks and edits Kafka RecordBatch v2 bytes: the unit
// of the wire protocol and of wren's segment files, which hold batches
// exactly as producers sent them. It is pure: no files, no goroutines, no
// clock.
//
// # Layout
//
// A batch is a 61-byte big-endian header (see the *Offset constants) and a
// records section, compressed as one blob when the attributes name a
// codec. batchLength counts the bytes after itself; the CRC-32C
// (Castagnoli) covers the bytes from attributes to the end. baseOffset and
// partitionLeaderEpoch lie outside the CRC, which is what lets a leader
// assign offsets and stamp its epoch in place (SetBaseOffset,
// SetPartitionLeaderEpoch) without touching the records. LogAppendTime
// changes covered bytes, so SetLogAppendTime recomputes the CRC, after
// checking the old one so that corruption is never laundered.
//
// # Entry points
//
//   - Scan: cheap per-batch check over segment bytes (framing and CRC); tells
//     an incomplete tail (ErrIncomplete: torn write, or read more) from
//     corruption. Used by recovery and reads.
//   - Validate / ValidateSummary: the full check of one batch from outside
//     (Produce on the leader, a follower's fetch): framing, CRC, codec,
//     the origin's rules, decompression under a cap, every record.
//   - Records: the same check, then each record, for readers and tests.
//   - Compress / Decompress, Builder: the producer side.
//
// # Invariants
//
//   - Nothing from outside is trusted before it is bounds-checked: every
//     length and count is compared with the bytes that remain before use,
//     and records are never materialised by Validate, so a batch claiming
//     2^31 records costs nothing.
//   - Decompressed size is capped (Limits.MaxDecompressedBytes, default
//     DefaultMaxDecompressedBytes) and the cap is enforced while
//     decompressing, for every codec: snappy's declared lengths are summed
//     before decoding, gzip and lz4 are read through a bounded reader, zstd
//     through a decoder whose memory limit is the cap. A bomb fails with
//     ErrTooLarge holding about the cap in memory (zstd streams: about 2.25
//     times, as the decoder grows its buffer by append), never what it
//     expands to. A zstd frame whose window exceeds the cap is refused too.
//   - Validate allocates nothing for an uncompressed batch, and only a
//     pooled buffer for a compressed one.
//   - Records sees records only of a batch that passed validation.
//
// # Rules by origin
//
// AppendOriginClient follows Kafka's LogValidator for producer batches:
// RecordCount > 0 and equal to LastOffsetDelta+1, no control batch, a
// sequence with every producer id, no LogAppendTime. wren is stricter in one
// place: each record's offset delta must equal its index. Kafka tolerates
// other deltas by re-compressing the batch (compressed) or ignoring them
// (uncompressed); wren never re-encodes, and assigns offsets by rewriting
// baseOffset only, so it rejects such a batch with INVALID_RECORD. The
// clients we know of (Java, librdkafka, franz-go, kafka-python, sarama)
// write delta == index; franz-go's producer is checked in the tests. AppendOriginReplication accepts what compaction
// leaves: fewer records than LastOffsetDelta+1 (zero included) with
// increasing deltas, and control batches.
//
// Varints longer than Kafka's maximum (5 bytes, 10 for varlongs) or with
// bits beyond 32/64 are rejected, where Java would drop the extra bits.
//
// # Errors and Kafka error codes
//
//	ErrCorrupt, ErrCRC        CORRUPT_MESSAGE (2)
//	ErrUnsupportedMagic       INVALID_RECORD (87) on Produce, as Kafka 4 does
//	                          after KIP-896; corrupt in a segment
//	ErrUnknownCodec           UNSUPPORTED_COMPRESSION_TYPE (76)
//	ErrTooLarge               MESSAGE_TOO_LARGE (10)
//	ErrInvalidRecord          INVALID_RECORD (87)
//	ErrInvalidTimestamp       INVALID_TIMESTAMP (32)
//	ErrIncomplete             Scan only: a torn tail to truncate, or read more
//
// Every error of ParseHeader, Scan, Validate, Records, Decompress and the
// Set* editors is one of these sentinels wrapped with detail (%w), so
// errors.Is picks the code (FuzzValidate and FuzzDecompress check this).
//
// # Not done here
//
//   - Message formats v0 and v1 are refused, not converted.
//   - Producer-state checks (sequence continuity, epochs) belong to the
//     engine; this package only checks that a batch is self-consistent.
//   - The MaxTimestamp field is not checked against the records; Summary
//     reports the records' maximum so the caller can fix it as Kafka does.
package batch
