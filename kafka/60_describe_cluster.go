package kafka

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/health"
)

// DescribeCluster: v0-1
//
// Behavior:
// * The cluster id, the acting controller's id (-1 during an election)
//   and every live node, as Metadata lists them: this node with the host
//   and port it advertises on this listener, the others at the listener
//   they registered in the metadata log; racks are null (wren has no
//   broker.rack).
// * EndpointType (v1): this is a broker endpoint (1). Asking for the
//   controllers (2) is MISMATCHED_ENDPOINT_TYPE, an unknown type
//   UNSUPPORTED_ENDPOINT_TYPE, each INVALID_REQUEST in v0, with Kafka's
//   messages.
//
// * wren's own: a request carrying the tagged field controlPlaneTag gets,
//   in the same tag of the response, this node's judgement of the
//   cluster's health with the facts behind it (health.ClusterHealth as JSON,
//   what /v1/cluster/health answers: nodes down and fenced, the control
//   plane's facts that no Kafka API carries such as the controller's
//   epoch and the data-loss ledger, and what each node reported about
//   its own log dir and damaged replicas), for `wren cluster health`.
//   Before this node knows (while it starts) the tag holds only
//   health.ControlPlane. Kafka clients send no such tag and ignore the ones
//   they do not know.
// * Authorization: DESCRIBE on the cluster, or CLUSTER_AUTHORIZATION_FAILED;
//   the cluster's authorized operations computed when asked.
//
// Not implemented:
// * Fenced brokers (v2): fenced brokers are left out, as in Metadata.

// endpointTypeBroker and endpointTypeController are DescribeCluster's
// EndpointType values (KIP-919). Part of the wire protocol.
const (
	endpointTypeBroker     int8 = 1
	endpointTypeController int8 = 2
)

// ControlPlaneTag is the tagged field of DescribeCluster in which wren
// answers with health.ControlPlane when the request carries it (any value).
// Far above the tags Kafka assigns (from 0 up). Part of the wire format.
const ControlPlaneTag uint32 = 0x7772656e // "wren"

// ControlPlaneFacts are the control plane's facts from c's committed
// image, for DescribeCluster's tag and /v1/cluster/health.
func ControlPlaneFacts(c Metadata) health.ControlPlane {
	im := c.Image()
	f := health.ControlPlane{ControllerEpoch: c.ControllerEpoch(), MetadataOffset: im.Offset}
	for _, b := range im.Brokers() {
		if b.Fenced {
			f.FencedNodes = append(f.FencedNodes, b.ID)
		}
	}
	for _, e := range im.DataLossLedger() {
		f.DataLossLedger = append(f.DataLossLedger, health.DataLoss{MetadataOffset: e.Offset, Topic: e.Topic, Partition: e.Partition,
			LeaderEpoch: e.LeaderEpoch, PreviousLeader: e.PreviousLeader, NewLeader: e.NewLeader, PreviousISR: e.PreviousISR,
			Reason: e.Reason, FromOffset: e.FromOffset, ToOffset: e.ToOffset})
	}
	return f
}

func (s *Server) handleDescribeCluster(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	switch r.EndpointType {
	case endpointTypeBroker:
	case endpointTypeController:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Unsupported endpoint type %d", r.EndpointType))
	}
	if resp.ErrorCode != 0 {
		if r.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		return Respond(resp), nil
	}
	az := s.authz(req)
	if !az.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = az.operations(kmsg.ACLResourceTypeCluster, ClusterResourceName)
	}
	n := s.node()
	c := n.Metadata
	resp.ClusterID = c.ClusterID()
	resp.ControllerID = c.ControllerID()
	lname, lhost, lport := s.listenerOf(req.Session)
	for _, id := range c.Brokers() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = id
		if id == c.NodeID() {
			b.Host, b.Port = lhost, lport
		} else if host, port, ok := c.BrokerAddr(id, lname); ok {
			b.Host, b.Port = host, port
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	if tagged(&r.UnknownTags, ControlPlaneTag) {
		var v any = ControlPlaneFacts(c)
		if n.Health != nil {
			if h, ok := n.Health(); ok {
				v = h
			}
		}
		facts, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		resp.UnknownTags.Set(ControlPlaneTag, facts)
	}
	return Respond(resp), nil
}

// tagged reports whether tags holds key.
func tagged(tags *kmsg.Tags, key uint32) bool {
	found := false
	tags.Each(func(k uint32, _ []byte) { found = found || k == key })
	return found
}
