package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wren-broker/wren/internal/membudget"
)

// AppendOrigin says where a batch comes from, which decides the rules it
// must follow (Kafka's AppendOrigin).
type AppendOrigin int8

const (
	// AppendOriginClient is a producer's batch arriving at the leader. It is
	// the zero value, so a Limits left empty applies the strict rules:
	// at least one record, RecordCount == LastOffsetDelta+1, offset deltas
	// 0, 1, 2, ..., no control batch, a sequence whenever there is a
	// producer id, and CreateTime.
	AppendOriginClient AppendOrigin = iota
	// AppendOriginReplication is a batch already in some log: fetched by a
	// follower, read back during recovery or by a reader. Compaction leaves
	// such batches with fewer records than LastOffsetDelta+1 (even none, to
	// keep a producer's last sequence), so offset deltas need only increase
	// and stay within [0, LastOffsetDelta], and control batches are fine.
	AppendOriginReplication
)

func (o AppendOrigin) String() string {
	if o == AppendOriginReplication {
		return "replication"
	}
	return "client"
}

// Limits is what Validate and Records accept.
type Limits struct {
	// MaxDecompressedBytes caps the records section after decompression;
	// zero means DefaultMaxDecompressedBytes. Past it: ErrTooLarge. zstd
	// frames whose window is above the cap are refused as well, so keep it
	// at 8 MiB or more: the window of every zstd level up to 19.
	MaxDecompressedBytes int
	// Origin selects the rules; see AppendOrigin.
	Origin AppendOrigin
	// Budget, when not nil, bounds the decompression buffers of all
	// batches being validated at once, across connections and partitions
	// (max.decompressed.inflight.bytes): a validation waits for its share
	// before decompressing. nil: unbounded.
	Budget *membudget.Budget
	// CheckTimestamps bounds every CreateTime record timestamp to
	// [MinTimestampMs, MaxTimestampMs], except NoTimestamp (-1), as Kafka
	// does with message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms. The caller reads the clock and sets
	// the window; it is off for LogAppendTime topics.
	CheckTimestamps bool
	MinTimestampMs  int64
	MaxTimestampMs  int64
}

// Summary is what a full validation learns about a batch.
type Summary struct {
	Header
	// MaxRecordTimestamp is the largest record timestamp, or NoTimestamp for
	// a batch without records. For CreateTime batches Kafka trusts this, not
	// the MaxTimestamp field, and rewrites the field when they differ
	// (SetMaxTimestamp does that).
	MaxRecordTimestamp int64
	// UncompressedBytes is the size of the records section after
	// decompression.
	UncompressedBytes int
}

// Record is one record of a batch, as Records yields it. Key, Value and
// header values alias the batch or a decompression buffer: they are valid
// only until the callback returns. nil means null; empty is non-nil.
type Record struct {
	Offset      int64 // BaseOffset + OffsetDelta
	OffsetDelta int32
	// Timestamp is BaseTimestamp + the record's delta, or MaxTimestamp for
	// LogAppendTime batches.
	Timestamp  int64
	Attributes int8
	Key        []byte
	Value      []byte
	Headers    []RecordHeader
}

// RecordHeader is one record header. Kafka's header keys are non-null
// strings; values may be null.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Validate checks that b is exactly one well-formed batch: magic 2, a
// batchLength that matches len(b), the CRC-32C, a known codec, the rules of
// lim.Origin, a records section that decompresses within the cap, and every
// record well-formed, with the declared count and no bytes left over.
// It allocates nothing for uncompressed batches.
func Validate(b []byte, lim Limits) (Header, error) {
	s, err := ValidateSummary(b, lim)
	return s.Header, err
}

