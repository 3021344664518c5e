package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/wake"
	"github.com/wren-broker/wren/wire"
)

// Fetch: v4-12
//
// Behavior:
// * Consumers read up to the high watermark; with flush policy ack that is
//   the durable end of the log, so nothing a crash could take back is ever
//   served.
// * Record data goes from the segment file to the socket with sendfile
//   (wire.EncodeFetchResponse splices file ranges into the response).
// * MinBytes and MaxWaitMillis: a long poll. The response waits, on the
//   connection's writer and so without holding up later requests' work,
//   until MinBytes are available, the wait ends, or a partition's high
//   watermark moves.
// * MaxBytes bounds the response and PartitionMaxBytes each partition; the
//   first partition with data gets at least one whole batch (KIP-74).
// * Partitions without data carry an empty, non-null record set.
// * A partition that finds no file descriptor (EMFILE, or log.open.files.max
//   all held) is left empty without an error when the response already
//   carries records (read again by the next fetch); alone, it answers
//   KAFKA_STORAGE_ERROR, which clients retry. The log dir stays healthy.
// * CurrentLeaderEpoch (v9+) is checked: FENCED_LEADER_EPOCH when older,
//   UNKNOWN_LEADER_EPOCH when newer.
// * Client quotas (KIP-13, KIP-219): a consumer's Fetch under a
//   consumer_byte_rate asks for no more than the quota lets through in one
//   window (Kafka's getMaxValueInQuotaWindow, less the response's own
//   fields); a Fetch that would exceed its byte rate or request
//   percentage is answered, as Kafka's handleFetchRequest does, with
//   throttle_time_ms and no topics at all, its bytes not counted, and the
//   connection muted for the throttle. A single record batch larger than
//   that bound is throttled every time, as in Kafka.
// * IsolationLevel read_committed reads to the last stable offset (the
//   first offset of the oldest open transaction, or of one whose marker
//   the high watermark has not passed, if below the high watermark), and
//   the response carries it with the aborted transactions of the records
//   read, from the segments' transaction indexes (Kafka's
//   collectAbortedTransactions). read_uncommitted reads to the high
//   watermark and reports it as the last stable offset, as before
//   (transactional producers are still refused at Produce).
// * Authorization: READ on each topic, or TOPIC_AUTHORIZATION_FAILED on each
//   of its partitions and nothing read.
//
// Not implemented:
// * Fetch sessions (KIP-227): SessionID 0 in every response, so clients
//   send full fetches; a request naming a session gets
//   FETCH_SESSION_ID_NOT_FOUND.
// * Topic ids (v13+), rack-aware preferred read replicas.
// * Follower fetches on this listener: a request with ReplicaID >= 0 gets
//   TOPIC_AUTHORIZATION_FAILED for every partition, as Kafka answers a
//   follower fetch without CLUSTER_ACTION (CVE-2018-1288: a client
//   claiming a replica id would read past the high watermark and move
//   it). Followers fetch on replica connections of the CONTROLLER
//   listener, after its handshake (replication/serve.go).

// readCommitted is Fetch's and ListOffsets' isolation level 1.
const readCommitted = 1

// maxFetchWait bounds a long poll whatever the client asks.
const maxFetchWait = 30 * time.Second

func (s *Server) handleFetch(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.FetchRequest)
	version := req.Header.ApiVersion
	if r.SessionID != 0 || (r.SessionEpoch != 0 && r.SessionEpoch != -1) {
		return RespondSpliced(&SplicedResponse{Chunks: wire.EncodeFetchResponse(version, 0, kerr.FetchSessionIDNotFound.Code, 0, nil)}), nil
	}
	if q := req.FetchQuotaBytes; q > 0 && (r.MaxBytes <= 0 || r.MaxBytes > q) {
		// As Kafka: a fetch is no larger than its quota lets through in
		// one window, so that it can be answered with records at all.
		r.MaxBytes = q
	}
	if r.MinBytes > r.MaxBytes && r.MaxBytes > 0 {
		r.MinBytes = r.MaxBytes
	}
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if wait > maxFetchWait {
		wait = maxFetchWait
	}
	if wait < 0 {
		wait = 0
	}
	plan := s.planFetch(r, s.authz(req))
	return func(ctx context.Context) (Response, error) {
		deadline := time.Now().Add(wait)
		for {
			// Take the wake-up channels before reading, so a high watermark
			// that moves during the read is not missed.
			wakes := plan.watch()
			topics, size, release := plan.read(r)
			if size >= int64(r.MinBytes) || wait == 0 || !time.Now().Before(deadline) || len(wakes) == 0 {
				return Response{Spliced: &SplicedResponse{Chunks: wire.EncodeFetchResponse(version, 0, 0, 0, topics), Release: release},
					Sent: func() { observeFetched(s.cfg.Observer, topics) }}, nil
			}
			release()
			if !wake.Any(ctx, wakes, deadline) {
				if ctx.Err() != nil {
					return Response{}, ctx.Err()
				}
			}
		}
	}, nil
}

