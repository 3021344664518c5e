package peer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// The internal API keys of the layer itself. They sit far above Kafka's
// own keys, so no Kafka client or tool ever sends one, and a client
// listener refuses them as it refuses any unknown key (it closes the
// connection). A client of the message channel picks its own keys
// (cluster/quorum's are 32001 and 32002). Part of the wire format; never
// renumber.
const (
	// APIKeyHandshake opens every message channel connection: the dialer
	// says who it is, which cluster it belongs to and which peer set it
	// was given; the listener answers with its own and refuses a
	// mismatch.
	APIKeyHandshake int16 = 32000
	// APIKeyReplicaHandshake opens a replica connection: the same body
	// and checks as APIKeyHandshake, after which the connection carries
	// Kafka requests and their responses, each answered in order.
	APIKeyReplicaHandshake int16 = 32003
)

// DefaultMaxFrameBytes bounds one frame on a peer connection, either way.
const DefaultMaxFrameBytes = 16 << 20

// PeerSetHash is a short hash of the voters as id@host:port, sorted by
// id: two nodes whose controller.quorum.voters differ (a node missing, a
// port changed) refuse to talk rather than elect from different peer sets.
func PeerSetHash(voters map[election.NodeID]string) string {
	ids := make([]election.NodeID, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d@%s,", id, voters[id])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Handshake is the body of APIKeyHandshake, request and response alike.
type Handshake struct {
	ClusterID   string // "" when this node has not learnt it yet
	PeerSetHash string
	From, To    election.NodeID
	// ErrorCode and ErrorMessage: a response that refuses (0 = accepted).
	ErrorCode    int16
	ErrorMessage string
}

// Kafka's INCONSISTENT_CLUSTER_ID and INCONSISTENT_VOTER_SET codes, which
// say the same thing in KRaft.
const (
	errInconsistentClusterID int16 = 104
	errInconsistentVoterSet  int16 = 94
	// errDuplicateNodeID is Kafka's DUPLICATE_BROKER_REGISTRATION: the
	// dialer claims the id of the node it dialed (identity.go).
	errDuplicateNodeID int16 = 101
	// errClusterAuthorizationFailed is Kafka's CLUSTER_AUTHORIZATION_FAILED:
	// the dialer's certificate does not name the node it claims to be, or
	// it spoke plaintext to a TLS listener (tls.go).
	errClusterAuthorizationFailed int16 = 31
)

// AppendHandshake appends the handshake body. Layout, part of the wire
// format: cluster id, peer-set hash (int16-length strings), from, to
// (int32), error code (int16), error message.
func AppendHandshake(dst []byte, h Handshake) []byte {
	e := wire.Encoder{B: dst}
	e.String(h.ClusterID)
	e.String(h.PeerSetHash)
	e.Int32(int32(h.From))
	e.Int32(int32(h.To))
	e.Int16(h.ErrorCode)
	e.String(h.ErrorMessage)
	return e.B
}

// DecodeHandshake reads a handshake body.
func DecodeHandshake(b []byte) (Handshake, error) {
	d := wire.NewDecoder(b)
	h := Handshake{ClusterID: d.String(), PeerSetHash: d.String(), From: election.NodeID(d.Int32()), To: election.NodeID(d.Int32()),
		ErrorCode: d.Int16(), ErrorMessage: d.String()}
	if err := d.Finish(); err != nil {
		return Handshake{}, fmt.Errorf("peer: handshake: %w", err)
	}
	return h, nil
}
