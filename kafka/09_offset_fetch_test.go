package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// offsetFetchRequest asks for partitions 0 and 1 of t (none: null, every
// committed partition), of group "g" below v8 and of each group from v8.
func offsetFetchRequest(version int16, all bool, groupIDs ...string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(version)
	var topics []kmsg.OffsetFetchRequestTopic
	if !all {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 1}
		topics = append(topics, rt)
	}
	if version < 8 {
		req.Group, req.Topics = "g", topics
		return req
	}
	for _, id := range groupIDs {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = id
		if !all {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", []int32{0, 1}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
	}
	return req
}

// committed answers a fetch with offset 42 (epoch 5, metadata "m") for
// t-0 and none for the rest.
func committed(req any) (groups.Response, error) {
	fr := req.(*groups.FetchOffsetsRequest)
	parts := fr.Partitions
	if parts == nil {
		parts = []groups.TopicPartition{{Topic: "t", Partition: 0}}
	}
	res := &groups.FetchOffsetsResponse{}
	for _, tp := range parts {
		f := groups.FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
		if tp.Partition == 0 {
			f.Offset, f.LeaderEpoch, f.Metadata = 42, 5, "m"
		}
		res.Offsets = append(res.Offsets, f)
	}
	return groups.Response{Fetch: res}, nil
}

// TestOffsetFetch: the partitions asked reach the coordinator and its
// offsets are the answer, at every version; the leader epoch is on the
// wire from v5.
func TestOffsetFetch(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		f, g := groupFixture(t)
		g.answer = committed
		resp := onWire(t, f.do(t, offsetFetchRequest(v, false, "g")).(*kmsg.OffsetFetchResponse))
		fr := lastGroupRequest[groups.FetchOffsetsRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if fr.Group != "g" || fmt.Sprint(fr.Partitions) != "[{t 0} {t 1}]" {
			t.Errorf("%s: coordinator got %+v", what, fr)
		}
		var parts []kmsg.OffsetFetchResponseTopicPartition
		if v < 8 {
			wantCode(t, what, resp.ErrorCode, nil)
			if len(resp.Topics) == 1 {
				parts = resp.Topics[0].Partitions
			}
		} else if len(resp.Groups) == 1 && len(resp.Groups[0].Topics) == 1 {
			wantCode(t, what, resp.Groups[0].ErrorCode, nil)
			for _, p := range resp.Groups[0].Topics[0].Partitions {
				parts = append(parts, kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
			}
		}
		if len(parts) != 2 {
			t.Fatalf("%s: answer %+v", what, resp)
		}
		if p := parts[0]; p.Offset != 42 || derefString(p.Metadata) != "m" || (p.LeaderEpoch == 5) != (v >= 5) {
			t.Errorf("%s: t-0 offset %d epoch %d metadata %q, want 42, 5 from v5, m", what, p.Offset, p.LeaderEpoch, derefString(p.Metadata))
		}
		if p := parts[1]; p.Offset != -1 {
			t.Errorf("%s: t-1 offset %d, want -1 (none)", what, p.Offset)
		}
	}
}

// TestOffsetFetchAll: null topics (v2+) asks for every committed
// partition.
func TestOffsetFetchAll(t *testing.T) {
	for _, v := range []int16{2, 7, 8} {
		f, g := groupFixture(t)
		g.answer = committed
		resp := f.do(t, offsetFetchRequest(v, true, "g")).(*kmsg.OffsetFetchResponse)
		if fr := lastGroupRequest[groups.FetchOffsetsRequest](t, g); fr.Partitions != nil {
			t.Errorf("v%d: asked for %v, want every partition (nil)", v, fr.Partitions)
		}
		n := 0
		if v < 8 {
			n = len(resp.Topics)
		} else {
			n = len(resp.Groups[0].Topics)
		}
		if n != 1 {
			t.Errorf("v%d: %d topics in the answer, want t", v, n)
		}
	}
}

// TestOffsetFetchGroups: from v8 each group is asked of its own
// coordinator and answers with its own error.
func TestOffsetFetchGroups(t *testing.T) {
	f, g := groupFixture(t)
	g.answer = func(req any) (groups.Response, error) {
		if req.(*groups.FetchOffsetsRequest).Group == "moved" {
			return notCoordinator(req)
		}
		return committed(req)
	}
	resp := f.do(t, offsetFetchRequest(9, false, "g", "moved")).(*kmsg.OffsetFetchResponse)
	if fmt.Sprint(g.submitted) != "[g moved]" || len(resp.Groups) != 2 {
		t.Fatalf("submitted %v, answered %+v", g.submitted, resp.Groups)
	}
	wantCode(t, "g", resp.Groups[0].ErrorCode, nil)
	wantCode(t, "moved", resp.Groups[1].ErrorCode, kerr.NotCoordinator)
	if resp.Groups[1].Group != "moved" {
		t.Errorf("second group answered as %q", resp.Groups[1].Group)
	}
}

// TestOffsetFetchCoordinatorErrors: where each version puts a group's
// error: on every partition asked in v0-1 (they have no top-level code,
// as Kafka's OffsetFetchRequest.getErrorResponse), at the top in v2-7, on
// the group from v8. A v0-1 client that got no partitions back would take
// it as "nothing committed" and reset its position.
func TestOffsetFetchCoordinatorErrors(t *testing.T) {
	for _, v := range []int16{0, 1, 2, 7, 8} {
		for _, c := range groupErrorCodes {
			f, g := groupFixture(t)
			c.setup(t, f, g)
			resp := onWire(t, f.do(t, offsetFetchRequest(v, false, "g")).(*kmsg.OffsetFetchResponse))
			what := fmt.Sprintf("v%d %s", v, c.name)
			switch {
			case v < 2:
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
					t.Errorf("%s: answer %+v, want both partitions asked", what, resp.Topics)
					continue
				}
				for _, p := range resp.Topics[0].Partitions {
					wantCode(t, fmt.Sprintf("%s t-%d", what, p.Partition), p.ErrorCode, c.want)
				}
			case v < 8:
				wantCode(t, what, resp.ErrorCode, c.want)
			default:
				wantCode(t, what, resp.Groups[0].ErrorCode, c.want)
			}
		}
	}
}
