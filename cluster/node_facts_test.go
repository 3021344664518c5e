package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Every node hears every other's facts, whoever is the controller; a
// node that stops sending ages out; a body over the limit is neither sent
// nor kept.
func TestNodeFactsReachEveryPeer(t *testing.T) {
	voters, nodes := listenQuorumNodes(t, 3)
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
		body := []byte(fmt.Sprintf(`{"node":%d}`, n.id))
		n.c.SetNodeFacts(func() []byte { return body })
	}
	defer func() {
		for _, n := range nodes {
			n.c.Close()
		}
	}()
	pollUntil(t, "every node to hear the two others", 10*time.Second, func() bool {
		for _, n := range nodes {
			got := n.c.PeerNodeFacts(time.Minute)
			if len(got) != 2 {
				return false
			}
			for id, body := range got {
				if id == n.id || string(body) != fmt.Sprintf(`{"node":%d}`, id) {
					t.Fatalf("node %d heard %q as node %d's facts", n.id, body, id)
				}
			}
		}
		return true
	})
	// Node 3's facts grow past the limit: they are not sent, so they age
	// out at its peers, and a forged one is not kept.
	big := []byte(strings.Repeat("x", maxNodeFactsBytes+1))
	nodes[2].c.SetNodeFacts(func() []byte { return big })
	pollUntil(t, "node 3's facts to age out at node 1", 10*time.Second, func() bool {
		_, ok := nodes[0].c.PeerNodeFacts(200 * time.Millisecond)[3]
		return !ok
	})
	nodes[0].c.heardNodeFacts(3, big)
	if got := nodes[0].c.PeerNodeFacts(time.Minute)[3]; len(got) > maxNodeFactsBytes {
		t.Fatalf("node 1 kept %d bytes of facts, limit %d", len(got), maxNodeFactsBytes)
	}
}
