package quorum

import "github.com/wren-broker/wren/peer"

// TrafficKind is what a frame on the CONTROLLER listener carries, for the
// transport's counters: the control plane's own traffic (handshakes,
// metalog messages, app bodies) apart from the followers' replication
// (replica connections), which an idle cluster also carries.
type TrafficKind int

const (
	// TrafficHandshake: the first frame of every connection and its answer.
	TrafficHandshake TrafficKind = iota
	// TrafficMetalog: metalog messages (votes, heartbeats, fetches of the
	// metadata log and their answers).
	TrafficMetalog
	// TrafficApp: app bodies (broker heartbeats, forwarded requests and
	// their answers).
	TrafficApp
	// TrafficReplica: requests and responses on replica connections
	// (followers fetching partitions from their leaders).
	TrafficReplica
	numTrafficKinds
)

// String is the kind's label in metrics.
func (k TrafficKind) String() string {
	switch k {
	case TrafficHandshake:
		return "handshake"
	case TrafficMetalog:
		return "metalog"
	case TrafficApp:
		return "app"
	case TrafficReplica:
		return "replica"
	}
	return "unknown"
}

// Traffic counts frames and their bytes, the 4-byte size prefix and the
// request or response header included (what the socket carries, less
// TCP's own overhead).
type Traffic = peer.Traffic

// TransportStats is what a transport sent and received since it started,
// by kind (indexed by TrafficKind), over every connection it dialed or
// accepted.
type TransportStats struct {
	Sent, Received [numTrafficKinds]Traffic
}

// Kinds lists every TrafficKind, in order.
func Kinds() []TrafficKind {
	return []TrafficKind{TrafficHandshake, TrafficMetalog, TrafficApp, TrafficReplica}
}

// StatsReporter is an optional ability of a Transport: counting its
// traffic. TCPTransport has it; MemNetwork's transports do not.
type StatsReporter interface {
	Stats() TransportStats
}
