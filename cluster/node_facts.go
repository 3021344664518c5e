package cluster

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/wren-broker/wren/election"
)

// Node facts are what only one node knows about itself and no metadata
// record carries: whether its log dir failed or sits below its free-space
// floor, which of its partitions hold damaged data. Every node sends its
// own to every peer once per broker.heartbeat.interval.ms (appNodeFacts),
// and keeps the latest it heard from each, so that any node can answer
// for the whole cluster (/v1/cluster/health) from what it holds, without
// asking anyone while it answers. The body is opaque here: the broker
// fills and reads it (health.NodeFacts).

// appNodeFacts is the app message kind that carries a node's facts.
const appNodeFacts = "node_facts"

// maxNodeFactsBytes bounds one node's facts as sent and as kept.
const maxNodeFactsBytes = 64 << 10

// nodeFacts is what this node sends and what it heard from its peers.
type nodeFacts struct {
	mu sync.Mutex
	// local returns this node's facts; nil until SetNodeFacts.
	local func() []byte
	// heard is the last body heard from each peer, and when.
	heard map[int32]heardFacts
}

type heardFacts struct {
	at   time.Time
	body []byte
}

// SetNodeFacts sets what this node tells its peers about itself: fn is
// called once per broker.heartbeat.interval.ms and must not block. A body
// over 64 KiB is not sent. With one voter there is no one to tell.
func (c *Controller) SetNodeFacts(fn func() []byte) {
	c.q.facts.mu.Lock()
	c.q.facts.local = fn
	c.q.facts.mu.Unlock()
}

// PeerNodeFacts returns the latest facts each peer sent about itself,
// heard within maxAge, by node id. A peer not heard that long is left
// out: what it said may no longer hold, and the controller fences a
// broker silent for broker.session.timeout.ms anyway.
func (c *Controller) PeerNodeFacts(maxAge time.Duration) map[int32][]byte {
	out := map[int32][]byte{}
	f := &c.q.facts
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, h := range f.heard {
		if time.Since(h.at) <= maxAge {
			out[id] = h.body
		}
	}
	return out
}

// heardNodeFacts keeps a peer's facts. It runs on the transport's
// goroutine.
func (c *Controller) heardNodeFacts(from int32, body []byte) {
	if len(body) > maxNodeFactsBytes || from == c.cfg.NodeID {
		return
	}
	f := &c.q.facts
	f.mu.Lock()
	if f.heard == nil {
		f.heard = map[int32]heardFacts{}
	}
	f.heard[from] = heardFacts{at: time.Now(), body: body}
	f.mu.Unlock()
}

// sendNodeFacts sends this node's facts to every other voter once per
// broker heartbeat interval, until the controller closes. SendApp never
// blocks: a peer that is down or slow loses the message, and hears the
// next one.
func (c *Controller) sendNodeFacts() {
	q := c.q
	defer q.wg.Done()
	t := time.NewTicker(q.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		q.facts.mu.Lock()
		fn := q.facts.local
		q.facts.mu.Unlock()
		if fn == nil {
			continue
		}
		body := fn()
		if len(body) > maxNodeFactsBytes {
			q.log.Warn("metadata quorum: this node's facts are too large to send", "bytes", len(body), "limit", maxNodeFactsBytes)
			continue
		}
		msg, err := json.Marshal(appMessage{Kind: appNodeFacts, Body: body})
		if err != nil {
			continue
		}
		for _, id := range c.cfg.Voters {
			if id != c.cfg.NodeID {
				q.cfg.SendApp(election.NodeID(id), msg)
			}
		}
	}
}
