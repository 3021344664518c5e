package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

// QuorumConfig makes the controller one voter of a metadata quorum
// (controller.quorum.voters lists several nodes): records are proposed
// through the replicated metadata log (cluster/metalog, driven by
// cluster/quorum) and every node applies only committed entries.
type QuorumConfig struct {
	// Dir holds the quorum's log, hard state and snapshot.
	Dir       string
	Transport quorum.Transport
	// SendApp sends a body to a peer's OnApp (broker heartbeats,
	// forwarded requests and their answers); the transport's SendApp.
	SendApp func(to election.NodeID, body []byte)
	Node    metalog.Config
	Tick    time.Duration
	// TickAtStart: the quorum driver's first tick comes at once
	// (quorum.Config.TickAtStart); a quorum of one sets it.
	TickAtStart bool
	// BrokerHeartbeatInterval and BrokerSessionTimeout are
	// broker.heartbeat.interval.ms and broker.session.timeout.ms: a broker
	// the acting controller has not heard for the session timeout is
	// fenced, and unfenced when it is heard again.
	BrokerHeartbeatInterval time.Duration
	BrokerSessionTimeout    time.Duration
	// SnapshotEntries is how many applied entries make a node compact its
	// log into a snapshot (snapshot.go); 0 means defaultSnapshotEntries.
	SnapshotEntries int
	// SnapshotBytes is how many bytes of applied entries make a node
	// compact its log, whatever their count; 0 means
	// defaultSnapshotBytes. At ten thousand partitions one entry (a
	// broker fenced, a batch of created topics) holds megabytes, and a
	// restart replays everything after the last snapshot.
	SnapshotBytes int64
	Logger        *slog.Logger
	// CleanShutdown says whether this node's data directory was shut
	// down cleanly last time (engine.Manager.HadCleanShutdown). Its
	// heartbeats carry it with a new incarnation id, so the controller
	// takes a broker back from a crash out of every ISR and ELR.
	CleanShutdown bool
	// AcksDurable says that this node fdatasyncs every record before it
	// acknowledges it or, as a follower, counts it toward a high
	// watermark (log.flush.policy ack); its registration says so
	// (BrokerRegistrationRecord.AcksDurable).
	AcksDurable bool
	// LogDir, if set, says whether this node's log dir takes writes (not
	// while failed or below its free-space floor): its heartbeats carry
	// it, so the controller moves its leaderships and takes it out of
	// every ISR while it does not. Call Controller.LogDirChanged when it
	// may have changed, to heartbeat at once.
	LogDir func() BrokerLogDir
}

// commitTimeout bounds how long a change waits for the quorum to commit
// it; beyond it the request fails with REQUEST_TIMED_OUT (it may still
// commit).
const commitTimeout = 10 * time.Second

// quorumState is the controller's driver of the metadata quorum (of one
// voter or several).
type quorumState struct {
	cfg    QuorumConfig
	driver *quorum.Driver
	log    *slog.Logger

	// mu guards what arrives from peers.
	mu sync.Mutex
	// heard is when the acting controller last heard each broker, and
	// the registration it sent (monotonic, local to this node).
	heard map[int32]heardBroker
	// pending: forwarded requests waiting for their answer, by id.
	pending map[uint64]chan forwardAnswer
	nextID  uint64
	// registration is what this node's broker heartbeats carry.
	registration *BrokerRegistrationRecord
	// registrationSet is when registration was first set; kick makes the
	// heartbeat loop send it at once rather than a heartbeat interval
	// later, since the broker serves only once it is registered.
	registrationSet time.Time
	kick            chan struct{}
	// incarnation is this process start's id (KIP-966's IncarnationId).
	incarnation UUID
	// registered is closed once the image holds this incarnation's
	// registration (Registered).
	registered     chan struct{}
	registeredOnce sync.Once
	// applied is closed (and replaced) each time an image is published.
	applied chan struct{}
	// appliedBytes counts the data of the entries applied (snapshot.go
	// compacts by it too).
	appliedBytes atomic.Int64

	forwardHandler atomic.Pointer[ForwardHandler]
	elections      electionCounters
	// facts are this node's facts for its peers and theirs (node_facts.go).
	facts nodeFacts
	// shuttingDown is set once this node asked for a controlled
	// shutdown: its heartbeats say so, and the controller does not
	// unfence it while they do (Kafka's WantShutDown).
	shuttingDown bool

	// base is the origin of the Liveness core's monotonic clock.
	base time.Time

	stop chan struct{}
	wg   sync.WaitGroup
}

