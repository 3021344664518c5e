package replication

import "time"

// Observer is told how long the steps of an acks=all produce took on this
// node, for metrics (the broker's ops.Metrics): where a slow produce spent
// its time besides the connection's queue (the kafka package's
// ProduceObserver). It is called on the append, fetch and fdatasync paths,
// once per step, so an implementation must be cheap and must never
// block: no allocation, no lock held across anything but its own update.
type Observer interface {
	// LeaderDurable: a leader's append became as durable as the flush
	// policy promises (its fdatasync under flush policy ack), d after
	// the append began. Appends that failed are not observed.
	LeaderDurable(d time.Duration)
	// AcksAllISRWait: an acks=all append was held by the ISR for d: from
	// the later of its being durable on the leader and its answer being
	// awaited (a produce queued behind earlier answers on its connection
	// is awaited only once those are written), until the high watermark
	// passed it. Appends refused or timed out are not observed.
	AcksAllISRWait(d time.Duration)
	// FollowerAppend: a follower appended what one partition of a fetch
	// response brought, in d (durably under flush policy ack: the
	// fdatasync included).
	FollowerAppend(d time.Duration)
}

// SetObserver makes o the Observer of this node's replicas (nil: none).
// Call it before the first image is applied, as SetReplication.
func (m *Manager) SetObserver(o Observer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hooks.observer = o
	if m.fetchers != nil {
		m.fetchers.observer = o
	}
}
