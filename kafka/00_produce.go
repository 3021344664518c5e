package kafka

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/txn"
)

// Produce: v3-11 (v0-2 advertised for librdkafka, answered with
// UNSUPPORTED_VERSION per partition)
//
// Behavior:
// * Appends run on the connection's reader, in request order, so
//   pipelined requests land in the order they were sent; each append's
//   fdatasync (flush policy ack) starts at once and is shared by the
//   appends that arrive meanwhile (group commit), and the response waits
//   for it on the writer.
// * acks=0 gets no response; acks=1 answers once the leader's append is
//   durable under flush policy ack; acks=-1 once the high watermark passes
//   the batch (every ISR member holds it, durably under flush policy ack),
//   waiting at most TimeoutMillis (REQUEST_TIMED_OUT after: the write may
//   still commit); any other acks value gets INVALID_REQUIRED_ACKS.
// * acks=-1 while the ISR is smaller than min.insync.replicas (bounded by
//   the replica count) gets NOT_ENOUGH_REPLICAS and nothing is appended;
//   when the ISR falls below it while the append waits,
//   NOT_ENOUGH_REPLICAS_AFTER_APPEND.
// * Every batch is validated (CRC, structure, decompression under a cap)
//   before anything is written; errors map to CORRUPT_MESSAGE,
//   INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE, MESSAGE_TOO_LARGE.
// * Idempotent producers (ids from InitProducerId): the engine checks
//   each batch's producer epoch and sequence against the partition's
//   producer state (engine/producer). A retry of one of the producer's
//   last five batches is not written again and answers the offsets the
//   original got; a gap or overlap is OUT_OF_ORDER_SEQUENCE_NUMBER, an
//   older epoch INVALID_PRODUCER_EPOCH, and a non-zero sequence from a
//   producer the partition does not know UNKNOWN_PRODUCER_ID, with the
//   log start offset (KIP-360).
// * A partition this node does not lead answers NOT_LEADER_OR_FOLLOWER,
//   before any check of its log directory; from v10 with the leader it
//   knows and that leader's endpoint (KIP-951's CurrentLeader and
//   NodeEndpoints), so the client moves without a metadata refresh.
// * A failed log directory answers KAFKA_STORAGE_ERROR and acknowledges
//   nothing. Where another replica is in the ISR, the answer waits (at
//   most 2 s, and the request's timeout) for the controller to move the
//   leadership off the log dir, and is NOT_LEADER_OR_FOLLOWER if it did.
// * A log directory below its free-space floor (log.dir.min.free.bytes,
//   log.dir.min.free.percent) answers KAFKA_STORAGE_ERROR, which clients
//   retry, with a message naming the directory and the figures; so does an
//   append that met ENOSPC (undone, nothing acknowledged). Writes resume by
//   themselves once space is back. An append that finds no file
//   descriptor (EMFILE, or log.open.files.max all in use) answers
//   KAFKA_STORAGE_ERROR at once, without the hand-over wait: the log dir is
//   healthy, keeps its leaderships, and the retry succeeds once a
//   descriptor is free. Kafka answers a full disk with the same
//   code (its log dir goes offline); Redpanda's BROKER_NOT_AVAILABLE is
//   fatal to the Java producer.
//
// * Authorization: WRITE on each topic, or TOPIC_AUTHORIZATION_FAILED
//   on each of its partitions and nothing appended; an idempotent
//   producer needs no more (Kafka 3.x dropped IDEMPOTENT_WRITE on the
//   cluster here). With acks=0 the connection closes after a refusal, as
//   Kafka's, since no answer tells the producer.
//
// * Transactions: a request with transactional batches needs a
//   transactional id and WRITE on it, else
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition (Kafka's
//   rule). Before the first transactional batch of a transaction is
//   appended to a partition, the leader asks the transaction coordinator
//   whether the partition is in the producer's ongoing transaction
//   (KIP-890 part 1, TxnCoordinator.Verify) and keeps the answer until a
//   marker ends the transaction there (txnGuards, txn.go): a refusal is
//   INVALID_TXN_STATE (INVALID_PRODUCER_EPOCH for a fenced producer), a
//   coordinator that cannot answer NOT_ENOUGH_REPLICAS (retriable), so a
//   late batch of an ended transaction never opens one the coordinator
//   does not know (KAFKA-17754). The verification waits on the
//   connection's reader, at most 10 s.
//
// Not implemented:
// * Throttling.

// errProduceRefused closes the connection of an acks=0 producer the
// authorizer refused.
var errProduceRefused = errors.New("kafka: an acks=0 produce was refused by the authorizer")

func (s *Server) handleProduce(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	lname, _, _ := s.listenerOf(req.Session)
	var topLevel int16
	switch {
	case req.CompatOnly:
		topLevel = kerr.UnsupportedVersion.Code
	case r.TransactionID == nil && hasTransactionalBatch(r):
		topLevel = kerr.TransactionalIDAuthorizationFailed.Code
	case r.TransactionID != nil && !s.authorized(req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *r.TransactionID):
		topLevel = kerr.TransactionalIDAuthorizationFailed.Code
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		topLevel = kerr.InvalidRequiredAcks.Code
	}
	var waits []func() error
	// transient: partitions refused for a shortage of descriptors (no hand-over).
	var transient map[engine.TopicPartition]bool
	var errs []*kmsg.ProduceResponseTopicPartition
	replicas := s.node().Partitions
	az := s.authz(req)
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		var records, bytes int64
		denied := topLevel == 0 && !az.allow(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic)
		if denied && r.Acks == 0 && req.Session != nil {
			// No answer would tell the producer: as Kafka, the
			// connection closes once the request is done.
			req.Session.closeAfter = errProduceRefused
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			if topLevel != 0 || denied {
				rp.ErrorCode = topLevel
				if denied {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			part := replicas.Partition(engine.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			if part == nil {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			// Not the leader comes first: a node whose log dir takes no
			// writes hands its leaderships away, and a producer told
			// NOT_LEADER_OR_FOLLOWER looks for the new leader at once,
			// where KAFKA_STORAGE_ERROR would keep it retrying here.
			if lead, _ := part.Leader(); !lead {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if err := part.CheckWritable(); err != nil {
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := engine.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			var info engine.AppendInfo
			var wait func() error
			var err error
			appendOnce := func() { info, wait, err = part.AppendAsLeaderTimeout(p.Records, r.Acks, ackTimeout(r.TimeoutMillis)) }
			if r.TransactionID != nil {
				if code := s.verifiedAppend(req, *r.TransactionID, part, tp, p.Records, appendOnce); code != 0 {
					rp.ErrorCode = code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
			} else {
				appendOnce()
			}
			if errors.Is(err, engine.ErrTooManyOpenFiles) && len(waits) > 0 {
				// This request's own earlier appends hold descriptors
				// until their fdatasyncs: run those waits now (their
				// answers are kept) so the files go back to the cache,
				// and try once more. The refused append wrote nothing.
				for k, w := range waits {
					werr := w()
					waits[k] = func() error { return werr }
				}
				if r.TransactionID != nil {
					if code := s.verifiedAppend(req, *r.TransactionID, part, tp, p.Records, appendOnce); code != 0 {
						err = kerr.ErrorForCode(code)
					}
				} else {
					appendOnce()
				}
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
				rp.ErrorMessage = kafkaMessage(err)
				if errors.Is(err, engine.ErrTooManyOpenFiles) {
					// A passing shortage of descriptors: the log dir is
					// healthy and keeps its leaderships, so the client
					// is told at once to retry.
					if transient == nil {
						transient = map[engine.TopicPartition]bool{}
					}
					transient[engine.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = true
				}
				// KIP-360: a producer told UNKNOWN_PRODUCER_ID compares this
				// with its last acknowledged offset to decide how to recover.
				rp.LogStartOffset = part.LogStartOffset()
			} else {
				rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = info.FirstOffset, info.LogAppendTime, info.LogStartOffset
				waits = append(waits, wait)
				if !info.Duplicate {
					records, bytes = records+info.RecordCount, bytes+info.Bytes
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if records > 0 {
			s.cfg.Observer.Produced(t.Topic, records, bytes)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// Index the partitions whose append must still become durable, and
	// those refused for their log dir that an in-sync replica may take.
	var handing []handOver
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.ErrorCode == 0 && p.BaseOffset >= 0 {
				errs = append(errs, p)
			}
			if p.ErrorCode == kerr.KafkaStorageError.Code && r.Acks != 0 && !transient[engine.TopicPartition{Topic: resp.Topics[i].Topic, Partition: p.Partition}] {
				if part := s.mayHandOver(resp.Topics[i].Topic, p.Partition); part != nil {
					handing = append(handing, handOver{rp: p, part: part})
				}
			}
		}
	}
	handOverWait := min(maxHandOverWait, ackTimeout(r.TimeoutMillis))
	acks := r.Acks
	return func(ctx context.Context) (Response, error) {
		// Every wait runs, acks=0 included. What a wait stands for started
		// at the append (each partition's fdatasync, its followers'
		// fetches: Replica.AppendAsLeaderTimeout), so the partitions sync
		// and replicate concurrently and waiting for them in turn costs the
		// slowest, not the sum; a goroutine per partition would only add a
		// wake-up to every answer.
		results := make([]error, len(waits))
		for i, wait := range waits {
			results[i] = wait()
		}
		for i, err := range results {
			if err != nil {
				errs[i].ErrorCode = errorCode(err)
				errs[i].ErrorMessage = kafkaMessage(err)
				errs[i].BaseOffset = -1
			}
		}
		if acks == 0 {
			return Response{}, nil
		}
		awaitHandOver(ctx, handing, handOverWait)
		s.currentLeaders(resp, lname)
		return Response{Msg: resp}, nil
	}, nil
}

// maxHandOverWait bounds how long a produce refused for its log dir waits
// for the leadership to move.
const maxHandOverWait = 2 * time.Second

// handOver is a partition refused for its log dir (below its free-space
// floor, failed, out of space) that another in-sync replica may take.
type handOver struct {
	rp   *kmsg.ProduceResponseTopicPartition
	part Replica
}

// mayHandOver returns the replica of a partition this node leads whose
// ISR holds another member: the controller moves such a leadership off a
// log dir that takes no writes within a round trip or two.
func (s *Server) mayHandOver(topic string, partition int32) Replica {
	part := s.node().Partitions.Partition(engine.TopicPartition{Topic: topic, Partition: partition})
	if part == nil {
		return nil
	}
	if lead, _ := part.Leader(); !lead {
		return nil
	}
	n := s.node()
	t := n.Metadata.Image().Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil
	}
	self := n.Metadata.NodeID()
	if !slices.ContainsFunc(t.Partitions[partition].ISR, func(r int32) bool { return r != self }) {
		return nil
	}
	return part
}

// awaitHandOver holds the answer to partitions refused for their log dir
// until this node no longer leads them, at most d: then they answer
// NOT_LEADER_OR_FOLLOWER (with the new leader, currentLeaders) instead of
// KAFKA_STORAGE_ERROR, and the client moves at once. Told
// KAFKA_STORAGE_ERROR while the move was under way, franz-go asked for
// metadata that still showed this node leading and then waited 5 s before
// it could ask again. Nothing was appended, so the wait changes nothing
// but the answer.
func awaitHandOver(ctx context.Context, hs []handOver, d time.Duration) {
	if len(hs) == 0 {
		return
	}
	leading := func() bool {
		return slices.ContainsFunc(hs, func(h handOver) bool { lead, _ := h.part.Leader(); return lead })
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for leading() {
		select {
		case <-ctx.Done():
			break wait
		case <-deadline.C:
			break wait
		case <-tick.C:
		}
	}
	for _, h := range hs {
		if lead, _ := h.part.Leader(); !lead {
			h.rp.ErrorCode, h.rp.ErrorMessage = kerr.NotLeaderForPartition.Code, nil
		}
	}
}

// currentLeaders names, in a v10+ response, the leader this node knows
// for each partition answered NOT_LEADER_OR_FOLLOWER, with its endpoint
// (KIP-951): a client moves there at once instead of waiting for its next
// metadata refresh, which franz-go holds back for 5 s after the last.
func (s *Server) currentLeaders(resp *kmsg.ProduceResponse, listener string) {
	if resp.Version < 10 {
		return
	}
	n := s.node()
	im := n.Metadata.Image()
	var named []int32
	for i := range resp.Topics {
		t := im.Topic(resp.Topics[i].Topic)
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code || t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[rp.Partition]
			if p.Leader < 0 || p.Leader == n.Metadata.NodeID() {
				continue
			}
			if !slices.Contains(named, p.Leader) {
				host, port, ok := n.Metadata.BrokerAddr(p.Leader, listener)
				if !ok {
					continue
				}
				named = append(named, p.Leader)
				b := kmsg.NewProduceResponseBroker()
				b.NodeID, b.Host, b.Port = p.Leader, host, port
				resp.Brokers = append(resp.Brokers, b)
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = p.Leader, p.LeaderEpoch
		}
	}
}

// ackTimeout is how long an acks=all append waits for the ISR: the
// request's TimeoutMillis, within bounds a client cannot stretch.
func ackTimeout(ms int32) time.Duration {
	return min(max(time.Duration(ms)*time.Millisecond, 10*time.Millisecond), 5*time.Minute)
}

// hasTransactionalBatch reports whether some partition's records hold a
// transactional batch.
func hasTransactionalBatch(r *kmsg.ProduceRequest) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if _, _, ok := transactionalProducer(p.Records); ok {
				return true
			}
		}
	}
	return false
}

// transactionalProducer returns the producer of the first transactional
// batch of records; ok false when none is (or the records do not parse:
// the append refuses them).
func transactionalProducer(records []byte) (pid int64, epoch int16, ok bool) {
	for len(records) > 0 {
		h, err := batch.ParseHeader(records)
		if err != nil || h.Size() <= 0 || h.Size() > len(records) {
			return 0, 0, false
		}
		if h.IsTransactional() {
			return h.ProducerID, h.ProducerEpoch, true
		}
		records = records[h.Size():]
	}
	return 0, 0, false
}

// verifiedAppend runs appendOnce for a transactional producer's records
// once the coordinator verified the partition is in its ongoing
// transaction (txnGuards), and returns the error code when it did not.
// Records of no transactional batch are appended as they are.
func (s *Server) verifiedAppend(req *Request, id string, part Replica, tp engine.TopicPartition, records []byte, appendOnce func()) int16 {
	pid, epoch, ok := transactionalProducer(records)
	if !ok {
		appendOnce()
		return 0
	}
	_, leaderEpoch := part.Leader()
	gd := s.txnGuards.get(tp, pid, epoch, leaderEpoch)
	if !gd.verified.Load() {
		code := s.verifyPartition(req, id, pid, epoch, tp)
		if code != 0 {
			s.txnGuards.drop(tp, pid, gd)
			return code
		}
		s.txnGuards.setVerified(tp, pid, gd)
	}
	if !s.txnGuards.appendIfGuarded(tp, pid, gd, appendOnce) {
		// A marker ended the transaction here since it was verified.
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// verifyPartition asks the coordinator whether tp is in the producer's
// ongoing transaction; 0 when it is.
func (s *Server) verifyPartition(req *Request, id string, pid int64, epoch int16, tp engine.TopicPartition) int16 {
	t := s.node().Txn
	if t == nil {
		return kerr.NotEnoughReplicas.Code
	}
	ctx, cancel := context.WithTimeout(reqContext(req), verifyTimeout)
	defer cancel()
	ttp := txn.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	out, err := t.Verify(ctx, txn.AddPartitionsRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch,
		Partitions: []txn.TopicPartition{ttp}, VerifyOnly: true})
	if err != nil {
		return kerr.NotEnoughReplicas.Code
	}
	code := out.ErrorCode
	if c, ok := out.Partitions[ttp]; ok && code == 0 {
		code = c
	} else if !ok && code == 0 {
		code = kerr.InvalidTxnState.Code
	}
	return verifyCode(code)
}