type heardBroker struct {
	at  time.Time
	reg BrokerRegistrationRecord
	// shuttingDown: the broker asked for a controlled shutdown and must
	// stay fenced while it finishes.
	shuttingDown bool
	// catchingUp: the broker has not caught up with the metadata log
	// since it started, so it cannot lead yet.
	catchingUp bool
	// cleanShutdown and brokerEpoch: see BrokerHeard.
	cleanShutdown bool
	brokerEpoch   uint64
	// logDir: what the broker said of its log dir.
	logDir BrokerLogDir
}

// openQuorum starts the quorum driver. The image is rebuilt by the
// committed entries the driver hands out, starting with the first Ready.
func (c *Controller) openQuorum(fsys vfs.FS) error {
	qc := *c.cfg.Quorum
	if qc.Logger == nil {
		qc.Logger = slog.Default()
	}
	store, stored, err := quorum.OpenStorage(fsys, qc.Dir)
	if err != nil {
		return err
	}
	q := &quorumState{cfg: qc, log: qc.Logger, heard: map[int32]heardBroker{}, pending: map[uint64]chan forwardAnswer{},
		applied: make(chan struct{}), stop: make(chan struct{}), base: time.Now(),
		incarnation: NewUUID(), registered: make(chan struct{}), kick: make(chan struct{}, 1)}
	c.q = q
	// The driver hands out the committed entries after the snapshot.
	im, err := loadSnapshot(stored.Snapshot)
	if err != nil {
		store.Close()
		return err
	}
	c.image.Store(im)
	c.pub = newPublisher(im, c.published)
	q.elections.epoch.Store(stored.Hard.Election.Epoch)
	// Owned by the driver goroutine (OnSoftState).
	prevSoft := election.SoftState{Controller: election.None}
	q.driver, err = quorum.Start(quorum.Config{Node: qc.Node, Tick: qc.Tick, TickAtStart: qc.TickAtStart, Apply: c.applyEntries, Restore: c.restoreSnapshot, Logger: qc.Logger,
		OnSoftState: func(ss election.SoftState) {
			q.elections.observe(ss)
			// A node without a controller tries an election every timeout
			// (pre-candidate, back to follower when its probes go
			// unanswered): those turns are DEBUG, and watchQuorum says once
			// why, at WARN. A controller found, lost or acting is INFO.
			lvl := slog.LevelInfo
			if ss.Controller == election.None && prevSoft.Controller == election.None && !ss.Acting && !prevSoft.Acting {
				lvl = slog.LevelDebug
			}
			prevSoft = ss
			qc.Logger.Log(context.Background(), lvl, "metadata quorum: role changed", "role", ss.Role.String(), "epoch", ss.Epoch,
				"controller", int32(ss.Controller), "acting", ss.Acting)
		}}, store, stored, qc.Transport)
	if err != nil {
		c.pub.close()
		store.Close()
		return err
	}
	q.wg.Add(1)
	go c.compactLoop()
	if !c.alone() {
		// Brokers that heartbeat to a controller, and peers to tell.
		q.wg.Add(3)
		go c.maintain()
		go c.heartbeat()
		go c.sendNodeFacts()
	}
	return nil
}

