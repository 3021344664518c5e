package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Forwarding: a request that changes metadata, sent to a node that is not
// the acting controller, goes to the controller over the CONTROLLER
// listener (cluster.Controller.ForwardRequest), and the client gets the
// controller's answer, so an admin tool works from any bootstrap node
// (Kafka forwards these with Envelope, KIP-590). The controller serves it
// with the same handler as its own clients (ServeForwarded), and never
// forwards it again. When forwarding fails (no controller known, the
// controller did not answer in time) the local handler answers, which is
// NOT_CONTROLLER from a node that is not the controller: the client
// refreshes its metadata and retries, as it does with Kafka.
//
// Not implemented:
// * The client's principal is not carried (no ACLs yet): the controller
//   serves a forwarded request as an authenticated session.

// forwardedKeys are the keys whose requests change the metadata image.
// DeleteRecords is not one: it moves a partition's log start offset on
// the partition's leader, which answers NOT_LEADER_OR_FOLLOWER elsewhere.
var forwardedKeys = map[kmsg.Key]bool{
	kmsg.CreateTopics:              true,
	kmsg.DeleteTopics:              true,
	kmsg.CreatePartitions:          true,
	kmsg.AlterConfigs:              true,
	kmsg.IncrementalAlterConfigs:   true,
	kmsg.ElectLeaders:              true,
	kmsg.AlterPartitionAssignments: true,
}

// maybeForward forwards req to the acting controller when it should go
// there, and returns its answer; false when the local handler should
// answer.
func (s *Server) maybeForward(req *Request) (Pending, bool) {
	if !forwardedKeys[kmsg.Key(req.Header.ApiKey)] || req.CompatOnly {
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
	version := req.Header.ApiVersion
	out, err := n.Controller.ForwardRequest(req.Session.Context(), req.Header.ApiKey, version, req.Body.AppendTo(nil))
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
func (s *Server) ServeForwarded(ctx context.Context, key, version int16, body []byte) ([]byte, error) {
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
	sess := &Session{ListenerName: forwardedListener, ctx: ctx, authenticated: true}
	p, err := e.Handle(s, &Request{Header: RequestHeader{ApiKey: key, ApiVersion: version, ClientID: "forwarded"}, Body: r, Session: sess})
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
