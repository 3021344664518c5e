package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/peer"
)

// The CONTROLLER listener's internal keys (peer, cluster/quorum) are served only on
// the CONTROLLER listener: a client listener closes a connection that
// sends one, as it does for any key it does not know.
func TestClientListenerRefusesQuorumKeys(t *testing.T) {
	bodies := map[int16][]byte{
		peer.APIKeyHandshake: peer.AppendHandshake(nil, peer.Handshake{ClusterID: "c", PeerSetHash: "h", From: 2, To: 1}),
		quorum.APIKeyMessage: quorum.AppendMessage(nil, metalog.Message{Type: metalog.MsgFetch, From: 2, To: 1, Epoch: 1}),
		quorum.APIKeyApp:     []byte(`{"kind":"heartbeat"}`),
	}
	for key, body := range bodies {
		s := startServer(t, ServerConfig{ListenerName: "PLAINTEXT"}, apiTable[:])
		c := dial(t, s.addr)
		c.send(frame(header(kmsg.Key(key), 0, 1, "wren-quorum-2", nil), body))
		c.expectClosed()
		s.logs.waitClosedWith(t, ErrUnknownAPIKey)
	}
}
