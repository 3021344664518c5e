package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// TxnOffsetCommit: v0-4
//
// Behavior:
// * A transactional producer commits a group's offsets inside its
//   transaction (the consume-transform-produce loop, KIP-98). The offsets
//   are appended to the group's __consumer_offsets partition as one
//   transactional record batch of the producer's id and epoch (Kafka's
//   OffsetCommit records), durable (acks=all) before the answer, and stay
//   pending: OffsetFetch does not show them until the transaction's COMMIT
//   marker reaches the partition (the group driver's WriteTxnMarker), and
//   an ABORT marker drops them. groups.Coordinator.TxnCommitOffsets.
// * v3+ carry the member id, the generation and the group instance id
//   (KIP-447): when any is given they are checked as OffsetCommit's
//   (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), so a
//   zombie of a rebalanced member cannot commit. v0-2 name none: accepted
//   whatever the group's state, as in Kafka. v4 (transaction version 2)
//   needs nothing more here.
// * A producer epoch older than one the coordinator saw for the producer
//   (in its records or its markers) gets INVALID_PRODUCER_EPOCH; a newer
//   epoch's commit replaces the pending offsets of an older one.
// * A partition of a topic that does not exist gets
//   UNKNOWN_TOPIC_OR_PARTITION and never reaches the coordinator.
// * Authorization, as Kafka's KafkaApis: WRITE on the transactional id,
//   or TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition; then
//   READ on the group, or GROUP_AUTHORIZATION_FAILED on every partition;
//   then READ on each topic, or TOPIC_AUTHORIZATION_FAILED on its
//   partitions, which are not committed.
//
// Not implemented:
// * The producer id and epoch are not checked against the transaction
//   coordinator's (Kafka's group side does not either): the transaction
//   coordinator's AddOffsetsToTxn and its markers own that.
// * v5+ (transaction version 2 without AddOffsetsToTxn).

func (s *Server) handleTxnOffsetCommit(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	tr := groups.TxnCommitRequest{
		Group:         r.Group,
		ProducerID:    r.ProducerID,
		ProducerEpoch: r.ProducerEpoch,
		Generation:    -1,
	}
	if r.Version >= 3 {
		tr.Generation, tr.MemberID, tr.InstanceID = r.Generation, r.MemberID, derefString(r.InstanceID)
	}
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	type slot struct{ t, p int }
	var index []slot
	im := s.node().Metadata.Image()
	az := s.authz(req)
	var refused int16
	switch {
	case !az.allow(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID):
		refused = kerr.TransactionalIDAuthorizationFailed.Code
	case !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group):
		refused = kerr.GroupAuthorizationFailed.Code
	}
	for ti, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		topic := im.Topic(t.Topic)
		topicDenied := refused == 0 && !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case refused != 0:
				rp.ErrorCode = refused
			case topicDenied:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				leaderEpoch := p.LeaderEpoch
				if r.Version < 2 {
					leaderEpoch = -1
				}
				tr.Offsets = append(tr.Offsets, groups.OffsetCommit{
					Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: leaderEpoch, Metadata: derefString(p.Metadata),
				})
				index = append(index, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(tr.Offsets) == 0 {
		return Respond(resp), nil
	}
	call := s.submitGroup(req, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		tr.RequestID = id
		c.TxnCommitOffsets(tr, nowMs)
	})
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		for i, at := range index {
			c := code
			if res.TxnCommit != nil && i < len(res.TxnCommit.Partitions) {
				c = res.TxnCommit.Partitions[i].ErrorCode
			}
			resp.Topics[at.t].Partitions[at.p].ErrorCode = c
		}
		return Response{Msg: resp}, nil
	}, nil
}
