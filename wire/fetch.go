package wire

import "encoding/binary"

// FetchPartition is one partition of a Fetch response as a handler
// builds it: the kmsg fields that matter and the record data as a file
// range (or no records).
type FetchPartition struct {
	Partition        int32
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// AbortedTransactions are the aborted transactions of the records
	// (read_committed); nil for none.
	AbortedTransactions []AbortedTransaction
	Records             FileSlice
}

// AbortedTransaction is one entry of a Fetch response's aborted
// transactions: a read_committed consumer drops the producer's records
// from FirstOffset to its ABORT marker.
type AbortedTransaction struct {
	ProducerID  int64
	FirstOffset int64
}

// FetchTopic is one topic of a Fetch response.
type FetchTopic struct {
	Topic      string
	Partitions []FetchPartition
}

// EncodeFetchResponse writes a Fetch response body (v4-12) as chunks: the
// record data of every partition is a file chunk that the writer sends
// with sendfile; everything else is encoded here, field for field as
// kmsg's FetchResponse.AppendTo does (TestFetchEncodingMatchesKmsg checks
// it for every version).
//
// Partitions without records get an empty, non-null record set:
// librdkafka needs it.
func EncodeFetchResponse(version int16, throttleMs int32, errorCode int16, sessionID int32, topics []FetchTopic) []Chunk {
	e := chunkEncoder{flexible: version >= 12}
	if version >= 1 {
		e.int32(throttleMs)
	}
	if version >= 7 {
		e.int16(errorCode)
		e.int32(sessionID)
	}
	e.arrayLen(len(topics))
	for _, t := range topics {
		e.string(t.Topic)
		e.arrayLen(len(t.Partitions))
		for _, p := range t.Partitions {
			e.int32(p.Partition)
			e.int16(p.ErrorCode)
			e.int64(p.HighWatermark)
			e.int64(p.LastStableOffset)
			if version >= 5 {
				e.int64(p.LogStartOffset)
			}
			// AbortedTransactions: an empty array when there are none, as
			// Kafka sends for read_uncommitted too.
			e.arrayLen(len(p.AbortedTransactions))
			for _, a := range p.AbortedTransactions {
				e.int64(a.ProducerID)
				e.int64(a.FirstOffset)
				e.tags()
			}
			if version >= 11 {
				e.int32(-1) // PreferredReadReplica
			}
			e.file(p.Records)
			e.tags()
		}
		e.tags()
	}
	e.tags()
	return e.finish()
}

// chunkEncoder appends Kafka primitives, flexible or not, into byte
// chunks, and splices file chunks in.
type chunkEncoder struct {
	flexible bool
	buf      []byte
	chunks   []Chunk
}

func (e *chunkEncoder) int16(v int16) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(v)) }
func (e *chunkEncoder) int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *chunkEncoder) int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }
func (e *chunkEncoder) uvarint(v uint64) {
	e.buf = binary.AppendUvarint(e.buf, v)
}

func (e *chunkEncoder) arrayLen(n int) {
	if e.flexible {
		e.uvarint(uint64(n) + 1)
	} else {
		e.int32(int32(n))
	}
}

func (e *chunkEncoder) string(s string) {
	if e.flexible {
		e.uvarint(uint64(len(s)) + 1)
	} else {
		e.int16(int16(len(s)))
	}
	e.buf = append(e.buf, s...)
}

// file writes a bytes field whose content is a file range.
func (e *chunkEncoder) file(f FileSlice) {
	if e.flexible {
		e.uvarint(uint64(f.Size) + 1)
	} else {
		e.int32(int32(f.Size))
	}
	if f.Size == 0 {
		return
	}
	e.flush()
	e.chunks = append(e.chunks, Chunk{File: f})
}

// tags writes an empty tagged-field section in flexible versions.
func (e *chunkEncoder) tags() {
	if e.flexible {
		e.uvarint(0)
	}
}

func (e *chunkEncoder) flush() {
	if len(e.buf) > 0 {
		e.chunks = append(e.chunks, Chunk{Bytes: e.buf})
		e.buf = nil
	}
}

func (e *chunkEncoder) finish() []Chunk {
	e.flush()
	return e.chunks
}
