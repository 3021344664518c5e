package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The acting controller's liveness decisions, as a pure state machine: no
// clocks, goroutines or I/O. The driver (quorum_liveness.go, maintain) feeds
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
	// CleanShutdown and BrokerEpoch are what that heartbeat carried about
	// its incarnation (Registration.IncarnationID): whether the process
	// before it shut down cleanly (its data directory's clean-shutdown
	// marker), and the epoch of its own registration once its image shows
	// it (0 before: it was never registered).
	CleanShutdown bool
	BrokerEpoch   uint64
	// LogDir is what that heartbeat said of the broker's log dir:
	// LogDir.Offline while it takes no writes (below its free-space
	// floor, or failed), with the reason and the broker's figures.
	LogDir BrokerLogDir
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
	// ActionClusterID records the cluster id and the cluster secret of a
	// new cluster, or the secret alone in a cluster from before secrets.
	ActionClusterID LivenessActionKind = iota + 1
	// ActionRegister registers a new broker, one whose rack or listeners
	// changed (fenced while it catches up or shuts down), or a new
	// incarnation of a known one; Unclean takes that one out of every ISR
	// and ELR in the same entry.
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
	// ActionLogDirOffline records that a broker's log dir takes no
	// writes (LogDir) and moves it out of every ISR and its leaderships
	// to in-sync replicas that can write (LogDirRecords); again while it
	// kept a partition that such a replica may now take.
	ActionLogDirOffline
	// ActionLogDirOnline records that its log dir takes writes again.
	ActionLogDirOnline
)

var livenessActionNames = map[LivenessActionKind]string{
	ActionClusterID: "cluster-id", ActionRegister: "register", ActionUnfence: "unfence", ActionFence: "fence",
	ActionControlledShutdown: "controlled-shutdown", ActionRebalance: "rebalance",
	ActionLogDirOffline: "log-dir-offline", ActionLogDirOnline: "log-dir-online",
}

func (k LivenessActionKind) String() string { return livenessActionNames[k] }

// LivenessAction is one decision.
type LivenessAction struct {
	Kind   LivenessActionKind
	Broker int32
	// Registration for ActionRegister.
	Registration BrokerRegistrationRecord
	// Unclean, for ActionRegister: a new incarnation whose previous one
	// did not shut down cleanly, so it may lack records it acknowledged
	// (KIP-966): the registration applies UncleanShutdownChanges.
	Unclean bool
	// LogDir, for ActionLogDirOffline and ActionLogDirOnline: the state
	// to record, as the broker's heartbeat said it.
	LogDir BrokerLogDir
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
		if a.Unclean {
			s += " unclean"
		}
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
	// replaced holds, per broker, the incarnations this node saw replaced
	// by a newer one while acting (at most maxReplaced, the latest): a
	// heartbeat of one of them is stale even before it learnt its broker
	// epoch, such as one still in flight from a process that died.
	replaced map[int32][]UUID
}