// observeFetched tells o the record bytes of the response, per topic.
func observeFetched(o Observer, topics []wire.FetchTopic) {
	for _, t := range topics {
		var bytes int64
		for _, p := range t.Partitions {
			bytes += p.Records.Size
		}
		if bytes > 0 {
			o.Fetched(t.Topic, bytes)
		}
	}
}

// fetchPlan is a Fetch request resolved to partitions once.
type fetchPlan struct {
	s       *Server
	targets [][]*fetchTarget
}

type fetchTarget struct {
	p    Replica
	err  int16
	part kmsg.FetchRequestTopicPartition
}

func (s *Server) planFetch(r *kmsg.FetchRequest, az authz) *fetchPlan {
	plan := &fetchPlan{s: s, targets: make([][]*fetchTarget, len(r.Topics))}
	replicas := s.node().Partitions
	for i, t := range r.Topics {
		denied := r.ReplicaID < 0 && !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			ft := &fetchTarget{part: p}
			ft.p = replicas.Partition(engine.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			switch {
			case r.ReplicaID >= 0 || denied:
				ft.err = kerr.TopicAuthorizationFailed.Code
			case ft.p == nil:
				ft.err = kerr.UnknownTopicOrPartition.Code
			default:
				leader, epoch := ft.p.Leader()
				switch {
				case !leader:
					ft.err = kerr.NotLeaderForPartition.Code
				case p.CurrentLeaderEpoch >= 0 && p.CurrentLeaderEpoch < epoch:
					ft.err = kerr.FencedLeaderEpoch.Code
				case p.CurrentLeaderEpoch > epoch:
					ft.err = kerr.UnknownLeaderEpoch.Code
				}
			}
			plan.targets[i] = append(plan.targets[i], ft)
		}
	}
	return plan
}

// watch returns the channels that close when a fetched partition's high
// watermark moves.
func (plan *fetchPlan) watch() []<-chan struct{} {
	var out []<-chan struct{}
	for _, ts := range plan.targets {
		for _, ft := range ts {
			if ft.p != nil && ft.err == 0 {
				out = append(out, ft.p.HighWatermarkChanged())
			}
		}
	}
	return out
}

// read reads every partition once and returns the response topics, the
// record bytes found and the function that lets the segments go.
func (plan *fetchPlan) read(r *kmsg.FetchRequest) ([]wire.FetchTopic, int64, func()) {
	var results []*engine.ReadResult
	release := func() {
		for _, rr := range results {
			rr.Release()
		}
	}
	budget := int64(r.MaxBytes)
	if budget <= 0 {
		budget = 1 << 30
	}
	var total int64
	topics := make([]wire.FetchTopic, len(r.Topics))
	for i, t := range r.Topics {
		topics[i].Topic = t.Topic
		for _, ft := range plan.targets[i] {
			fp := wire.FetchPartition{Partition: ft.part.Partition, ErrorCode: ft.err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			if ft.err == 0 {
				limit := min(int64(ft.part.PartitionMaxBytes), budget-total)
				if limit < 0 {
					limit = 0
				}
				var rr *engine.ReadResult
				var err error
				if r.IsolationLevel == readCommitted {
					var cr engine.CommittedRead
					cr, err = ft.p.ReadCommittedForConsumer(ft.part.FetchOffset, limit, total == 0)
					rr = cr.Result
					fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = cr.HighWatermark, cr.LastStableOffset, cr.LogStartOffset
					for _, a := range cr.Aborted {
						fp.AbortedTransactions = append(fp.AbortedTransactions, wire.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
					}
				} else {
					var hw, start int64
					rr, hw, start, err = ft.p.ReadForConsumer(ft.part.FetchOffset, limit, total == 0)
					fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hw, hw, start
				}
				switch {
				case errors.Is(err, engine.ErrOffsetOutOfRange):
					fp.ErrorCode = kerr.OffsetOutOfRange.Code
				case errors.Is(err, engine.ErrTooManyOpenFiles) && total > 0:
					// The partitions read so far hold the descriptors:
					// this one is left empty, without an error, and the
					// client's next fetch reads it (no retry backoff).
				case err != nil:
					fp.ErrorCode = errorCode(err)
				default:
					results = append(results, rr)
					fp.Records = rr.Slice
					total += rr.Slice.Size
				}
			}
			topics[i].Partitions = append(topics[i].Partitions, fp)
		}
	}
	return topics, total, release
}
