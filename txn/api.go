package txn

// The coordinator's inputs and outputs as plain values: the kafka package
// decodes a request with kmsg, fills one of these, and encodes the answer
// for the version the client spoke.

// InitRequest is InitProducerId with a transactional id.
type InitRequest struct {
	RequestID       uint64
	TransactionalID string
	TimeoutMs       int32
	// ExpectedProducerID and ExpectedEpoch are the producer's current id
	// and epoch (KIP-360, v3+), NoProducerID/NoProducerEpoch when not
	// sent.
	ExpectedProducerID int64
	ExpectedEpoch      int16
	// FreshProducerID is an id never handed out before, taken by the
	// caller from the cluster's blocks; the coordinator uses it for a
	// new transactional id or when the epoch is exhausted.
	FreshProducerID int64
}

// AddPartitionsRequest is one transaction of AddPartitionsToTxn (or
// AddOffsetsToTxn, with the group's __consumer_offsets partition).
type AddPartitionsRequest struct {
	RequestID       uint64
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []TopicPartition
	// VerifyOnly checks that the partitions are in the producer's
	// ongoing transaction and changes nothing (KIP-890).
	VerifyOnly bool
}

// EndRequest is EndTxn.
type EndRequest struct {
	RequestID       uint64
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
}

// Response answers a request. Partitions is set for AddPartitions (an
// error per partition).
type Response struct {
	RequestID     uint64
	ErrorCode     int16
	ProducerID    int64
	ProducerEpoch int16
	Partitions    map[TopicPartition]int16
}

// WithError is r failed with code (a failed append).
func (r Response) WithError(code int16) Response {
	out := Response{RequestID: r.RequestID, ErrorCode: code, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
	if r.Partitions != nil {
		out.Partitions = make(map[TopicPartition]int16, len(r.Partitions))
		for tp := range r.Partitions {
			out.Partitions[tp] = code
		}
	}
	return out
}

// Markers asks the driver to write a transaction's markers to each of its
// partitions, after the record before it in Ready is durable, and then to
// call MarkersWritten.
type Markers struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Partitions      []TopicPartition
}

// Ready is what the coordinator produced: the records to append to its
// partition (in order), the responses to give once they are durable, and
// the markers to write after that.
type Ready struct {
	Records   []Record
	Responses []Response
	Markers   []Markers
}

// Empty reports whether there is nothing in r.
func (r Ready) Empty() bool {
	return len(r.Records) == 0 && len(r.Responses) == 0 && len(r.Markers) == 0
}

// Listed is one transaction as ListTransactions shows it.
type Listed struct {
	TransactionalID string
	ProducerID      int64
	State           State
}
