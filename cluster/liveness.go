package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The acting controller's liveness decisions, as a pure state machine: no
// clocks, goroutines or I/O. The driver (quorum_mode.go, maintain) feeds
// it the committed image, what this node heard from each broker and the
// time on the monotonic clock, and carries out the actions it returns
// through the controller's event loop, where the leader rules turn each
// into records against the image of the moment (so two actions of one
// round never validate against the same stale image).
//
// Times are durations since any fixed origin of the monotonic clock; only
// their differences matter.

// LivenessConfig are the settings the decisions depend on.
type LivenessConfig struct {
	// SessionTimeout is broker.session.timeout.ms: a broker silent for it
	// is fenced.
	SessionTimeout time.Duration
	// HeartbeatInterval is broker.heartbeat.interval.ms. A new controller
	// gives every broker at least one and a half of them (freshGrace)
	// before fencing it: a live broker that was heartbeating to the old
	// controller learns of the new one from its first election heartbeat
	// (a voter's ack of it is quorum traffic, heard within a round trip)
	// and sends its next broker heartbeat there within one interval.
	HeartbeatInterval time.Duration
	// RebalanceInterval is leader.imbalance.check.interval.seconds, 0 with
	// auto.leader.rebalance.enable off.
	RebalanceInterval time.Duration
}

// BrokerHeard is what this node heard from one broker.
type BrokerHeard struct {
	// Heartbeat is when its last broker heartbeat arrived; HeartbeatSeen
	// is false if none arrived since this node started.
	Heartbeat     time.Duration
	HeartbeatSeen bool
	// Registration, ShuttingDown and CatchingUp are what that heartbeat
	// carried: its listeners and rack; it asked for a controlled shutdown
	// (it stays fenced until it restarts); it has not caught up with the
	// metadata log since it started (it cannot lead yet).
	Registration BrokerRegistrationRecord
	ShuttingDown bool
	CatchingUp   bool
	// Quorum is when a metadata quorum message from it last arrived (a
	// voter's fetch, vote or heartbeat ack; the old controller's fetch
	// answers and heartbeats); QuorumSeen is false if none did.
	Quorum     time.Duration
	QuorumSeen bool
}

// lastHeard is the latest time anything arrived from the broker.
func (h BrokerHeard) lastHeard() (time.Duration, bool) {
	switch {
	case h.HeartbeatSeen && h.QuorumSeen:
		return max(h.Heartbeat, h.Quorum), true
	case h.HeartbeatSeen:
		return h.Heartbeat, true
	case h.QuorumSeen:
		return h.Quorum, true
	}
	return 0, false
}

// LivenessActionKind says what a LivenessAction does.
type LivenessActionKind uint8

const (
	// ActionClusterID records the cluster id of a new cluster.
	ActionClusterID LivenessActionKind = iota + 1
	// ActionRegister registers a new broker, or one whose rack or
	// listeners changed (fenced while it catches up or shuts down).
	ActionRegister
	// ActionUnfence unfences a broker that heartbeats, caught up.
	ActionUnfence
	// ActionFence fences a broker whose session expired, or that
	// restarted and has not caught up.
	ActionFence
	// ActionControlledShutdown moves leadership off a broker whose
	// heartbeats say it is shutting down, and fences it.
	ActionControlledShutdown
	// ActionRebalance runs the preferred-leader rebalance check.
	ActionRebalance
)

var livenessActionNames = map[LivenessActionKind]string{
	ActionClusterID: "cluster-id", ActionRegister: "register", ActionUnfence: "unfence", ActionFence: "fence",
	ActionControlledShutdown: "controlled-shutdown", ActionRebalance: "rebalance",
}

func (k LivenessActionKind) String() string { return livenessActionNames[k] }

// LivenessAction is one decision.
type LivenessAction struct {
	Kind   LivenessActionKind
	Broker int32
	// Registration for ActionRegister.
	Registration BrokerRegistrationRecord
	// SilentFor, for ActionFence of an expired session: how long nothing
	// was heard from the broker (from the moment this node became the
	// acting controller when it never heard from it).
	SilentFor time.Duration
	// Reason says why, for the log.
	Reason string
}