// ValidateSummary is Validate that also reports what the record walk found.
func ValidateSummary(b []byte, lim Limits) (Summary, error) {
	h, err := checkHeader(b, &lim)
	if err != nil {
		return Summary{}, err
	}
	recs, buf, err := records(b, h, &lim)
	if err != nil {
		return Summary{}, err
	}
	defer buf.release()
	maxTs, err := walk(&h, recs, &lim, nil)
	if err != nil {
		return Summary{}, err
	}
	return Summary{Header: h, MaxRecordTimestamp: maxTs, UncompressedBytes: len(recs)}, nil
}

// Records validates b as Validate does and then calls fn for each record in
// order. fn sees records only of a batch that passed validation. An error
// from fn stops the walk and is returned as is.
func Records(b []byte, lim Limits, fn func(Record) error) error {
	h, err := checkHeader(b, &lim)
	if err != nil {
		return err
	}
	recs, buf, err := records(b, h, &lim)
	if err != nil {
		return err
	}
	defer buf.release()
	if _, err := walk(&h, recs, &lim, nil); err != nil {
		return err
	}
	var headers []RecordHeader
	_, err = walk(&h, recs, &lim, func(raw rawRecord, r Record) error {
		headers = decodeHeaders(headers[:0], raw.headers, raw.headerCount)
		r.Headers = headers
		return fn(r)
	})
	return err
}

