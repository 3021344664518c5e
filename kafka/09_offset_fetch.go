package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// OffsetFetch: v0-9
//
// Behavior:
// * Answered through the coordinator's Ready, behind earlier commits'
//   records, so it never shows an offset that is not durable.
// * v2+: no topics (null) means every partition the group committed; a
//   group-level error goes in the top-level error code. v0-1 put it on
//   each partition.
// * v8+: several groups per request (KIP-709), each asked of its own
//   coordinator.
// * RequireStable (v7+, KIP-447): a partition with transactional offsets
//   pending (TxnOffsetCommit, before its transaction's marker) answers
//   UNSTABLE_OFFSET_COMMIT, which the client retries; without it the
//   committed offset is answered (pending offsets are never shown).
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED (per
//   partition before v2); partitions of a topic the principal may not READ
//   get TOPIC_AUTHORIZATION_FAILED when named, and are left out of a fetch
//   of every partition.
//
// Not implemented:
// * v10+ (topic ids).
// * v9's member id and epoch are not checked: a read changes nothing, and
//   Kafka's check (STALE_MEMBER_EPOCH) only makes a lagging member retry.

func (s *Server) handleOffsetFetch(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	version := r.Version
	az := s.authz(req)
	if version < 8 {
		fr := groups.FetchOffsetsRequest{Group: r.Group, RequireStable: version >= 7 && r.RequireStable}
		if r.Topics != nil {
			fr.Partitions = []groups.TopicPartition{}
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					fr.Partitions = append(fr.Partitions, groups.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		if !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group) {
			resp := kmsg.NewPtrOffsetFetchResponse()
			resp.Version = version
			code := kerr.GroupAuthorizationFailed.Code
			if version >= 2 {
				resp.ErrorCode = code
			}
			for _, f := range unfetched(fr.Partitions) {
				if version < 2 {
					f.ErrorCode = code
				}
				resp.Topics = appendFetchedV0(resp.Topics, f)
			}
			return Respond(resp), nil
		}
		var refused []groups.FetchedOffset
		fr.Partitions, refused = az.splitReadable(fr.Partitions)
		call := s.submitFetchOffsets(req, fr)
		return func(ctx context.Context) (Response, error) {
			fres, err := waitFetchOffsets(ctx, call, fr)
			if err != nil {
				return Response{}, err
			}
			fres.Offsets = append(az.readable(fr.Partitions, fres.Offsets), refused...)
			resp := kmsg.NewPtrOffsetFetchResponse()
			resp.Version = version
			offsets := fres.Offsets
			if version >= 2 {
				resp.ErrorCode = fres.ErrorCode
			} else if fres.ErrorCode != 0 && len(offsets) == 0 {
				// v0-1 have no top-level error: each partition asked
				// carries it, as in Kafka. Without them the client would
				// read "nothing committed" and reset its position.
				offsets = unfetched(fr.Partitions)
			}
			for _, f := range offsets {
				if version < 2 && f.ErrorCode == 0 {
					f.ErrorCode = fres.ErrorCode
				}
				resp.Topics = appendFetchedV0(resp.Topics, f)
			}
			return Response{Msg: resp}, nil
		}, nil
	}
	reqs := make([]groups.FetchOffsetsRequest, len(r.Groups))
	calls := make([]groupCall, len(r.Groups))
	refused := make([][]groups.FetchedOffset, len(r.Groups))
	groupDenied := make([]bool, len(r.Groups))
	for i, g := range r.Groups {
		reqs[i] = groups.FetchOffsetsRequest{Group: g.Group, RequireStable: r.RequireStable}
		if g.Topics != nil {
			reqs[i].Partitions = []groups.TopicPartition{}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					reqs[i].Partitions = append(reqs[i].Partitions, groups.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		if !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, g.Group) {
			groupDenied[i] = true
			continue
		}
		reqs[i].Partitions, refused[i] = az.splitReadable(reqs[i].Partitions)
		calls[i] = s.submitFetchOffsets(req, reqs[i])
	}
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = version
		for i := range calls {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = reqs[i].Group
			if groupDenied[i] {
				rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			fres, err := waitFetchOffsets(ctx, calls[i], reqs[i])
			if err != nil {
				return Response{}, err
			}
			rg.ErrorCode = fres.ErrorCode
			for _, f := range append(az.readable(reqs[i].Partitions, fres.Offsets), refused[i]...) {
				rg.Topics = appendFetchedV8(rg.Topics, f)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return Response{Msg: resp}, nil
	}, nil
}

func (s *Server) submitFetchOffsets(req *Request, fr groups.FetchOffsetsRequest) groupCall {
	return s.submitGroup(req, fr.Group, func(c GroupCore, id uint64, _ int64) {
		fr.RequestID = id
		c.FetchOffsets(fr)
	})
}

// waitFetchOffsets waits for one group's offsets; without a coordinator
// the group's error stands for them.
func waitFetchOffsets(ctx context.Context, call groupCall, fr groups.FetchOffsetsRequest) (*groups.FetchOffsetsResponse, error) {
	res, code, err := call.wait(ctx)
	if err != nil {
		return nil, err
	}
	if res.Fetch != nil {
		return res.Fetch, nil
	}
	return &groups.FetchOffsetsResponse{ErrorCode: code, Offsets: unfetched(fr.Partitions)}, nil
}

// splitReadable splits the partitions asked for into those whose topic
// the principal may READ and the others, answered
// TOPIC_AUTHORIZATION_FAILED. A nil list (every partition of the group)
// stays nil: readable filters the answer instead.
func (z authz) splitReadable(parts []groups.TopicPartition) ([]groups.TopicPartition, []groups.FetchedOffset) {
	if parts == nil || !z.on() {
		return parts, nil
	}
	allowed := make([]groups.TopicPartition, 0, len(parts))
	var refused []groups.FetchedOffset
	seen := map[string]bool{}
	for _, tp := range parts {
		ok, known := seen[tp.Topic]
		if !known {
			ok = z.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, tp.Topic)
			seen[tp.Topic] = ok
		}
		if ok {
			allowed = append(allowed, tp)
			continue
		}
		refused = append(refused, groups.FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1,
			ErrorCode: kerr.TopicAuthorizationFailed.Code})
	}
	return allowed, refused
}

// readable is the offsets of every partition of a group (asked == nil)
// without those of topics the principal may not READ, which Kafka leaves
// out; the offsets of partitions asked for by name, as they are.
func (z authz) readable(asked []groups.TopicPartition, offsets []groups.FetchedOffset) []groups.FetchedOffset {
	if asked != nil || !z.on() {
		return offsets
	}
	out := offsets[:0:0]
	seen := map[string]bool{}
	for _, f := range offsets {
		ok, known := seen[f.Topic]
		if !known {
			ok = z.check(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, f.Topic)
			seen[f.Topic] = ok
		}
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// unfetched is partitions with no offset.
func unfetched(partitions []groups.TopicPartition) []groups.FetchedOffset {
	var out []groups.FetchedOffset
	for _, tp := range partitions {
		out = append(out, groups.FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1})
	}
	return out
}

func appendFetchedV0(ts []kmsg.OffsetFetchResponseTopic, f groups.FetchedOffset) []kmsg.OffsetFetchResponseTopic {
	if len(ts) == 0 || ts[len(ts)-1].Topic != f.Topic {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = f.Topic
		ts = append(ts, t)
	}
	p := kmsg.NewOffsetFetchResponseTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, f.ErrorCode
	metadata := f.Metadata
	p.Metadata = &metadata
	ts[len(ts)-1].Partitions = append(ts[len(ts)-1].Partitions, p)
	return ts
}

func appendFetchedV8(ts []kmsg.OffsetFetchResponseGroupTopic, f groups.FetchedOffset) []kmsg.OffsetFetchResponseGroupTopic {
	if len(ts) == 0 || ts[len(ts)-1].Topic != f.Topic {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = f.Topic
		ts = append(ts, t)
	}
	p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, f.ErrorCode
	metadata := f.Metadata
	p.Metadata = &metadata
	ts[len(ts)-1].Partitions = append(ts[len(ts)-1].Partitions, p)
	return ts
}
