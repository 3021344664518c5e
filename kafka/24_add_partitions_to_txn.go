package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/txn"
)

// AddPartitionsToTxn: v0-5
//
// Behavior:
// * v0-3 (clients): one transaction; its partitions join the producer's
//   transaction at the coordinator (txn.Coordinator.AddPartitions),
//   answered once the record is durable. A partition of a topic that does
//   not exist gets UNKNOWN_TOPIC_OR_PARTITION and the others
//   OPERATION_NOT_ATTEMPTED, as Kafka. PRODUCER_FENCED is
//   INVALID_PRODUCER_EPOCH below v2.
// * v4+ (brokers): many transactions, each with VerifyOnly (KIP-890 part
//   1): a partition leader asks whether partitions are in a producer's
//   ongoing transaction before it appends the transaction's first batch
//   there; nothing changes. Without VerifyOnly the partitions are added.
// * Authorization: v0-3 WRITE on the transactional id
//   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and WRITE
//   on each topic (TOPIC_AUTHORIZATION_FAILED, the others
//   OPERATION_NOT_ATTEMPTED); v4+ CLUSTER_ACTION on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED at the top level).

func (s *Server) handleAddPartitionsToTxn(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version >= 4 {
		return s.addPartitionsBatched(req, r, resp)
	}
	tps := make([]txn.TopicPartition, 0)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	codes := s.precheckAddPartitions(req, r.TransactionalID, tps)
	if codes != nil {
		resp.Topics = addPartitionsTopics(tps, codes)
		return Respond(resp), nil
	}
	id, pid, epoch, version := r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Version
	wait := s.txnSubmit(reqContext(req), id, func(c TxnCore, requestID uint64, nowMs int64) {
		c.AddPartitions(txn.AddPartitionsRequest{RequestID: requestID, TransactionalID: id, ProducerID: pid,
			ProducerEpoch: epoch, Partitions: tps}, nowMs)
	})
	return func(ctx context.Context) (Response, error) {
		out, code := wait(ctx)
		codes := map[txn.TopicPartition]int16{}
		for _, tp := range tps {
			c, ok := out.Partitions[tp]
			if !ok || code != 0 {
				c = code
			}
			codes[tp] = fencedCode(c, version, 2)
		}
		resp.Topics = addPartitionsTopics(tps, codes)
		return Response{Msg: resp}, nil
	}, nil
}

// precheckAddPartitions refuses, before the coordinator, a request the
// principal may not make or that names a topic that does not exist; nil
// when the coordinator should see it.
func (s *Server) precheckAddPartitions(req *Request, id string, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	all := func(code int16) map[txn.TopicPartition]int16 {
		m := make(map[txn.TopicPartition]int16, len(tps))
		for _, tp := range tps {
			m[tp] = code
		}
		return m
	}
	if !s.authorized(req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id) {
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	var bad map[txn.TopicPartition]int16
	im := s.node().Metadata.Image()
	az := s.authz(req)
	allowed := map[string]bool{}
	for _, tp := range tps {
		ok, seen := allowed[tp.Topic]
		if !seen {
			ok = az.allow(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, tp.Topic)
			allowed[tp.Topic] = ok
		}
		code := int16(0)
		if !ok {
			code = kerr.TopicAuthorizationFailed.Code
		} else if t := im.Topic(tp.Topic); t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			code = kerr.UnknownTopicOrPartition.Code
		}
		if code != 0 {
			if bad == nil {
				bad = map[txn.TopicPartition]int16{}
			}
			bad[tp] = code
		}
	}
	if bad == nil {
		return nil
	}
	for _, tp := range tps {
		if _, ok := bad[tp]; !ok {
			bad[tp] = kerr.OperationNotAttempted.Code
		}
	}
	return bad
}

func addPartitionsTopics(tps []txn.TopicPartition, codes map[txn.TopicPartition]int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, tp := range tps {
		if n := len(out); n == 0 || out[n-1].Topic != tp.Topic {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = tp.Topic
			out = append(out, rt)
		}
		rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, codes[tp]
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
	}
	return out
}

func (s *Server) addPartitionsBatched(req *Request, r *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) (Pending, error) {
	if !s.authorized(req, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	type one struct {
		id   string
		tps  []txn.TopicPartition
		wait func(context.Context) (txn.Response, int16)
	}
	var all []one
	for _, t := range r.Transactions {
		var tps []txn.TopicPartition
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				tps = append(tps, txn.TopicPartition{Topic: tt.Topic, Partition: p})
			}
		}
		id, pid, epoch, verify := t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly
		wait := s.txnSubmit(reqContext(req), id, func(c TxnCore, requestID uint64, nowMs int64) {
			c.AddPartitions(txn.AddPartitionsRequest{RequestID: requestID, TransactionalID: id, ProducerID: pid,
				ProducerEpoch: epoch, Partitions: tps, VerifyOnly: verify}, nowMs)
		})
		all = append(all, one{id: id, tps: tps, wait: wait})
	}
	return func(ctx context.Context) (Response, error) {
		for _, o := range all {
			out, code := o.wait(ctx)
			codes := map[txn.TopicPartition]int16{}
			for _, tp := range o.tps {
				c, ok := out.Partitions[tp]
				if !ok || code != 0 {
					c = code
				}
				codes[tp] = c
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = o.id
			for _, t := range addPartitionsTopics(o.tps, codes) {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				for _, p := range t.Partitions {
					pp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					pp.Partition, pp.ErrorCode = p.Partition, p.ErrorCode
					tt.Partitions = append(tt.Partitions, pp)
				}
				rt.Topics = append(rt.Topics, tt)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return Response{Msg: resp}, nil
	}, nil
}