// checkHeader makes every check that needs no record: framing, CRC, codec
// and the header rules of the origin.
func checkHeader(b []byte, lim *Limits) (Header, error) {
	h, err := ParseHeader(b)
	if errors.Is(err, ErrIncomplete) {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrCorrupt, len(b), RecordBatchOverhead)
	}
	if err != nil {
		return Header{}, err
	}
	if h.Size() != len(b) {
		return Header{}, fmt.Errorf("%w: batchLength %d means %d bytes, have %d", ErrCorrupt, h.BatchLength, h.Size(), len(b))
	}
	if err := checkCRC(b); err != nil {
		return Header{}, err
	}
	if ct := h.CompressionType(); !ct.Known() {
		return Header{}, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(ct))
	}
	if h.RecordCount < 0 {
		return Header{}, fmt.Errorf("%w: record count %d", ErrInvalidRecord, h.RecordCount)
	}
	if h.LastOffsetDelta < 0 {
		return Header{}, fmt.Errorf("%w: lastOffsetDelta %d", ErrInvalidRecord, h.LastOffsetDelta)
	}
	span := int64(h.LastOffsetDelta) + 1
	switch lim.Origin {
	case AppendOriginClient:
		switch {
		case h.IsControl():
			return Header{}, fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
		case h.RecordCount == 0:
			return Header{}, fmt.Errorf("%w: batch without records", ErrInvalidRecord)
		case int64(h.RecordCount) != span:
			return Header{}, fmt.Errorf("%w: record count %d, lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
		case h.HasProducerID() && h.BaseSequence < 0:
			return Header{}, fmt.Errorf("%w: sequence %d with producer id %d", ErrInvalidRecord, h.BaseSequence, h.ProducerID)
		case h.TimestampType() == LogAppendTime:
			return Header{}, fmt.Errorf("%w: producers may not set LogAppendTime", ErrInvalidTimestamp)
		}
	default:
		if int64(h.RecordCount) > span {
			return Header{}, fmt.Errorf("%w: record count %d, lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
		}
	}
	return h, nil
}

// records returns the uncompressed records section, and what holds it
// (nothing when it aliases b) for release.
func records(b []byte, h Header, lim *Limits) ([]byte, recordsBuffer, error) {
	recs := b[RecordsOffset:]
	ct := h.CompressionType()
	if ct == CompressionNone {
		return recs, recordsBuffer{}, nil
	}
	rb := recordsBuffer{buf: getBuffer(), budget: lim.Budget}
	limit := decompressLimit(lim.MaxDecompressedBytes)
	plan := planDecompression(ct, recs, limit)
	if plan.firstLimit > 0 {
		// A first try under what the batch claims, holding only that much
		// of the budget; a batch that decompresses past its claim is tried
		// again under the full cap.
		rb.reserve(plan.firstReserve)
		out, err := decompress(*rb.buf, ct, recs, plan.firstLimit)
		if err == nil {
			*rb.buf = out
			return out, rb, nil
		}
		if !errors.Is(err, ErrTooLarge) || plan.firstLimit >= limit {
			rb.release()
			return nil, recordsBuffer{}, err
		}
		rb.unreserve()
	}
	rb.reserve(plan.fullReserve)
	out, err := decompress(*rb.buf, ct, recs, limit)
	if err != nil {
		rb.release()
		return nil, recordsBuffer{}, err
	}
	*rb.buf = out
	return out, rb, nil
}

// recordsBuffer is a pooled decompression buffer and the share of the
// decompression budget it holds.
type recordsBuffer struct {
	buf      *[]byte
	budget   *membudget.Budget
	reserved int64
}

// reserve waits for n bytes of the budget. Holders release theirs as soon
// as a batch is walked, with no other wait in between, so the wait ends.
func (r *recordsBuffer) reserve(n int64) {
	if r.budget == nil || n <= 0 {
		return
	}
	r.budget.Acquire(context.Background(), n) // never fails: Background
	r.reserved = n
}

func (r *recordsBuffer) unreserve() {
	if r.reserved > 0 {
		r.budget.Release(r.reserved)
		r.reserved = 0
	}
}

func (r *recordsBuffer) release() {
	if r.buf != nil {
		putBuffer(r.buf)
		r.buf = nil
	}
	r.unreserve()
}

// rawRecord is a parsed record before header decoding.
type rawRecord struct {
	size           int // encoded size, length varint included
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headerCount    int
	headers        []byte // the encoded headers
}

// walk parses each record of recs, checks it against h and lim, and calls
// yield (when not nil). It returns the largest record timestamp.
//
// yield takes its arguments by value so that nothing escapes: the
// validation walk (yield nil) must not allocate.
func walk(h *Header, recs []byte, lim *Limits, yield func(rawRecord, Record) error) (int64, error) {
	maxTs := NoTimestamp
	logAppendTime := h.TimestampType() == LogAppendTime
	prev := int64(-1)
	pos := 0
	var raw rawRecord
	for i := int32(0); i < h.RecordCount; i++ {
		if pos == len(recs) {
			return 0, fmt.Errorf("%w: records end after %d of %d records", ErrInvalidRecord, i, h.RecordCount)
		}
		if err := parseRecord(recs[pos:], &raw); err != nil {
			return 0, fmt.Errorf("%w: record %d at byte %d: %v", ErrInvalidRecord, i, pos, err)
		}
		delta := int64(raw.offsetDelta)
		if lim.Origin == AppendOriginClient {
			if delta != int64(i) {
				return 0, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, delta)
			}
		} else if delta <= prev || delta > int64(h.LastOffsetDelta) {
			return 0, fmt.Errorf("%w: record %d has offset delta %d after %d, lastOffsetDelta %d", ErrInvalidRecord, i, delta, prev, h.LastOffsetDelta)
		}
		prev = delta
		// Wrapping addition, as in Kafka.
		ts := h.BaseTimestamp + raw.timestampDelta
		if logAppendTime {
			ts = h.MaxTimestamp
		} else if lim.CheckTimestamps && ts != NoTimestamp && (ts < lim.MinTimestampMs || ts > lim.MaxTimestampMs) {
			return 0, fmt.Errorf("%w: record %d has timestamp %d outside [%d, %d]", ErrInvalidTimestamp, i, ts, lim.MinTimestampMs, lim.MaxTimestampMs)
		}
		maxTs = max(maxTs, ts)
		if yield != nil {
			r := Record{
				Offset:      h.BaseOffset + delta,
				OffsetDelta: raw.offsetDelta,
				Timestamp:   ts,
				Attributes:  raw.attributes,
				Key:         raw.key,
				Value:       raw.value,
			}
			if err := yield(raw, r); err != nil {
				return 0, err
			}
		}
		pos += raw.size
	}
	if pos != len(recs) {
		return 0, fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(recs)-pos, h.RecordCount)
	}
	return maxTs, nil
}