// maxReplaced bounds Liveness.replaced per broker: a heartbeat still in
// flight from a dead process comes from one of its last incarnations.
const maxReplaced = 4

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
//   - a new cluster first gets its cluster id and its secret, and nothing
//     else that round; so does a cluster without a secret (recorded
//     before secrets existed) get its secret;
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
//   - a heartbeat from another incarnation than the registered one
//     registers it (a restart), unless it is stale (StaleHeartbeat, or an
//     incarnation this node saw replaced): a stale one is ignored and
//     keeps no session alive. A new incarnation keeps the broker's
//     fencing, unless its predecessor shut down uncleanly without durable
//     acks (the AcksDurable of its predecessor's registration): then it
//     may lack records it acknowledged, so the registration takes it out
//     of every ISR and ELR (electing elsewhere where it led) and fences it
//     while it catches up, whether or not its session expired (KIP-966).
//     Under log.flush.policy ack a crash loses nothing
//     acknowledged, nor anything a follower holds (followers fetch only
//     what their leader synced), so the rule would only take partitions
//     offline: a power loss of every node at once would leave each
//     partition's ISR and ELR empty. A broker whose registration predates
//     incarnations is taken at its word once: it wrote no clean-shutdown
//     marker to go by;
//   - a broker heard by heartbeat within the session whose heartbeats
//     report its log dir taking no writes (below its free-space floor, or
//     failed) while the image does not, or the other way round, gets the
//     new state recorded, before any unfencing; while it stays offline and
//     unfenced, it is moved again whenever it follows in an ISR or leads a
//     partition that a live ISR member that can write may take
//     (LogDirMovable). What moving means is LogDirRecords': out of every
//     ISR, leaderships to in-sync replicas that can write, kept where none
//     can (reads go on, writes are refused); the broker takes its
//     preferred leaderships back by the rebalance once it is writable and
//     in the ISR again;
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
	if im.ClusterID == "" || !im.HasClusterSecret() {
		return []LivenessAction{{Kind: ActionClusterID}}
	}
	var out []LivenessAction
	acted := map[int32]bool{}
	for _, id := range slices.Sorted(maps.Keys(heard)) {
		h := heard[id]
		if !h.HeartbeatSeen || now-h.Heartbeat > l.cfg.SessionTimeout || l.stale(im, id, h) {
			continue
		}
		reg := h.Registration
		reg.BrokerID = id
		b, ok := im.Broker(id)
		restarted := ok && reg.IncarnationID != (UUID{}) && reg.IncarnationID != b.IncarnationID
		// What the crashed process may have lost depends on its own flush
		// policy, not on the new one's.
		unclean := restarted && !h.CleanShutdown && !b.AcksDurable && b.IncarnationID != (UUID{})
		// A new broker starts fenced while it catches up or shuts down. A
		// known one keeps its state through a new registration: fencing
		// is the Fence action's, which moves its leaderships too (a
		// registration alone would leave it leading while fenced). An
		// unclean restart's registration moves them itself.
		switch {
		case unclean:
			reg.Fenced = h.CatchingUp || h.ShuttingDown || b.Fenced
		case ok:
			reg.Fenced = b.Fenced
		default:
			reg.Fenced = h.CatchingUp || h.ShuttingDown
		}
		switch {
		case !ok || !sameListeners(b, &reg) || restarted:
			if restarted {
				l.remember(id, b.IncarnationID)
			}
			out = append(out, LivenessAction{Kind: ActionRegister, Broker: id, Registration: reg, Unclean: unclean,
				Reason: registerReason(ok, restarted, h.CleanShutdown || b.IncarnationID == (UUID{}), unclean)})
		case h.LogDir.Offline != b.LogDir.Offline || h.LogDir.Offline && (h.LogDir.Reason != b.LogDir.Reason || h.LogDir.Dir != b.LogDir.Dir):
			if h.LogDir.Offline {
				out = append(out, LivenessAction{Kind: ActionLogDirOffline, Broker: id, LogDir: h.LogDir,
					Reason: "its heartbeats report its log dir takes no writes (" + h.LogDir.Reason + ")"})
			} else {
				out = append(out, LivenessAction{Kind: ActionLogDirOnline, Broker: id, LogDir: h.LogDir, Reason: "its heartbeats report its log dir takes writes again"})
			}
		case b.Fenced && !h.CatchingUp && !h.ShuttingDown:
			out = append(out, LivenessAction{Kind: ActionUnfence, Broker: id, Reason: "heard again, caught up"})
		case !b.Fenced && h.ShuttingDown:
			out = append(out, LivenessAction{Kind: ActionControlledShutdown, Broker: id, Reason: "its heartbeats ask for a controlled shutdown"})
		case !b.Fenced && h.CatchingUp:
			out = append(out, LivenessAction{Kind: ActionFence, Broker: id, Reason: "restarted, catching up with the metadata log"})
		case !b.Fenced && b.LogDir.Offline && LogDirMovable(im, id):
			out = append(out, LivenessAction{Kind: ActionLogDirOffline, Broker: id, LogDir: b.LogDir,
				Reason: "its log dir takes no writes and it is in an ISR that can do without it"})
		default:
			continue
		}
		acted[id] = true
	}
	for _, b := range im.Brokers() {
		if b.Fenced || acted[b.ID] {
			continue
		}
		h := heard[b.ID]
		if h.HeartbeatSeen && l.stale(im, b.ID, h) {
			h.HeartbeatSeen = false
		}
		last, ok := h.lastHeard()
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

func registerReason(known, restarted, clean, unclean bool) string {
	switch {
	case unclean:
		return "restarted after an unclean shutdown: out of every ISR and ELR"
	case restarted && clean:
		return "restarted after a clean shutdown"
	case restarted:
		return "restarted after an unclean shutdown with durable acks: nothing acknowledged lost"
	case known:
		return "rack or listeners changed"
	}
	return "new broker"
}

// StaleHeartbeat reports whether a heartbeat comes from an incarnation of
// a broker that a newer one replaced (Kafka's STALE_BROKER_EPOCH): it
// says it saw itself registered (brokerEpoch, not 0) but the image holds
// another incarnation. Such a heartbeat is refused: it must neither keep
// the broker's session alive nor register the old process again. A
// heartbeat without an incarnation comes from an older node and is never
// stale.
func StaleHeartbeat(im *Image, broker int32, incarnation UUID, brokerEpoch uint64) bool {
	b, ok := im.Broker(broker)
	return ok && incarnation != (UUID{}) && b.IncarnationID != (UUID{}) && incarnation != b.IncarnationID && brokerEpoch != 0
}

// stale is StaleHeartbeat, or an incarnation this node saw replaced.
func (l *Liveness) stale(im *Image, id int32, h BrokerHeard) bool {
	inc := h.Registration.IncarnationID
	return StaleHeartbeat(im, id, inc, h.BrokerEpoch) || (inc != (UUID{}) && slices.Contains(l.replaced[id], inc))
}

// remember notes that a newer incarnation replaces inc.
func (l *Liveness) remember(id int32, inc UUID) {
	if inc == (UUID{}) || slices.Contains(l.replaced[id], inc) {
		return
	}
	if l.replaced == nil {
		l.replaced = map[int32][]UUID{}
	}
	r := append(l.replaced[id], inc)
	if len(r) > maxReplaced {
		r = r[len(r)-maxReplaced:]
	}
	l.replaced[id] = r
}
