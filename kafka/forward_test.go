package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// forwardCases are the requests that change metadata, one per forwarded
// key but CreateTopics (19_create_topics_test.go): the request, and the
// code the acting controller's answer carries and the client must see.
var forwardCases = []struct {
	req  func() kmsg.Request
	code func(kmsg.Response) int16
}{
	{func() kmsg.Request { return deleteTopicsRequest(6, "t") },
		func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }},
	{func() kmsg.Request { return createPartitionsRequest(3, 5, "t") },
		func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }},
	{func() kmsg.Request {
		return alterConfigsRequest(2, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1"))
	}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }},
	{func() kmsg.Request {
		return incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t", setOp("retention.ms", "1")))
	}, func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode }},
	{func() kmsg.Request { return electLeadersRequest(2, electionPreferred, "t", 0) },
		func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }},
	{func() kmsg.Request { return alterReassignmentsRequest(1, reassignPartition{"t", 0, []int32{2}}) },
		func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }},
}

// controllerAnswer is what the acting controller answers in these tests:
// an error no local handler would give, so the client's answer shows
// where it came from.
func controllerAnswer(req kmsg.Request) kmsg.Response {
	return answerWith(req, kerr.PolicyViolation.Code)
}

// answerWith is an answer to req with code on its one item.
func answerWith(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.DeleteTopicsResponse:
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr("t"), code
		r.Topics = append(r.Topics, rt)
	case *kmsg.CreatePartitionsResponse:
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = "t", code
		r.Topics = append(r.Topics, rt)
	case *kmsg.AlterConfigsResponse:
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = kmsg.ConfigResourceTypeTopic, "t", code
		r.Resources = append(r.Resources, rr)
	case *kmsg.IncrementalAlterConfigsResponse:
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = kmsg.ConfigResourceTypeTopic, "t", code
		r.Resources = append(r.Resources, rr)
	case *kmsg.ElectLeadersResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsResponse:
		r.ErrorCode = code
	}
	return resp
}

// TestForwardedToController: on a node that is not the acting controller
// every request that changes metadata goes to the controller, at the
// client's version, and the client gets the controller's answer; the
// local controller is not asked.
func TestForwardedToController(t *testing.T) {
	for _, c := range forwardCases {
		req := c.req()
		name := kmsg.NameForKey(req.Key())
		f := newSeamFixture(t)
		f.controller.notController = true
		got := f.forwardTo(t, controllerAnswer)
		resp := f.do(t, req)
		if len(*got) != 1 || (*got)[0].Key() != req.Key() || (*got)[0].GetVersion() != req.GetVersion() {
			t.Errorf("%s v%d: the controller got %v", name, req.GetVersion(), *got)
			continue
		}
		wantCode(t, name, c.code(resp), kerr.PolicyViolation)

		// The controller does not answer: answered here, NOT_CONTROLLER.
		f.controller.forward = func(int16, int16, []byte) ([]byte, error) {
			return nil, errors.New("controller did not answer in time")
		}
		wantCode(t, name+", forwarding failed", c.code(f.do(t, req)), kerr.NotController)
	}
}

// TestNotForwarded: reads, and DeleteRecords (decided by the partition's
// leader), are answered here even when a controller elsewhere acts.
func TestNotForwarded(t *testing.T) {
	f := newSeamFixture(t)
	got := f.forwardTo(t, controllerAnswer)
	f.do(t, describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "t"))
	f.do(t, kmsg.NewPtrListPartitionReassignmentsRequest())
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.SetVersion(2)
	f.do(t, dr)
	if len(*got) != 0 {
		t.Errorf("forwarded %d requests, want none", len(*got))
	}
}

// TestServeForwarded: the acting controller serves a forwarded request
// with the handler its own clients get, encoded at the request's version;
// keys that are not forwarded and versions not served are refused.
func TestServeForwarded(t *testing.T) {
	f := newSeamFixture(t)
	ctx := context.Background()
	req := alterConfigsRequest(1, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "2000"))
	out, err := f.s.ServeForwarded(ctx, req.Key(), 1, req.AppendTo(nil), cluster.RequestOrigin{})
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(1)
	if err := resp.ReadFrom(out); err != nil {
		t.Fatalf("the answer does not decode at v1: %v", err)
	}
	wantCode(t, "t", resp.Resources[0].ErrorCode, nil)
	if len(f.controller.alters) != 1 || f.controller.alters[0].name != "t" {
		t.Errorf("controller asked %+v, want t's configs", f.controller.alters)
	}

	read := describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "t")
	if _, err := f.s.ServeForwarded(ctx, read.Key(), 4, read.AppendTo(nil), cluster.RequestOrigin{}); err == nil {
		t.Error("a forwarded DescribeConfigs was served")
	}
	if _, err := f.s.ServeForwarded(ctx, req.Key(), 9, req.AppendTo(nil), cluster.RequestOrigin{}); err == nil {
		t.Error("a forwarded AlterConfigs v9 was served")
	}
	if _, err := f.s.ServeForwarded(ctx, req.Key(), 1, []byte{0xff}, cluster.RequestOrigin{}); !errors.Is(err, ErrMalformedBody) {
		t.Errorf("a body that does not decode: %v, want ErrMalformedBody", err)
	}
}