func (a LivenessAction) String() string {
	s := a.Kind.String()
	if a.Kind != ActionClusterID && a.Kind != ActionRebalance {
		s += fmt.Sprintf(" %d", a.Broker)
	}
	if a.Kind == ActionRegister {
		s += fmt.Sprintf(" fenced=%t", a.Registration.Fenced)
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	return s
}

// Liveness is the state the decisions keep between rounds: when this node
// became the acting controller, and when it last checked the leader
// balance.
type Liveness struct {
	cfg           LivenessConfig
	acting        bool
	actingSince   time.Duration
	lastRebalance time.Duration
}

// NewLiveness returns the decisions' state for a node that is not acting.
func NewLiveness(cfg LivenessConfig) *Liveness { return &Liveness{cfg: cfg} }

// freshGrace is the least time a new controller waits before fencing a
// broker it heard from before: one and a half heartbeat intervals (one,
// and half of one for the delays), at most a session. With the defaults
// (1 s, 4 s) and an election of about 2.3 s it ends before the dead old
// controller's session does, so it costs nothing there.
func (l *Liveness) freshGrace() time.Duration {
	return min(3*l.cfg.HeartbeatInterval/2, l.cfg.SessionTimeout)
}

// Decide is one round at time now. acting says whether this node is the
// acting controller; when it is not, nothing is decided and the next
// round that acts starts afresh. im is the committed image and heard what
// this node heard from each broker (itself included).
//
// The rules:
//   - a new cluster first gets its cluster id, and nothing else that round;
//   - a broker heard by heartbeat within the session is registered when
//     new or changed (fenced while it catches up or shuts down), unfenced
//     when fenced and neither catching up nor shutting down, moved off by
//     a controlled shutdown when its heartbeats ask for one, and fenced
//     when it restarted and has not caught up yet (it cannot lead);
//   - an unfenced broker is fenced when nothing (heartbeat or quorum
//     message) arrived from it for SessionTimeout. The session counts
//     from the last time this node heard it, also from before this node
//     became the acting controller (a dead old controller is fenced a
//     session after it went silent, not a session after its successor
//     took over), but never ends within freshGrace of taking over, so a
//     live broker still heartbeating to the old controller has time to
//     find the new one. A broker never heard gets a full session from
//     the takeover. A broker heard within the session is never fenced
//     for silence;
//   - every RebalanceInterval, counted from the takeover (brokers are
//     still rejoining ISRs then), a rebalance check.
func (l *Liveness) Decide(now time.Duration, acting bool, im *Image, heard map[int32]BrokerHeard) []LivenessAction {
	if !acting {
		l.acting = false
		return nil
	}
	if !l.acting {
		l.acting, l.actingSince, l.lastRebalance = true, now, now
	}
	if im.ClusterID == "" {
		return []LivenessAction{{Kind: ActionClusterID}}
	}
	var out []LivenessAction
	acted := map[int32]bool{}
	for _, id := range slices.Sorted(maps.Keys(heard)) {
		h := heard[id]
		if !h.HeartbeatSeen || now-h.Heartbeat > l.cfg.SessionTimeout {
			continue
		}
		reg := h.Registration
		reg.BrokerID = id
		b, ok := im.Broker(id)
		// A new broker starts fenced while it catches up or shuts down. A
		// known one keeps its state through a new registration: fencing
		// is the Fence action's, which moves its leaderships too (a
		// registration alone would leave it leading while fenced).
		reg.Fenced = h.CatchingUp || h.ShuttingDown
		if ok {
			reg.Fenced = b.Fenced
		}
		switch {
		case !ok || !sameListeners(b, &reg):
			out = append(out, LivenessAction{Kind: ActionRegister, Broker: id, Registration: reg, Reason: registerReason(ok)})
		case b.Fenced && !h.CatchingUp && !h.ShuttingDown:
			out = append(out, LivenessAction{Kind: ActionUnfence, Broker: id, Reason: "heard again, caught up"})
		case !b.Fenced && h.ShuttingDown:
			out = append(out, LivenessAction{Kind: ActionControlledShutdown, Broker: id, Reason: "its heartbeats ask for a controlled shutdown"})
		case !b.Fenced && h.CatchingUp:
			out = append(out, LivenessAction{Kind: ActionFence, Broker: id, Reason: "restarted, catching up with the metadata log"})
		default:
			continue
		}
		acted[id] = true
	}
	for _, b := range im.Brokers() {
		if b.Fenced || acted[b.ID] {
			continue
		}
		last, ok := heard[b.ID].lastHeard()
		expired := false
		switch {
		case !ok:
			last = l.actingSince
			expired = now-last > l.cfg.SessionTimeout
		default:
			expired = now-last > l.cfg.SessionTimeout && now-l.actingSince >= l.freshGrace()
		}
		if expired {
			out = append(out, LivenessAction{Kind: ActionFence, Broker: b.ID, SilentFor: now - last, Reason: "session expired"})
		}
	}
	if l.cfg.RebalanceInterval > 0 && now-l.lastRebalance >= l.cfg.RebalanceInterval {
		l.lastRebalance = now
		out = append(out, LivenessAction{Kind: ActionRebalance})
	}
	return out
}

func registerReason(known bool) string {
	if known {
		return "rack or listeners changed"
	}
	return "new broker"
}
