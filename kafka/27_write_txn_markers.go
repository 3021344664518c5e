package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
)

// WriteTxnMarkers: v0-1
//
// Behavior:
// * The partition leader's side of a commit or abort: for each marker and
//   partition, a control batch (COMMIT or ABORT) appended by the leader
//   (Replica.AppendTxnMarkerAsLeader) and answered once every in-sync
//   replica holds it (acks=all, within replication's 30 s). The engine
//   refuses a producer epoch below the partition's
//   (INVALID_PRODUCER_EPOCH) and a coordinator epoch below the last
//   marker's (TRANSACTION_COORDINATOR_FENCED). NOT_LEADER_OR_FOLLOWER on a
//   follower, UNKNOWN_TOPIC_OR_PARTITION where the partition is not
//   hosted; the coordinator retries until each partition has its marker.
// * Before the marker, the producer's KIP-890 verification on the
//   partition is dropped (txnGuards): a late batch of the ended
//   transaction is verified again, and refused.
// * __consumer_offsets partitions go to the group coordinator
//   (GroupTxnMarkers), which appends the marker through its own ordered
//   path and applies the transaction's offsets; without one,
//   COORDINATOR_NOT_AVAILABLE (retriable).
// * Partitions are written concurrently (at most 32 at once).
// * Authorization: CLUSTER_ACTION on the cluster, or
//   CLUSTER_AUTHORIZATION_FAILED on every partition.
//
// Not implemented:
// * v2 (transaction version 2).

// markerTimeout bounds a marker the group coordinator writes.
const markerTimeout = 30 * time.Second

// maxConcurrentMarkers bounds the partitions one request writes at once.
const maxConcurrentMarkers = 32

func (s *Server) handleWriteTxnMarkers(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.authorized(req, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResourceName)
	type job struct {
		rp     *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
		tp     engine.TopicPartition
		marker engine.TxnMarker
	}
	var jobs []job
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for i, p := range t.Partitions {
				rt.Partitions[i] = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rt.Partitions[i].Partition = p
				if !allowed {
					rt.Partitions[i].ErrorCode = kerr.ClusterAuthorizationFailed.Code
				}
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if !allowed {
		return Respond(resp), nil
	}
	for i, m := range r.Markers {
		for j, t := range m.Topics {
			for k, p := range t.Partitions {
				jobs = append(jobs, job{
					rp: &resp.Markers[i].Topics[j].Partitions[k],
					tp: engine.TopicPartition{Topic: t.Topic, Partition: p},
					marker: engine.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
						Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch},
				})
			}
		}
	}
	n := s.node()
	return func(ctx context.Context) (Response, error) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, maxConcurrentMarkers)
		for _, j := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				j.rp.ErrorCode = s.writeTxnMarker(ctx, n, j.tp, j.marker)
			}()
		}
		wg.Wait()
		return Response{Msg: resp}, nil
	}, nil
}

// writeTxnMarker writes one marker and returns its error code.
func (s *Server) writeTxnMarker(ctx context.Context, n *Node, tp engine.TopicPartition, m engine.TxnMarker) int16 {
	if tp.Topic == groups.OffsetsTopic {
		g := n.GroupTxnMarkers
		if g == nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		ctx, cancel := context.WithTimeout(ctx, markerTimeout)
		defer cancel()
		if err := g.WriteTxnMarker(ctx, tp.Partition, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Commit); err != nil {
			code := errorCode(err)
			if code == kerr.UnknownServerError.Code {
				// Retriable: the coordinator asks again.
				code = kerr.CoordinatorNotAvailable.Code
			}
			return code
		}
		return 0
	}
	part := n.Partitions.Partition(tp)
	if part == nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	if lead, _ := part.Leader(); !lead {
		return kerr.NotLeaderForPartition.Code
	}
	s.txnGuards.clear(tp, m.ProducerID)
	_, wait, err := part.AppendTxnMarkerAsLeader(m, -1)
	if err == nil {
		err = wait()
	}
	return errorCode(err)
}

// WriteTxnMarker writes one marker on this node, as WriteTxnMarkers does
// for one partition but without a request (the node's own transaction
// coordinator, for the partitions it leads), and returns the error code.
func (s *Server) WriteTxnMarker(ctx context.Context, tp engine.TopicPartition, m engine.TxnMarker) int16 {
	return s.writeTxnMarker(ctx, s.node(), tp, m)
}
