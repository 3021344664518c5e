package quorum

import (
	"fmt"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
)

// TCPTransport is the metadata quorum's Transport over the CONTROLLER
// listener: a client of the peer layer's message channel, whose frames
// with APIKeyMessage carry metalog messages and with APIKeyApp the
// cluster package's bodies.
type TCPTransport struct {
	layer *peer.Layer
	inbox chan metalog.Message
	onApp func(from election.NodeID, body []byte)
}

// NewTCPTransport registers the transport as l's message channel client;
// l is started by its owner after its clients have registered. onApp
// receives the bodies of APIKeyApp frames (the cluster's broker
// heartbeats and forwarded controller requests), on the connection's
// goroutine: it must not block. Nil drops them. Close closes l: the
// quorum's transport and the layer it runs on stop together, as the node
// leaves the cluster.
func NewTCPTransport(l *peer.Layer, onApp func(from election.NodeID, body []byte)) *TCPTransport {
	t := &TCPTransport{layer: l, inbox: make(chan metalog.Message, InboxCapacity), onApp: onApp}
	l.HandleMessages([]int16{APIKeyMessage, APIKeyApp}, t.receive)
	return t
}

// messageBody is a metalog message, encoded by the peer's sending
// goroutine.
type messageBody struct{ m metalog.Message }

func (b *messageBody) AppendBody(dst []byte) []byte { return AppendMessage(dst, b.m) }

// Send queues m for its peer; a full queue or an unknown peer drops it.
func (t *TCPTransport) Send(m metalog.Message) {
	t.layer.Send(m.To, APIKeyMessage, &messageBody{m: m})
}

// SendApp queues an APIKeyApp body for peer to, as Send does: it never
// blocks, and a full queue drops.
func (t *TCPTransport) SendApp(to election.NodeID, body []byte) {
	t.layer.Send(to, APIKeyApp, peer.Bytes(body))
}

// Connected reports whether this node's connection to peer id is up
// (peer.Layer.Connected).
func (t *TCPTransport) Connected(id election.NodeID) bool { return t.layer.Connected(id) }

// Receive is where messages from peers arrive.
func (t *TCPTransport) Receive() <-chan metalog.Message { return t.inbox }

// Stats is what the transport's layer sent and received since it
// started, by kind (StatsReporter).
func (t *TCPTransport) Stats() TransportStats {
	st := t.layer.Stats()
	conv := func(c peer.Counts) [numTrafficKinds]Traffic {
		var out [numTrafficKinds]Traffic
		out[TrafficHandshake] = Traffic(c.Handshake)
		out[TrafficMetalog] = Traffic(c.Messages[APIKeyMessage])
		out[TrafficApp] = Traffic(c.Messages[APIKeyApp])
		out[TrafficReplica] = Traffic(c.Replica)
		return out
	}
	return TransportStats{Sent: conv(st.Sent), Received: conv(st.Received)}
}

// Close closes the peer layer, with every connection and the listener.
func (t *TCPTransport) Close() error { return t.layer.Close() }

// receive takes a frame of the message channel; an error closes its
// connection.
func (t *TCPTransport) receive(from election.NodeID, key int16, body []byte) error {
	if key == APIKeyApp {
		if t.onApp != nil {
			t.onApp(from, body)
		}
		return nil
	}
	m, err := DecodeMessage(body)
	if err != nil {
		return err
	}
	if m.From != from || m.To != t.layer.ID() {
		return fmt.Errorf("quorum: node %d sent a message from %d to %d", from, m.From, m.To)
	}
	select {
	case t.inbox <- m:
	default: // the driver is behind: drop, the protocol resends
	}
	return nil
}