// oneVoterQuorum is the quorum of one of a single node: no peers, so its
// election needs no quiet start or timeout beyond the least the election
// allows, and its lease is always held (it is its own majority).
func oneVoterQuorum(id int32, dir string) *QuorumConfig {
	return &QuorumConfig{Dir: dir, Transport: noPeers{}, SendApp: func(election.NodeID, []byte) {},
		Tick: oneVoterTick, TickAtStart: true,
		Node: metalog.Config{
			Election: election.Config{ID: election.NodeID(id), Voters: []election.NodeID{election.NodeID(id)},
				HeartbeatTicks: 1, LeaseTicks: 2, ElectionTicks: 3, ElectionJitterTicks: 1},
			FetchWaitTicks: 1, FetchTimeoutTicks: 2, MaxFetchEntries: 256, MaxUncommittedEntries: 1024,
		}}
}

// oneVoterTick is a one-voter quorum's tick. It elects itself at its first
// tick, which comes at once (TickAtStart), and nothing else waits on its
// clock: commits follow proposals, not ticks. A long tick keeps an idle
// node from waking a hundred times a second.
const oneVoterTick = 250 * time.Millisecond

// noPeers is the transport of a quorum of one.
type noPeers struct{}

func (noPeers) Send(metalog.Message)            {}
func (noPeers) Receive() <-chan metalog.Message { return nil }
func (noPeers) Close() error                    { return nil }

// waitActing returns once this node is the acting controller with a
// current image (a one-voter controller, a few ticks after it starts).
func (c *Controller) waitActing(ctx context.Context) error {
	t := time.NewTicker(c.q.cfg.Tick)
	defer t.Stop()
	for {
		c.q.mu.Lock()
		applied := c.q.applied
		c.q.mu.Unlock()
		ok, err := c.q.driver.ActingAndCurrent(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-applied:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// QuorumStatus is this node's view of the metadata quorum, for the CLI
// and operations endpoints; false on a one-voter controller.
func (c *Controller) QuorumStatus(ctx context.Context) (quorum.Status, bool, error) {
	if c.alone() {
		return quorum.Status{}, false, nil
	}
	st, err := c.q.driver.Status(ctx)
	return st, true, err
}

// QuorumReach is how many voters this node reaches, itself included, out
// of every voter: the peers its transport is connected to, when the
// transport can tell (quorum.TCPTransport), else the peers it heard from
// in the last span of within (any metadata quorum message counts; this
// undercounts, since a follower hears from the controller only, and a
// node that just started hears nothing until an election begins). A
// one-voter controller reaches its only voter.
func (c *Controller) QuorumReach(within time.Duration) (reached, voters int) {
	ids := c.q.cfg.Node.Election.Voters
	self := election.NodeID(c.cfg.NodeID)
	reached = 1
	if tr, ok := c.q.cfg.Transport.(interface{ Connected(election.NodeID) bool }); ok {
		for _, id := range ids {
			if id != self && tr.Connected(id) {
				reached++
			}
		}
		return reached, len(ids)
	}
	now := time.Now()
	for id, at := range c.q.driver.LastHeard() {
		if id != self && now.Sub(at) <= within {
			reached++
		}
	}
	return reached, len(ids)
}

// Acting reports whether this node is the acting controller.
func (c *Controller) Acting() bool {
	return c.q.driver.SoftState().Acting
}

// ControllerEpoch is the epoch of the controller this node follows or is,
// 0 with one voter.
func (c *Controller) ControllerEpoch() int32 {
	if c.alone() {
		return 0
	}
	return int32(c.q.driver.SoftState().Epoch)
}

// BrokerAddr is the advertised host and port of a registered broker's
// listener (by name; the first one if none has the name).
func (c *Controller) BrokerAddr(id int32, listener string) (string, int32, bool) {
	b, ok := c.Image().Broker(id)
	if !ok || len(b.Listeners) == 0 {
		return "", 0, false
	}
	for _, l := range b.Listeners {
		if l.Name == listener {
			return l.Host, l.Port, true
		}
	}
	return b.Listeners[0].Host, b.Listeners[0].Port, true
}