// parseRecord decodes the record at the start of b into r. Every length
// is checked against the bytes that remain before it is used.
func parseRecord(b []byte, r *rawRecord) error {
	length, n, ok := readVarint(b)
	if !ok {
		return errors.New("malformed length")
	}
	if length < 0 || int(length) > len(b)-n {
		return fmt.Errorf("length %d, %d bytes left", length, len(b)-n)
	}
	r.size = n + int(length)
	body := b[n:r.size]
	if len(body) == 0 {
		return errors.New("empty record")
	}
	r.attributes = int8(body[0])
	p := 1
	if r.timestampDelta, n, ok = readVarlong(body[p:]); !ok {
		return errors.New("malformed timestamp delta")
	}
	p += n
	if r.offsetDelta, n, ok = readVarint(body[p:]); !ok {
		return errors.New("malformed offset delta")
	}
	p += n
	var err error
	if r.key, p, err = readBytes(body, p, "key"); err != nil {
		return err
	}
	if r.value, p, err = readBytes(body, p, "value"); err != nil {
		return err
	}
	count, n, ok := readVarint(body[p:])
	if !ok {
		return errors.New("malformed header count")
	}
	p += n
	// A header takes at least two bytes (two one-byte lengths).
	if count < 0 || int(count) > (len(body)-p)/2 {
		return fmt.Errorf("header count %d, %d bytes left", count, len(body)-p)
	}
	start := p
	for j := int32(0); j < count; j++ {
		kl, n, ok := readVarint(body[p:])
		if !ok {
			return fmt.Errorf("header %d: malformed key length", j)
		}
		p += n
		if kl < 0 || int(kl) > len(body)-p {
			return fmt.Errorf("header %d: key length %d, %d bytes left", j, kl, len(body)-p)
		}
		p += int(kl)
		if _, p, err = readBytes(body, p, "header value"); err != nil {
			return fmt.Errorf("header %d: %w", j, err)
		}
	}
	r.headerCount = int(count)
	r.headers = body[start:p]
	if p != len(body) {
		return fmt.Errorf("length %d, fields end at %d", length, p)
	}
	return nil
}

// readBytes reads a varint-length-prefixed nullable byte string at body[p:].
func readBytes(body []byte, p int, what string) ([]byte, int, error) {
	l, n, ok := readVarint(body[p:])
	if !ok {
		return nil, 0, fmt.Errorf("malformed %s length", what)
	}
	p += n
	if l == -1 {
		return nil, p, nil
	}
	if l < 0 || int(l) > len(body)-p {
		return nil, 0, fmt.Errorf("%s length %d, %d bytes left", what, l, len(body)-p)
	}
	return body[p : p+int(l) : p+int(l)], p + int(l), nil
}

// decodeHeaders decodes headers parseRecord already checked.
func decodeHeaders(dst []RecordHeader, b []byte, count int) []RecordHeader {
	p := 0
	for range count {
		kl, n, _ := readVarint(b[p:])
		p += n
		key := string(b[p : p+int(kl)])
		p += int(kl)
		v, next, err := readBytes(b, p, "header value")
		if err != nil {
			panic(fmt.Sprintf("batch: header at byte %d failed after validation: %v", p, err))
		}
		p = next
		dst = append(dst, RecordHeader{Key: key, Value: v})
	}
	return dst
}

// Decompression buffers are pooled; big ones are dropped rather than kept,
// so one large batch does not pin its buffer on a small host.
const pooledBufferMax = 1 << 20

var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if b == nil || cap(*b) > pooledBufferMax {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}
