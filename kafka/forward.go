package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// Forwarding: a request that changes metadata, sent to a node that is not
// the acting controller, goes to the controller over the CONTROLLER
// listener (cluster.Controller.ForwardRequest), and the client gets the
// controller's answer, so an admin tool works from any bootstrap node
// (Kafka forwards these with Envelope, KIP-590). The controller serves it
// with the same handler as its own clients (ServeForwarded), and never
// forwards it again. When forwarding fails (no controller known, the
// controller did not answer in time) the local handler answers, which is
// NOT_CONTROLLER from a node that is not the controller; an answer that
// is NOT_CONTROLLER on every item is sent again for a while (serve,
// below), as Kafka's forwarding retries, and past that the client
// refreshes its metadata and retries. On the acting controller the
// answer to a change waits until the other live nodes show it
// (handleChange, below), so the client reads its write from any node.
//
// Authorization: the forwarding node authorizes the request first (it has
// the same replicated ACLs) and forwards only what it allowed; a request
// it refused outright is answered here. The forwarded request carries the
// client's principal and host (cluster.RequestOrigin), and the controller
// authorizes it again with them, as Kafka's Envelope does; a request
// from a node too old to carry them is judged as User:ANONYMOUS.

// forwardedKeys are the keys whose requests change the metadata image,
// and DescribeQuorum, which only the acting controller answers for the
// whole quorum (55_describe_quorum.go). DeleteRecords is not one: it
// moves a partition's log start offset on the partition's leader, which
// answers NOT_LEADER_OR_FOLLOWER elsewhere.
var forwardedKeys = map[kmsg.Key]bool{
	kmsg.DescribeQuorum:            true,
	kmsg.CreateTopics:              true,
	kmsg.DeleteTopics:              true,
	kmsg.CreatePartitions:          true,
	kmsg.AlterConfigs:              true,
	kmsg.IncrementalAlterConfigs:   true,
	kmsg.ElectLeaders:              true,
	kmsg.AlterPartitionAssignments: true,
	kmsg.AlterUserSCRAMCredentials: true,
	kmsg.AlterClientQuotas:         true,
	kmsg.CreateACLs:                true,
	kmsg.DeleteACLs:                true,
}

// maybeForward forwards req to the acting controller when it should go
// there, and returns its answer; false when the local handler should
// answer.
func (s *Server) maybeForward(req *Request) (Pending, bool) {
	if !forwardedKeys[kmsg.Key(req.Header.ApiKey)] || req.CompatOnly || answeredHere(req) || internalSession(req) {
		// An internal session's request is judged here alone (the
		// controller would judge its principal by the ACLs).
		return nil, false
	}
	n := s.broker
	if n == nil || n.Controller == nil || !n.Controller.ShouldForward() {
		return nil, false
	}
	if namesOtherBroker(req.Body, n.Config.NodeID) {
		// As Kafka's brokers: configs of another broker are that broker's
		// to forward; the local handler refuses them.
		return nil, false
	}
	if !s.mayForward(req) {
		// Refused here: the local handler answers with the refusal.
		return nil, false
	}
	if resp, refused := s.checkStoresBeforeForward(req); refused {
		return Respond(resp), true
	}
	version := req.Header.ApiVersion
	origin := cluster.RequestOrigin{Principal: req.Session.Principal(), Host: req.Session.Host()}
	out, err := n.Controller.ForwardRequest(req.Session.Context(), req.Header.ApiKey, version, req.Body.AppendTo(nil), origin)
	if err != nil {
		s.log.Debug("forwarding to the controller failed; answering here", "api", kmsg.NameForKey(req.Header.ApiKey), "err", err)
		return nil, false
	}
	resp := req.Body.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(out); err != nil {
		s.log.Warn("the controller's answer to a forwarded request does not decode; answering here",
			"api", kmsg.NameForKey(req.Header.ApiKey), "version", version, "err", err)
		return nil, false
	}
	return Respond(resp), true
}

// ServeForwarded answers a request another node forwarded to this one
// (cluster.ForwardHandler): decoded and handled as on a client listener,
// the response encoded at the request's version.
func (s *Server) ServeForwarded(ctx context.Context, key, version int16, body []byte, origin cluster.RequestOrigin) ([]byte, error) {
	e := s.apis.lookup(key)
	if e == nil || !forwardedKeys[e.Key] {
		return nil, fmt.Errorf("kafka: key %d is not forwarded", key)
	}
	if version < e.MinServed || version < e.Min || version > e.Max {
		return nil, fmt.Errorf("kafka: forwarded %s v%d, served v%d-%d", e.Key.Name(), version, max(e.Min, e.MinServed), e.Max)
	}
	r := kmsg.RequestForKey(key)
	r.SetVersion(version)
	if err := r.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: forwarded %s v%d: %w", ErrMalformedBody, e.Key.Name(), version, err)
	}
	sess := &Session{ListenerName: forwardedListener, ctx: ctx, authenticated: true,
		principal: origin.Principal, host: origin.Host}
	p, err := s.handleChange(e, &Request{Header: RequestHeader{ApiKey: key, ApiVersion: version, ClientID: "forwarded"}, Body: r, Session: sess})
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("kafka: forwarded request got no answer")
	}
	resp, err := p(ctx)
	if err != nil {
		return nil, err
	}
	if resp.Msg == nil {
		return nil, errors.New("kafka: forwarded request got no answer")
	}
	return resp.Msg.AppendTo(nil), nil
}

