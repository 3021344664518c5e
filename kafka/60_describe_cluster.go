package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
// Not implemented:
// * ClusterAuthorizedOperations stays -2147483648 (not computed), asked
//   or not: there is no authorizer.
// * Fenced brokers (v2): fenced brokers are left out, as in Metadata.

// endpointTypeBroker and endpointTypeController are DescribeCluster's
// EndpointType values (KIP-919). Part of the wire protocol.
const (
	endpointTypeBroker     int8 = 1
	endpointTypeController int8 = 2
)

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
	n := s.node()
	c := n.Controller
	resp.ClusterID = c.ClusterID()
	resp.ControllerID = c.ControllerID()
	for _, id := range c.Brokers() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = id
		if id == c.NodeID() {
			b.Host, b.Port = n.Host, n.Port
		} else if host, port, ok := c.BrokerAddr(id, s.cfg.ListenerName); ok {
			b.Host, b.Port = host, port
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return Respond(resp), nil
}
