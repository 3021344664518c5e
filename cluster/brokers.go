package cluster

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// BrokerRegistrationRecord registers a broker, or replaces the
// registration of a broker that registers again (a restart, a new rack or
// listener). Placement reads the registered brokers; leader election reads
// which of them are fenced.
type BrokerRegistrationRecord struct {
	BrokerID  int32            `json:"broker_id"`
	Rack      string           `json:"rack,omitempty"`
	Listeners []BrokerListener `json:"listeners,omitempty"`
	// Fenced brokers hold no leadership and get no new replicas.
	Fenced bool `json:"fenced"`
	// IncarnationID is random at each start of the broker's process
	// (KIP-966's IncarnationId): a registration with a new one is a
	// restart, whose previous shutdown may have been unclean. Zero in
	// records written before incarnations existed.
	IncarnationID UUID `json:"incarnation_id,omitzero"`
	// AcksDurable: this incarnation fdatasyncs every record before it
	// acknowledges it or, as a follower, counts it toward a high
	// watermark (log.flush.policy ack), so its crash loses nothing
	// acknowledged. The next incarnation's registration reads it here: a
	// crash under log.flush.policy interval counts as unclean even if the
	// broker comes back under ack.
	AcksDurable bool `json:"acks_durable,omitempty"`
}

// BrokerListener is one advertised listener of a broker.
type BrokerListener struct {
	Name             string `json:"name"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"security_protocol,omitempty"`
}

// BrokerFenceRecord fences (Fenced) or unfences a registered broker.
type BrokerFenceRecord struct {
	BrokerID int32 `json:"broker_id"`
	Fenced   bool  `json:"fenced"`
}

// BrokerLogDirRecord says whether a broker's log dir takes writes, as its
// heartbeats report it: Offline while the dir is below its free-space
// floor or failed (an fdatasync or write error). An offline broker leaves
// every ISR and hands its leaderships to in-sync replicas that can write
// (LogDirOfflineChanges), and is elected leader only where no such
// replica may lead, until a record says it takes writes again.
type BrokerLogDirRecord struct {
	BrokerID int32  `json:"broker_id"`
	Dir      string `json:"dir,omitempty"`
	Offline  bool   `json:"offline"`
	// Reason is LogDirBelowFloor or LogDirFailed while Offline; Detail
	// the broker's words for it (the figures, or the error).
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Why a log dir takes no writes (BrokerLogDirRecord.Reason).
const (
	LogDirBelowFloor = "below_floor"
	LogDirFailed     = "failed"
)

// BrokerImage is one registered broker.
type BrokerImage struct {
	ID        int32
	Rack      string
	Listeners []BrokerListener
	Fenced    bool
	// IncarnationID is the registered process start (zero when the
	// registration predates incarnations).
	IncarnationID UUID
	// AcksDurable: see BrokerRegistrationRecord.
	AcksDurable bool
	// Epoch is the metadata log offset of the broker's latest
	// registration (Kafka's broker epoch): it changes every time the
	// broker registers again.
	Epoch uint64
	// LogDir is the broker's log dir as its heartbeats last reported a
	// change of it: LogDir.Offline while it takes no writes (below its
	// free-space floor, or failed). A new incarnation starts online until
	// its heartbeats say otherwise.
	LogDir BrokerLogDir `json:",omitzero"`
}

// BrokerLogDir is the state of a broker's log dir in the image (see
// BrokerLogDirRecord).
type BrokerLogDir struct {
	Dir     string `json:"dir,omitempty"`
	Offline bool   `json:"offline,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Brokers lists the registered brokers, by id. The slice is new; the
// listeners in it must not be modified.
func (im *Image) Brokers() []BrokerImage {
	out := make([]BrokerImage, 0, len(im.brokers))
	for _, b := range im.brokers {
		out = append(out, *b)
	}
	// sort.Slice, not slices.SortFunc: no sort code instantiated for
	// BrokerImage in the binary.
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Broker returns a registered broker, or false.
func (im *Image) Broker(id int32) (BrokerImage, bool) {
	b := im.brokers[id]
	if b == nil {
		return BrokerImage{}, false
	}
	return *b, true
}

// BrokerUnfenced reports whether id is registered and not fenced: the
// brokers that may lead and that placement puts new replicas on.
func (im *Image) BrokerUnfenced(id int32) bool {
	b := im.brokers[id]
	return b != nil && !b.Fenced
}

// BrokerWritable reports whether id's log dir takes writes as far as the
// image knows: false while its heartbeats report it below its free-space
// floor or failed (BrokerLogDirRecord).
func (im *Image) BrokerWritable(id int32) bool {
	b := im.brokers[id]
	return b == nil || !b.LogDir.Offline
}

func (next *Image) applyBrokerRegistration(im *Image, offset uint64, r *BrokerRegistrationRecord) {
	next.brokers = maps.Clone(im.brokers)
	if next.brokers == nil {
		next.brokers = map[int32]*BrokerImage{}
	}
	b := &BrokerImage{
		ID: r.BrokerID, Rack: r.Rack, Listeners: slices.Clone(r.Listeners), Fenced: r.Fenced,
		IncarnationID: r.IncarnationID, AcksDurable: r.AcksDurable, Epoch: offset,
	}
	// The same process registering again (new listeners) keeps what its
	// heartbeats said of its log dir; a new one reports its own.
	if old := im.brokers[r.BrokerID]; old != nil && old.IncarnationID == r.IncarnationID {
		b.LogDir = old.LogDir
	}
	next.brokers[r.BrokerID] = b
}

func (next *Image) applyBrokerLogDir(im *Image, offset uint64, r *BrokerLogDirRecord) error {
	old := im.brokers[r.BrokerID]
	if old == nil {
		return fmt.Errorf("cluster: metadata record %d sets the log dir of unregistered broker %d", offset, r.BrokerID)
	}
	b := *old
	b.LogDir = BrokerLogDir{Dir: r.Dir, Offline: r.Offline, Reason: r.Reason, Detail: r.Detail}
	next.brokers = maps.Clone(im.brokers)
	next.brokers[r.BrokerID] = &b
	return nil
}

func (next *Image) applyBrokerFence(im *Image, offset uint64, r *BrokerFenceRecord) error {
	old := im.brokers[r.BrokerID]
	if old == nil {
		return fmt.Errorf("cluster: metadata record %d fences unregistered broker %d", offset, r.BrokerID)
	}
	b := *old
	b.Fenced = r.Fenced
	next.brokers = maps.Clone(im.brokers)
	next.brokers[r.BrokerID] = &b
	return nil
}

// sameRegistration reports whether registering r changes nothing.
func sameRegistration(b BrokerImage, r *BrokerRegistrationRecord) bool {
	return b.Rack == r.Rack && b.Fenced == r.Fenced && slices.Equal(b.Listeners, r.Listeners) && b.IncarnationID == r.IncarnationID && b.AcksDurable == r.AcksDurable
}
