package quorum

import (
	"sync"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
)

// Transport carries metalog messages between voters. Messages may be lost,
// duplicated or reordered; the metadata log tolerates all three, so a
// transport never blocks its caller and drops rather than queue without
// bound.
type Transport interface {
	// Send hands m to the voter m.To. It does not block.
	Send(m metalog.Message)
	// Receive is where messages for this node arrive.
	Receive() <-chan metalog.Message
	// Close stops the transport; Receive is not closed.
	Close() error
}

// InboxCapacity bounds the messages waiting for a driver. A burst beyond
// it is dropped: the protocol resends what matters (fetches time out,
// heartbeats repeat).
const InboxCapacity = 1024

// MemNetwork connects in-process nodes, for tests: each Join gets a
// Transport, and a node that joins again (a restart) replaces its previous
// incarnation.
type MemNetwork struct {
	mu    sync.Mutex
	nodes map[election.NodeID]*memTransport
	cut   map[[2]election.NodeID]bool
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[election.NodeID]*memTransport{}, cut: map[[2]election.NodeID]bool{}}
}

// Join connects node id and returns its transport.
func (n *MemNetwork) Join(id election.NodeID) Transport {
	t := &memTransport{net: n, id: id, inbox: make(chan metalog.Message, InboxCapacity)}
	n.mu.Lock()
	n.nodes[id] = t
	n.mu.Unlock()
	return t
}

// Isolate drops every message to and from id until Heal.
func (n *MemNetwork) Isolate(id election.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for other := range n.nodes {
		n.cut[[2]election.NodeID{id, other}] = true
		n.cut[[2]election.NodeID{other, id}] = true
	}
}

// Heal restores every link.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

type memTransport struct {
	net    *MemNetwork
	id     election.NodeID
	inbox  chan metalog.Message
	closed bool
}

func (t *memTransport) Send(m metalog.Message) {
	t.net.mu.Lock()
	dst := t.net.nodes[m.To]
	ok := dst != nil && !dst.closed && !t.closed && !t.net.cut[[2]election.NodeID{t.id, m.To}]
	t.net.mu.Unlock()
	if !ok {
		return
	}
	select {
	case dst.inbox <- m:
	default:
	}
}

func (t *memTransport) Receive() <-chan metalog.Message { return t.inbox }

func (t *memTransport) Close() error {
	t.net.mu.Lock()
	t.closed = true
	if t.net.nodes[t.id] == t {
		delete(t.net.nodes, t.id)
	}
	t.net.mu.Unlock()
	return nil
}