// forwardedListener is the listener name of the sessions ServeForwarded
// makes.
const forwardedListener = "forwarded"

// isForwarded reports whether another node forwarded req here.
func isForwarded(req *Request) bool {
	return req.Session != nil && req.Session.ListenerName == forwardedListener
}

// namesOtherBroker reports whether an alter-configs request names a
// BROKER resource by an id other than self.
func namesOtherBroker(body kmsg.Request, self int32) bool {
	var names []string
	switch r := body.(type) {
	case *kmsg.AlterConfigsRequest:
		for _, rr := range r.Resources {
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				names = append(names, rr.ResourceName)
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				names = append(names, rr.ResourceName)
			}
		}
	}
	for _, name := range names {
		if name != "" && name != strconv.Itoa(int(self)) {
			return true
		}
	}
	return false
}

// A change that meets a controller election is answered NOT_CONTROLLER on
// every item: by this node when it was the controller and stepped down
// mid-change, or by the old controller it was forwarded to. Clients do not
// all retry that (franz-go treats a per-item NOT_CONTROLLER in
// AlterConfigs as final), and with Kafka they never see it, because a
// broker's forwarding retries until the controller answers. So a change
// answered NOT_CONTROLLER on every item is sent again, to whichever node
// is then the acting controller, for up to ServerConfig.NotControllerRetry
// (10 s: a controller election takes 2-3 s, and clients wait 30 s). An
// answer with any other item is returned as it is: a retry of the whole
// request would repeat the items that took effect.
const (
	defaultNotControllerRetry = 10 * time.Second
	notControllerRetryBackoff = 200 * time.Millisecond
)

// serve answers req: forwarded to the acting controller or handled here,
// and sent again while every item is NOT_CONTROLLER (see above).
func (s *Server) serve(e *apiEntry, req *Request) (Pending, error) {
	first, err := s.serveOnce(e, req)
	budget := s.cfg.NotControllerRetry
	if budget == 0 {
		budget = defaultNotControllerRetry
	}
	if err != nil || budget < 0 || !forwardedKeys[e.Key] || e.Key == kmsg.DescribeQuorum {
		return first, err
	}
	return func(ctx context.Context) (Response, error) {
		deadline := time.Now().Add(budget)
		p := first
		for attempt := 1; ; attempt++ {
			resp, err := p(ctx)
			if err != nil || resp.Msg == nil || !allNotController(resp.Msg) || !time.Now().Before(deadline) {
				return resp, err
			}
			t := time.NewTimer(notControllerRetryBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return resp, nil
			case <-t.C:
			}
			s.log.Debug("the controller changed during a metadata change; sending it again",
				"api", e.Key.Name(), "attempt", attempt+1)
			next, err := s.serveOnce(e, req)
			if err != nil {
				return resp, nil
			}
			p = next
		}
	}, nil
}

// serveOnce forwards req to the acting controller when it should go
// there, else hands it to its handler.
func (s *Server) serveOnce(e *apiEntry, req *Request) (Pending, error) {
	if p, ok := s.maybeForward(req); ok {
		return p, nil
	}
	return s.handleChange(e, req)
}

// handleChange hands req to its handler and, for a metadata change,
// holds the answer until the other nodes show the change (read your
// writes across nodes, cluster/propagation.go): a client that created a
// topic, changed a config or added partitions through any node finds the
// change in the Metadata and Describe answers of every node it asks next.
// Only the acting controller waits (ChangePropagator returns at once
// elsewhere); a node that forwarded the change waits for its own image
// (cluster.Controller.ForwardRequest), after the controller waited for
// every node. A change that only validated changes nothing and does not
// wait.
func (s *Server) handleChange(e *apiEntry, req *Request) (Pending, error) {
	p, err := e.Handle(s, req)
	if err != nil || p == nil || !forwardedKeys[e.Key] || e.Key == kmsg.DescribeQuorum {
		return p, err
	}
	n := s.node()
	if n == nil || n.Metadata == nil {
		return p, nil
	}
	w, ok := n.Controller.(ChangePropagator)
	if !ok {
		return p, nil
	}
	timeout, validateOnly := changeTimeout(req.Body)
	if validateOnly {
		return p, nil
	}
	return func(ctx context.Context) (Response, error) {
		resp, err := p(ctx)
		if err != nil || resp.Msg == nil {
			return resp, err
		}
		offset := n.Metadata.Image().Offset
		if lag := w.WaitPropagated(ctx, offset, timeout); len(lag) > 0 {
			s.log.Warn("answering a metadata change before every node applied it; they may show the older state until they catch up",
				"api", e.Key.Name(), "offset", offset, "lagging_nodes", fmt.Sprint(lag))
		}
		return resp, nil
	}, nil
}