// TestNotControllerRetried: a change answered NOT_CONTROLLER on every item
// (the controller stepped down mid-change) is sent again until the new
// controller answers, since clients do not all retry it; an answer that
// stays NOT_CONTROLLER past the budget reaches the client as it is.
func TestNotControllerRetried(t *testing.T) {
	for _, c := range forwardCases {
		req := c.req()
		name := kmsg.NameForKey(req.Key())
		f := newSeamFixture(t)
		f.s.cfg.NotControllerRetry = time.Minute
		f.controller.notController = true
		calls := 0
		got := f.forwardTo(t, func(r kmsg.Request) kmsg.Response {
			calls++
			if calls < 3 {
				return answerWith(r, kerr.NotController.Code)
			}
			return controllerAnswer(r)
		})
		resp := f.do(t, req)
		if len(*got) != 3 {
			t.Errorf("%s: the controller was asked %d times, want 3", name, len(*got))
		}
		if code := c.code(resp); code != kerr.PolicyViolation.Code {
			t.Errorf("%s: the client got %v, want the new controller's answer", name, kerr.ErrorForCode(code))
		}

		f = newSeamFixture(t)
		f.s.cfg.NotControllerRetry = 300 * time.Millisecond
		f.controller.notController = true
		got = f.forwardTo(t, func(r kmsg.Request) kmsg.Response { return answerWith(r, kerr.NotController.Code) })
		resp = f.do(t, req)
		if len(*got) < 2 {
			t.Errorf("%s: asked %d times within the budget, want a retry", name, len(*got))
		}
		if code := c.code(resp); code != kerr.NotController.Code {
			t.Errorf("%s: past the budget the client got %v, want NOT_CONTROLLER", name, kerr.ErrorForCode(code))
		}
	}
}

// TestPartlyNotControllerNotRetried: an answer with an item that took
// effect is not sent again, which would repeat that item.
func TestPartlyNotControllerNotRetried(t *testing.T) {
	f := newSeamFixture(t)
	f.s.cfg.NotControllerRetry = time.Minute
	f.controller.notController = true
	req := deleteTopicsRequest(6, "t", "u")
	got := f.forwardTo(t, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for i, code := range []int16{0, kerr.NotController.Code} {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr([]string{"t", "u"}[i]), code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
	resp := f.do(t, req).(*kmsg.DeleteTopicsResponse)
	if len(*got) != 1 || len(resp.Topics) != 2 || resp.Topics[1].ErrorCode != kerr.NotController.Code {
		t.Fatalf("asked %d times, answer %+v; want one ask and its answer as it is", len(*got), resp.Topics)
	}
}

// propagatingController is the fake controller with the ability to wait
// for a change to reach the other nodes: it records each wait.
type propagatingController struct {
	*fakeController
	waits []propagationWait
	lag   []int32
}

type propagationWait struct {
	offset  uint64
	timeout time.Duration
}

func (c *propagatingController) WaitPropagated(_ context.Context, offset uint64, timeout time.Duration) []int32 {
	c.waits = append(c.waits, propagationWait{offset, timeout})
	return c.lag
}

// TestChangeWaitsForPropagation: the answer to a metadata change, from a
// client or forwarded by another node, waits (ChangePropagator) for the
// image offset after the change, with the request's own timeout; a read,
// a change that only validates, and a controller without the ability do
// not wait. Nodes still lagging after the wait do not change the answer.
func TestChangeWaitsForPropagation(t *testing.T) {
	f := newSeamFixture(t)
	pc := &propagatingController{fakeController: f.controller}
	f.node.Controller = pc
	offset := f.metadata.image.Offset

	create := func(name string, validateOnly bool) *kmsg.CreateTopicsRequest {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(5)
		req.TimeoutMillis = 1500
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
		return req
	}
	resp := f.do(t, create("a", false)).(*kmsg.CreateTopicsResponse)
	wantCode(t, "create", resp.Topics[0].ErrorCode, nil)
	if want := []propagationWait{{offset, 1500 * time.Millisecond}}; !slices.Equal(pc.waits, want) {
		t.Fatalf("waits after a create: %v, want %v", pc.waits, want)
	}

	// Forwarded from another node: the same wait before the answer goes
	// back to it.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.SetVersion(1)
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	v := "1000"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "retention.ms", &v
	rr.Configs = append(rr.Configs, rc)
	alter.Resources = append(alter.Resources, rr)
	pc.lag = []int32{3} // still behind after the wait: answered anyway
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := f.s.ServeForwarded(ctx, alter.Key(), 1, alter.AppendTo(nil), cluster.RequestOrigin{}); err != nil {
		t.Fatalf("forwarded alter: %v", err)
	}
	if want := []propagationWait{{offset, 1500 * time.Millisecond}, {offset, 0}}; !slices.Equal(pc.waits, want) {
		t.Fatalf("waits after a forwarded alter: %v, want %v", pc.waits, want)
	}

	// Neither a validation nor a read waits.
	f.do(t, create("b", true))
	f.do(t, kmsg.NewPtrMetadataRequest())
	if len(pc.waits) != 2 {
		t.Fatalf("waits after a validation and a read: %v", pc.waits)
	}

	// A controller without the ability answers at once.
	f.node.Controller = f.controller
	resp = f.do(t, create("c", false)).(*kmsg.CreateTopicsResponse)
	wantCode(t, "create without propagation", resp.Topics[0].ErrorCode, nil)
}