// changeTimeout is a metadata change's own timeout (0 when the request
// has none) and whether it only validates.
func changeTimeout(body kmsg.Request) (time.Duration, bool) {
	ms := func(v int32) time.Duration { return time.Duration(max(v, 0)) * time.Millisecond }
	switch r := body.(type) {
	case *kmsg.CreateTopicsRequest:
		return ms(r.TimeoutMillis), r.ValidateOnly
	case *kmsg.DeleteTopicsRequest:
		return ms(r.TimeoutMillis), false
	case *kmsg.CreatePartitionsRequest:
		return ms(r.TimeoutMillis), r.ValidateOnly
	case *kmsg.AlterConfigsRequest:
		return 0, r.ValidateOnly
	case *kmsg.IncrementalAlterConfigsRequest:
		return 0, r.ValidateOnly
	case *kmsg.ElectLeadersRequest:
		return ms(r.TimeoutMillis), false
	case *kmsg.AlterPartitionAssignmentsRequest:
		return ms(r.TimeoutMillis), false
	case *kmsg.AlterClientQuotasRequest:
		return 0, r.ValidateOnly
	}
	return 0, false
}

// allNotController reports whether a metadata change's answer is
// NOT_CONTROLLER on every item it has (and has at least one).
func allNotController(msg kmsg.Response) bool {
	nc := kerr.NotController.Code
	var codes []int16
	switch r := msg.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, res := range r.Results {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, res := range r.Entries {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.CreateACLsResponse:
		for _, res := range r.Results {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.DeleteACLsResponse:
		for _, res := range r.Results {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			codes = append(codes, res.ErrorCode)
		}
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode == nc
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode == nc
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	}
	for _, c := range codes {
		if c != nc {
			return false
		}
	}
	return len(codes) > 0
}

// mayForward reports whether the principal may do at least one item of a
// request this node would forward: the controller authorizes each item
// again and refuses the rest, so a request this node refuses whole never
// leaves it, and its local handler answers the refusals. Without
// authorization everything is forwarded.
func (s *Server) mayForward(req *Request) bool {
	z := s.authz(req)
	if !z.on() {
		return true
	}
	cl := func(op kmsg.ACLOperation) bool { return z.check(op, kmsg.ACLResourceTypeCluster, ClusterResourceName) }
	topic := func(op kmsg.ACLOperation, name string) bool { return z.check(op, kmsg.ACLResourceTypeTopic, name) }
	config := func(t kmsg.ConfigResourceType, name string) bool {
		rt, rname, _, ok := configResource(t, name)
		return !ok || z.check(kmsg.ACLOperationAlterConfigs, rt, rname)
	}
	switch r := req.Body.(type) {
	case *kmsg.DescribeQuorumRequest:
		return cl(kmsg.ACLOperationDescribe)
	case *kmsg.AlterClientQuotasRequest:
		return cl(kmsg.ACLOperationAlterConfigs)
	case *kmsg.ElectLeadersRequest, *kmsg.AlterPartitionAssignmentsRequest, *kmsg.AlterUserSCRAMCredentialsRequest,
		*kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest:
		return cl(kmsg.ACLOperationAlter)
	case *kmsg.CreateTopicsRequest:
		if cl(kmsg.ACLOperationCreate) {
			return true
		}
		for _, t := range r.Topics {
			if topic(kmsg.ACLOperationCreate, t.Topic) {
				return true
			}
		}
	case *kmsg.DeleteTopicsRequest:
		if r.Version < 6 {
			for _, name := range r.TopicNames {
				if topic(kmsg.ACLOperationDelete, name) {
					return true
				}
			}
			return false
		}
		im := s.node().Metadata.Image()
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if ti := im.TopicByID(cluster.UUID(t.TopicID)); ti != nil {
				name = ti.Name
			}
			// An id this node cannot resolve may resolve on the
			// controller, which judges it.
			if name == "" || topic(kmsg.ACLOperationDelete, name) {
				return true
			}
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			if topic(kmsg.ACLOperationAlter, t.Topic) {
				return true
			}
		}
	case *kmsg.AlterConfigsRequest:
		for _, rr := range r.Resources {
			if config(rr.ResourceType, rr.ResourceName) {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			if config(rr.ResourceType, rr.ResourceName) {
				return true
			}
		}
	default:
		return true
	}
	return false
}
