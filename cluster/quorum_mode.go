package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// quorumState is the controller's part in a multi-voter cluster.
type quorumState struct {
	cfg    QuorumConfig
	driver *quorum.Driver
	log    *slog.Logger

	// applyMu orders applies (the driver goroutine) with Subscribe.
	applyMu sync.Mutex

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
	q.elections.epoch.Store(stored.Hard.Election.Epoch)
	// Owned by the driver goroutine (OnSoftState).
	prevSoft := election.SoftState{Controller: election.None}
	q.driver, err = quorum.Start(quorum.Config{Node: qc.Node, Tick: qc.Tick, Apply: c.applyEntries, Restore: c.restoreSnapshot, Logger: qc.Logger,
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
		store.Close()
		return err
	}
	q.wg.Add(4)
	go c.maintain()
	go c.heartbeat()
	go c.compactLoop()
	go c.sendNodeFacts()
	return nil
}

// applyEntries applies committed entries to the image and publishes it.
// It runs on the driver goroutine.
func (c *Controller) applyEntries(ents []metalog.Entry) {
	c.q.applyMu.Lock()
	defer c.q.applyMu.Unlock()
	old := c.image.Load()
	im := old
	for _, e := range ents {
		if e.Type != metalog.EntryRecords {
			continue
		}
		c.q.appliedBytes.Add(int64(len(e.Data)))
		recs, err := decodeEntry(e.Data)
		if err != nil {
			panic(fmt.Sprintf("cluster: committed metadata entry %d/%d does not decode: %v", e.Epoch, e.Index, err))
		}
		if im, err = applyRecords(im, uint64(e.Index), recs); err != nil {
			panic(fmt.Sprintf("cluster: committed metadata entry %d/%d does not apply: %v", e.Epoch, e.Index, err))
		}
	}
	if im == old {
		return
	}
	c.image.Store(im)
	c.q.notifyApplied()
	c.maybeRegistered(im)
	c.subMu.Lock()
	subs := append([]func(old, new *Image){}, c.subscribers...)
	c.subMu.Unlock()
	for _, fn := range subs {
		fn(old, im)
	}
}

// proposeRecords is commit on a quorum: the records become one entry,
// and it returns once the entry is committed and applied here.
func (c *Controller) proposeRecords(recs []Record) error {
	payload, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	go func() {
		// Close must not wait out a commit the quorum cannot make.
		select {
		case <-c.q.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = c.q.driver.Propose(ctx, payload)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, metalog.ErrNotController), errors.Is(err, metalog.ErrNotCaughtUp),
		errors.Is(err, quorum.ErrProposalDropped):
		return fmt.Errorf("%w: node %d is not the acting controller (the controller is %d): %v",
			kerr.NotController, c.cfg.NodeID, c.ControllerID(), err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, metalog.ErrTooManyUncommitted):
		return fmt.Errorf("%w: the metadata quorum did not commit the change within %v", kerr.RequestTimedOut, commitTimeout)
	}
	return fmt.Errorf("%w: metadata quorum: %w", kerr.KafkaStorageError, err)
}

// QuorumStatus is this node's view of the metadata quorum, for the CLI
// and operations endpoints; false on a one-voter controller.
func (c *Controller) QuorumStatus(ctx context.Context) (quorum.Status, bool, error) {
	if c.q == nil {
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
	if c.q == nil {
		return 1, 1
	}
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
	if c.q == nil {
		return true
	}
	return c.q.driver.SoftState().Acting
}

// ControllerEpoch is the epoch of the controller this node follows or is,
// 0 with one voter.
func (c *Controller) ControllerEpoch() int32 {
	if c.q == nil {
		return 0
	}
	return int32(c.q.driver.SoftState().Epoch)
}

// SetRegistration sets what this node's broker registers with (its rack
// and advertised listeners, known once its listener is bound). On a quorum
// its heartbeats carry it to the controller; on one voter it registers at
// once.
func (c *Controller) SetRegistration(ctx context.Context, rack string, listeners []BrokerListener) error {
	reg := BrokerRegistrationRecord{BrokerID: c.cfg.NodeID, Rack: rack, Listeners: listeners}
	if c.q == nil {
		return c.RegisterBroker(ctx, reg, true)
	}
	reg.IncarnationID, reg.AcksDurable = c.q.incarnation, c.q.cfg.AcksDurable
	c.q.mu.Lock()
	c.q.registration = &reg
	if c.q.registrationSet.IsZero() {
		c.q.registrationSet = time.Now()
	}
	c.q.mu.Unlock()
	select {
	case c.q.kick <- struct{}{}:
	default:
	}
	return nil
}

// Registered is closed once this node's image holds the registration of
// this process (its incarnation), at once with one voter. Until then the
// image may still show the previous process as a leader in the ISR, at a
// leader epoch whose records a crash may have taken: the broker must not
// lead or follow from it, since the controller has not yet decided whether
// the restart was clean (KIP-966). An acting controller of an older
// version never records incarnations; a caught-up node whose registration
// still has none after broker.session.timeout.ms goes on without it.
func (c *Controller) Registered() <-chan struct{} {
	if c.q == nil {
		return closedChan
	}
	return c.q.registered
}

// maybeRegistered closes Registered once a published image holds this
// incarnation's registration.
func (c *Controller) maybeRegistered(im *Image) {
	if b, ok := im.Broker(c.cfg.NodeID); ok && b.IncarnationID == c.q.incarnation {
		c.q.registeredOnce.Do(func() { close(c.q.registered) })
	}
}

// brokerEpoch is the epoch of this incarnation's registration, 0 while
// the image does not hold it.
func (c *Controller) brokerEpoch() uint64 {
	if b, ok := c.Image().Broker(c.cfg.NodeID); ok && b.IncarnationID == c.q.incarnation {
		return b.Epoch
	}
	return 0
}

// maybeRegisteredByOldController closes Registered for a node the acting
// controller registered without an incarnation for a whole session since
// it first heartbeated: that controller predates incarnations.
func (c *Controller) maybeRegisteredByOldController(since time.Time) {
	q := c.q
	if since.IsZero() || time.Since(since) < q.cfg.BrokerSessionTimeout || !c.caughtUp() {
		return
	}
	if b, ok := c.Image().Broker(c.cfg.NodeID); ok && b.IncarnationID == (UUID{}) {
		q.registeredOnce.Do(func() {
			q.log.Warn("metadata quorum: the controller did not record this broker's incarnation within a session; going on without (a controller of an older version?)",
				"broker", c.cfg.NodeID, "broker.session.timeout.ms", q.cfg.BrokerSessionTimeout.Milliseconds())
			close(q.registered)
		})
	}
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

// Messages between a broker and the controller, in APIKeyApp bodies
// (JSON: they are small and rare). Part of the wire format.
type appMessage struct {
	Kind string `json:"kind"`
	// heartbeat: the broker's registration.
	Registration *BrokerRegistrationRecord `json:"registration,omitempty"`
	// heartbeat: the broker is in a controlled shutdown.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// heartbeat: the broker has not caught up with the metadata log
	// since it started (absent from older nodes: caught up).
	CatchingUp bool `json:"catching_up,omitempty"`
	// heartbeat: the broker's data directory was shut down cleanly
	// before this incarnation (Registration.IncarnationID) started, and
	// the epoch of this incarnation's registration once its image shows
	// it (absent before). Older nodes send neither, nor an incarnation.
	CleanShutdown bool   `json:"clean_shutdown,omitempty"`
	BrokerEpoch   uint64 `json:"broker_epoch,omitempty"`
	// heartbeat: the broker's log dir, when it takes no writes (absent
	// while it does, and from older nodes).
	LogDir *BrokerLogDir `json:"log_dir,omitempty"`
	// alter_isr request (its answer carries the partition's state).
	AlterISR *alterISRMessage `json:"alter_isr,omitempty"`
	// allocate_producer_ids request and answer.
	ID         uint64 `json:"id,omitempty"`
	First      int64  `json:"first,omitempty"`
	ErrorCode  int16  `json:"error_code,omitempty"`
	ErrMessage string `json:"error_message,omitempty"`
	// kafka_request: a Kafka request forwarded to the controller
	// (forward.go); its answer carries the response body and the
	// controller's image offset after it.
	APIKey     int16  `json:"api_key,omitempty"`
	APIVersion int16  `json:"api_version,omitempty"`
	Body       []byte `json:"body,omitempty"`
	Offset     uint64 `json:"offset,omitempty"`
}

const (
	appHeartbeat          = "heartbeat"
	appAllocateProducerID = "allocate_producer_ids"
	appAlterISR           = "alter_isr"
	appControlledShutdown = "controlled_shutdown"
	appAnswer             = "answer"
	appKafkaRequest       = "kafka_request"
)

// alterISRMessage is a partition leader's AlterPartition, and in the
// answer the partition's state after it.
type alterISRMessage struct {
	TopicID        UUID    `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

type forwardAnswer struct {
	first    int64
	alterISR *alterISRMessage
	body     []byte
	offset   uint64
	err      error
}

// maxAppBytes bounds an app body before it is decoded: a forwarded Kafka
// request (at most 1 MiB, kafka's smallRequestBytes) or its answer, in
// base64.
const maxAppBytes = 2 << 20

// decodeApp reads an APIKeyApp body.
func decodeApp(body []byte) (appMessage, error) {
	var m appMessage
	if len(body) > maxAppBytes {
		return m, fmt.Errorf("cluster: app message of %d bytes, limit %d", len(body), maxAppBytes)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("cluster: app message: %w", err)
	}
	switch m.Kind {
	case appHeartbeat:
		if m.Registration == nil || len(m.Registration.Listeners) > 16 {
			return m, errors.New("cluster: heartbeat without a registration, or with too many listeners")
		}
		if d := m.LogDir; d != nil && (len(d.Dir) > 4096 || len(d.Reason) > 64 || len(d.Detail) > 1024) {
			return m, errors.New("cluster: heartbeat with an oversized log dir state")
		}
	case appAlterISR:
		if m.AlterISR == nil || len(m.AlterISR.ISR) > 64 {
			return m, errors.New("cluster: alter_isr without a request, or with too many replicas")
		}
	case appKafkaRequest:
		if m.Body == nil {
			return m, errors.New("cluster: kafka_request without a body")
		}
	case appAllocateProducerID, appAnswer, appControlledShutdown, appNodeFacts:
	default:
		return m, fmt.Errorf("cluster: app message kind %q", m.Kind)
	}
	return m, nil
}

// HandleApp takes an APIKeyApp body from peer from. It runs on the
// transport's goroutine and does not block.
func (c *Controller) HandleApp(from election.NodeID, body []byte) {
	q := c.q
	if q == nil {
		return
	}
	m, err := decodeApp(body)
	if err != nil {
		q.log.Warn("metadata quorum: bad message from peer", "peer", int32(from), "err", err)
		return
	}
	switch m.Kind {
	case appHeartbeat:
		if m.Registration.BrokerID != int32(from) {
			q.log.Warn("metadata quorum: heartbeat names another broker", "peer", int32(from), "broker", m.Registration.BrokerID)
			return
		}
		if StaleHeartbeat(c.Image(), int32(from), m.Registration.IncarnationID, m.BrokerEpoch) {
			q.log.Warn("metadata quorum: heartbeat refused: a newer incarnation of the broker registered since",
				"broker", int32(from), "incarnation", m.Registration.IncarnationID.String(), "broker_epoch", m.BrokerEpoch)
			return
		}
		var dir BrokerLogDir
		if m.LogDir != nil && m.LogDir.Offline {
			dir = *m.LogDir
		}
		q.mu.Lock()
		q.heard[int32(from)] = heardBroker{at: time.Now(), reg: *m.Registration, shuttingDown: m.ShuttingDown, catchingUp: m.CatchingUp,
			cleanShutdown: m.CleanShutdown, brokerEpoch: m.BrokerEpoch, logDir: dir}
		q.mu.Unlock()
	case appControlledShutdown:
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
			defer cancel()
			ans := appMessage{Kind: appAnswer, ID: m.ID}
			if c.Acting() {
				if err := c.controlledShutdownOf(ctx, int32(from)); err != nil {
					ans.ErrorCode, ans.ErrMessage = errorCode(err), err.Error()
				}
			} else {
				ans.ErrorCode, ans.ErrMessage = kerr.NotController.Code, fmt.Sprintf("node %d is not the acting controller", c.cfg.NodeID)
			}
			b, _ := json.Marshal(ans)
			q.cfg.SendApp(from, b)
		}()
	case appAllocateProducerID:
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
			defer cancel()
			ans := appMessage{Kind: appAnswer, ID: m.ID}
			if c.Acting() {
				first, err := c.AllocateProducerIDs(ctx, int32(from))
				ans.First = first
				if err != nil {
					ans.ErrorCode, ans.ErrMessage = errorCode(err), err.Error()
				}
			} else {
				ans.ErrorCode, ans.ErrMessage = kerr.NotController.Code, fmt.Sprintf("node %d is not the acting controller", c.cfg.NodeID)
			}
			b, _ := json.Marshal(ans)
			q.cfg.SendApp(from, b)
		}()
	case appAlterISR:
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
			defer cancel()
			ans := appMessage{Kind: appAnswer, ID: m.ID}
			r := m.AlterISR
			if r.Leader != int32(from) {
				ans.ErrorCode, ans.ErrMessage = kerr.InvalidRequest.Code, fmt.Sprintf("node %d sent an ISR change as leader %d", from, r.Leader)
			} else if !c.Acting() {
				ans.ErrorCode, ans.ErrMessage = kerr.NotController.Code, fmt.Sprintf("node %d is not the acting controller", c.cfg.NodeID)
			} else {
				after, err := c.AlterISR(ctx, r.TopicID, r.Partition, r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ISR)
				if err != nil {
					ans.ErrorCode, ans.ErrMessage = errorCode(err), err.Error()
				}
				ans.AlterISR = &alterISRMessage{TopicID: r.TopicID, Partition: r.Partition, Leader: after.Leader,
					LeaderEpoch: after.LeaderEpoch, PartitionEpoch: after.PartitionEpoch, ISR: after.ISR}
			}
			b, _ := json.Marshal(ans)
			q.cfg.SendApp(from, b)
		}()
	case appKafkaRequest:
		go c.serveForwarded(from, m)
	case appNodeFacts:
		c.heardNodeFacts(int32(from), m.Body)
	case appAnswer:
		q.mu.Lock()
		ch := q.pending[m.ID]
		delete(q.pending, m.ID)
		q.mu.Unlock()
		if ch != nil {
			var err error
			if m.ErrorCode != 0 {
				err = fmt.Errorf("%w: %s", kerr.ErrorForCode(m.ErrorCode), m.ErrMessage)
			}
			ch <- forwardAnswer{first: m.First, alterISR: m.AlterISR, body: m.Body, offset: m.Offset, err: err}
		}
	}
}

// errorCode is the Kafka error code an error carries, else
// UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// SubmitAlterISR is a partition leader's ISR change (Kafka's
// AlterPartition): applied here when this node is the acting controller
// (or the only voter), else sent to the acting controller over the
// CONTROLLER listener. It returns once the change is committed, with the
// partition's state after it.
func (c *Controller) SubmitAlterISR(ctx context.Context, topicID UUID, partition, leader, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionImage, error) {
	if c.q == nil || c.Acting() {
		return c.AlterISR(ctx, topicID, partition, leader, leaderEpoch, partitionEpoch, isr)
	}
	a, err := c.forward(ctx, appMessage{Kind: appAlterISR, AlterISR: &alterISRMessage{TopicID: topicID, Partition: partition,
		Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: isr}})
	if err != nil {
		return PartitionImage{}, err
	}
	if a.err != nil {
		return PartitionImage{}, a.err
	}
	if a.alterISR == nil {
		return PartitionImage{}, errors.New("cluster: alter_isr answer without the partition")
	}
	r := a.alterISR
	return PartitionImage{Partition: r.Partition, Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch, ISR: r.ISR}, nil
}

// forwardAllocateProducerIDs asks the acting controller for a block of
// producer ids, as a Kafka broker sends AllocateProducerIds.
func (c *Controller) forwardAllocateProducerIDs(ctx context.Context, broker int32) (int64, error) {
	a, err := c.forward(ctx, appMessage{Kind: appAllocateProducerID})
	if err != nil {
		return 0, err
	}
	return a.first, a.err
}

// forward sends a request to the acting controller and waits for its
// answer.
func (c *Controller) forward(ctx context.Context, msg appMessage) (forwardAnswer, error) {
	q := c.q
	ctrl := q.driver.SoftState().Controller
	if ctrl == election.None {
		return forwardAnswer{}, fmt.Errorf("%w: no controller is known", kerr.NotController)
	}
	ch := make(chan forwardAnswer, 1)
	q.mu.Lock()
	q.nextID++
	id := q.nextID
	q.pending[id] = ch
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.pending, id)
		q.mu.Unlock()
	}()
	msg.ID = id
	b, _ := json.Marshal(msg)
	q.cfg.SendApp(ctrl, b)
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return forwardAnswer{}, fmt.Errorf("%w: controller %d did not answer: %w", kerr.RequestTimedOut, ctrl, ctx.Err())
	}
}

// heartbeat sends this node's registration to the controller every
// broker.heartbeat.interval.ms (to itself directly when it is the
// controller).
func (c *Controller) heartbeat() {
	q := c.q
	defer q.wg.Done()
	t := time.NewTicker(q.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		q.mu.Lock()
		reg, since := q.registration, q.registrationSet
		q.mu.Unlock()
		// Until this process is registered it heartbeats sooner: the broker
		// serves only once it is, and the first heartbeat may find no
		// controller known yet, or be lost with a connection being made.
		var soon <-chan time.Time
		if reg != nil && !c.registeredNow() {
			soon = time.After(min(unregisteredHeartbeatInterval, q.cfg.BrokerHeartbeatInterval))
		}
		if reg != nil {
			c.maybeRegisteredByOldController(since)
			epoch := c.brokerEpoch()
			var dir BrokerLogDir
			if q.cfg.LogDir != nil {
				dir = q.cfg.LogDir()
			}
			var dirMsg *BrokerLogDir
			if dir.Offline {
				dirMsg = &dir
			}
			switch ctrl := q.driver.SoftState().Controller; ctrl {
			case election.None:
			case election.NodeID(c.cfg.NodeID):
				q.mu.Lock()
				q.heard[c.cfg.NodeID] = heardBroker{at: time.Now(), reg: *reg, shuttingDown: q.shuttingDown, catchingUp: !c.caughtUp(),
					cleanShutdown: q.cfg.CleanShutdown, brokerEpoch: epoch, logDir: dir}
				q.mu.Unlock()
			default:
				// Queued under mu: a heartbeat without the shutdown flag
				// never follows the controlled shutdown request.
				q.mu.Lock()
				b, _ := json.Marshal(appMessage{Kind: appHeartbeat, Registration: reg, ShuttingDown: q.shuttingDown, CatchingUp: !c.caughtUp(),
					CleanShutdown: q.cfg.CleanShutdown, BrokerEpoch: epoch, LogDir: dirMsg})
				q.cfg.SendApp(ctrl, b)
				q.mu.Unlock()
			}
		}
		select {
		case <-q.stop:
			return
		case <-t.C:
		case <-q.kick:
		case <-soon:
		}
	}
}

// unregisteredHeartbeatInterval is how often a process not registered
// yet heartbeats (the acting controller decides every 100 ms).
const unregisteredHeartbeatInterval = 100 * time.Millisecond

func (c *Controller) registeredNow() bool {
	select {
	case <-c.Registered():
		return true
	default:
		return false
	}
}

// maintain is the acting controller's housekeeping, decided by the pure
// Liveness core (liveness.go) and carried out here: create the cluster id
// in a new cluster, register brokers that heartbeat, fence those whose
// session expired, unfence those heard again, finish controlled
// shutdowns, and check the leader balance.
func (c *Controller) maintain() {
	q := c.q
	defer q.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	lc := LivenessConfig{SessionTimeout: q.cfg.BrokerSessionTimeout, HeartbeatInterval: q.cfg.BrokerHeartbeatInterval}
	if rb := c.cfg.LeaderRebalance; rb != nil {
		lc.RebalanceInterval = rb.CheckInterval
	}
	live := NewLiveness(lc)
	var watch quorumWatch
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		c.watchQuorum(&watch, time.Now())
		acting := c.Acting()
		actions := live.Decide(time.Since(q.base), acting, c.Image(), c.heardBrokers())
		if len(actions) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		for _, a := range actions {
			c.carryOut(ctx, a)
		}
		cancel()
	}
}

// quorumWatch is what watchQuorum said last.
type quorumWatch struct {
	// noControllerSince is when this node last found no controller
	// after knowing one (zero while it knows one).
	noControllerSince time.Time
	// warned is how many voters the last warning said this node
	// reaches; 0 when it has not warned.
	warned int
}

// watchQuorum tells the operator, once, that this node has no controller
// and how many voters it reaches, after an election timeout without one
// (an election after a controller's loss takes about that long and says
// nothing); again only when that number changes; and, at INFO, when a
// controller is back. A node that is stopping says nothing more: its
// stop says why it cannot hand over.
func (c *Controller) watchQuorum(w *quorumWatch, now time.Time) {
	q := c.q
	ss := q.driver.SoftState()
	if ss.Controller != election.None {
		if w.warned > 0 {
			q.log.Info("metadata quorum: controller reachable again", "controller", int32(ss.Controller), "epoch", ss.Epoch)
		}
		*w = quorumWatch{}
		return
	}
	if w.noControllerSince.IsZero() {
		w.noControllerSince = now
	}
	timeout := time.Duration(q.cfg.Node.Election.ElectionTicks) * q.cfg.Tick
	q.mu.Lock()
	stopping := q.shuttingDown
	q.mu.Unlock()
	if now.Sub(w.noControllerSince) < timeout || stopping {
		return
	}
	reached, voters := c.QuorumReach(timeout)
	if reached > voters/2 {
		// A majority is there: an election is under way, or just
		// finished; nothing for the operator to mend.
		return
	}
	if reached == w.warned {
		return
	}
	w.warned = reached
	q.log.Warn(fmt.Sprintf("metadata quorum: no controller; this node reaches %d of %d voters (itself included), a majority is %d: "+
		"it serves no metadata changes until a majority of controller.quorum.voters is up and reachable", reached, voters, voters/2+1),
		"reached", reached, "voters", voters, "epoch", ss.Epoch, "without_controller_for", now.Sub(w.noControllerSince).Round(time.Second).String())
}

// heardBrokers is what this node heard from each broker, on Liveness's
// clock: heartbeats (itself included) and metadata quorum messages.
func (c *Controller) heardBrokers() map[int32]BrokerHeard {
	q := c.q
	out := map[int32]BrokerHeard{}
	q.mu.Lock()
	for id, h := range q.heard {
		out[id] = BrokerHeard{Heartbeat: h.at.Sub(q.base), HeartbeatSeen: true, Registration: h.reg,
			ShuttingDown: h.shuttingDown, CatchingUp: h.catchingUp, CleanShutdown: h.cleanShutdown, BrokerEpoch: h.brokerEpoch, LogDir: h.logDir}
	}
	q.mu.Unlock()
	// Its own state is known now, not as of its last heartbeat: a node
	// elected before it ever caught up has caught up by the time it can
	// commit anything, and must not fence itself for a stale flag.
	if h, ok := out[c.cfg.NodeID]; ok {
		h.CatchingUp = !c.caughtUp()
		out[c.cfg.NodeID] = h
	}
	for id, at := range q.driver.LastHeard() {
		h := out[int32(id)]
		h.Quorum, h.QuorumSeen = at.Sub(q.base), true
		out[int32(id)] = h
	}
	return out
}

// carryOut does one decision of the Liveness core through the event loop,
// and logs it once committed.
func (c *Controller) carryOut(ctx context.Context, a LivenessAction) {
	q := c.q
	switch a.Kind {
	case ActionClusterID:
		id := c.cfg.ClusterID
		if id == "" {
			id = NewUUID().String()
		}
		var res error
		err := c.run(ctx, func() { res = commitResult(c.commit, DecideClusterID(c.Image(), id)) })
		if err := errors.Join(err, res); err != nil {
			q.log.Debug("metadata quorum: cluster id not recorded yet", "err", err)
			return
		}
		q.log.Info("metadata quorum: new cluster", "cluster.id", id)
	case ActionRegister:
		if err := c.RegisterBroker(ctx, a.Registration, !a.Unclean); err != nil {
			q.log.Debug("metadata quorum: broker registration not committed", "broker", a.Broker, "err", err)
			return
		}
		lvl := slog.LevelInfo
		if a.Unclean {
			lvl = slog.LevelWarn
		}
		q.log.Log(ctx, lvl, "metadata quorum: broker registered", "broker", a.Broker, "fenced", a.Registration.Fenced,
			"unclean", a.Unclean, "incarnation", a.Registration.IncarnationID.String(),
			"reason", a.Reason, "listeners", fmt.Sprint(a.Registration.Listeners))
	case ActionUnfence:
		if err := c.UnfenceBroker(ctx, a.Broker); err == nil {
			q.log.Info("metadata quorum: broker heard again, unfenced", "broker", a.Broker)
		}
	case ActionFence:
		if err := c.FenceBroker(ctx, a.Broker); err == nil {
			q.log.Warn("metadata quorum: broker fenced", "broker", a.Broker, "reason", a.Reason,
				"silent_for", a.SilentFor.Round(time.Millisecond).String())
		}
	case ActionControlledShutdown:
		if err := c.ControlledShutdown(ctx, a.Broker); err == nil {
			q.log.Info("metadata quorum: controlled shutdown of a broker", "broker", a.Broker, "reason", a.Reason)
		}
	case ActionRebalance:
		c.rebalanceOnce(ctx, c.cfg.LeaderRebalance.PerBrokerPercentage)
	case ActionLogDirOffline, ActionLogDirOnline:
		changes, err := c.SetBrokerLogDir(ctx, a.Broker, a.LogDir)
		if err != nil {
			q.log.Debug("metadata quorum: broker log dir state not committed", "broker", a.Broker, "err", err)
			return
		}
		var moved []string
		for _, ch := range changes {
			moved = append(moved, fmt.Sprintf("%s-%d leader %d->%d isr %v", ch.Topic, ch.After.Partition, ch.Before.Leader, ch.After.Leader, ch.After.ISR))
		}
		if a.Kind == ActionLogDirOffline {
			q.log.Warn("metadata quorum: broker's log dir takes no writes; it leaves every ISR and its leaderships move to in-sync replicas that can write",
				"broker", a.Broker, "dir", a.LogDir.Dir, "log_dir_reason", a.LogDir.Reason, "detail", a.LogDir.Detail, "reason", a.Reason,
				"partitions_changed", len(changes), "changes", strings.Join(moved, "; "))
		} else {
			q.log.Info("metadata quorum: broker's log dir takes writes again; it rejoins ISRs as it catches up",
				"broker", a.Broker, "partitions_changed", len(changes), "changes", strings.Join(moved, "; "))
		}
	}
}

// LogDirChanged tells the heartbeat loop that this node's log dir may
// have started or stopped taking writes (QuorumConfig.LogDir): it
// heartbeats at once, so the controller moves its leaderships within a
// round trip rather than a heartbeat interval.
func (c *Controller) LogDirChanged() {
	if c.q == nil {
		return
	}
	select {
	case c.q.kick <- struct{}{}:
	default:
	}
}

// rebalanceOnce is one auto.leader.rebalance check, logged when it moves
// leaders.
func (c *Controller) rebalanceOnce(ctx context.Context, percentPerBroker int) {
	changes, err := c.RebalanceLeaders(ctx, percentPerBroker)
	if err != nil {
		c.q.log.Debug("metadata quorum: leader rebalance not committed", "err", err)
		return
	}
	for _, ch := range changes {
		c.q.log.Info("metadata quorum: preferred leader elected for balance", "topic", ch.Topic, "partition", ch.After.Partition,
			"leader", ch.After.Leader, "previous_leader", ch.Before.Leader, "leader_epoch", ch.After.LeaderEpoch)
	}
}

func sameListeners(b BrokerImage, r *BrokerRegistrationRecord) bool {
	return b.Rack == r.Rack && fmt.Sprint(b.Listeners) == fmt.Sprint(r.Listeners)
}

// RequestControlledShutdown is this node's broker asking the acting
// controller to move its leaderships away before it exits (SIGTERM):
// applied here when this node is the acting controller, else sent over
// the CONTROLLER listener as the heartbeats are. From then on its
// heartbeats carry the shutdown flag, so the controller keeps it fenced.
// It returns once the change is committed; the caller waits for its image
// to show it. A one-voter controller has nobody to hand leadership to:
// nothing to do.
func (c *Controller) RequestControlledShutdown(ctx context.Context) error {
	q := c.q
	if q == nil {
		return nil
	}
	q.mu.Lock()
	q.shuttingDown = true
	q.mu.Unlock()
	if c.Acting() {
		return c.controlledShutdownOf(ctx, c.cfg.NodeID)
	}
	a, err := c.forward(ctx, appMessage{Kind: appControlledShutdown})
	if err != nil {
		return err
	}
	return a.err
}

// controlledShutdownOf runs on the acting controller: the broker is
// marked shutting down before its leaderships move, so no heartbeat
// already in flight unfences it again.
func (c *Controller) controlledShutdownOf(ctx context.Context, id int32) error {
	q := c.q
	q.mu.Lock()
	if h, ok := q.heard[id]; ok {
		h.shuttingDown = true
		q.heard[id] = h
	}
	q.mu.Unlock()
	return c.ControlledShutdown(ctx, id)
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// CaughtUp is closed once this node's image is current: on a quorum, once
// it applied everything the acting controller had committed when this
// node first heard its commit index (Kafka's initial catch-up of a
// broker's metadata); at once with one voter. Until then the image is the
// one replayed from this node's own disk, which misses whatever changed
// while it was down: it must not answer clients or lead from it.
func (c *Controller) CaughtUp() <-chan struct{} {
	if c.q == nil {
		return closedChan
	}
	return c.q.driver.CaughtUp()
}

func (c *Controller) caughtUp() bool {
	select {
	case <-c.CaughtUp():
		return true
	default:
		return false
	}
}

// CatchUpStatus says why this node has not caught up yet ("" once it
// has, and the controller registered this process): no controller is known (a minority side), or how far its applied
// image is behind the controller's commit index.
func (c *Controller) CatchUpStatus(ctx context.Context) string {
	if c.caughtUp() {
		select {
		case <-c.Registered():
			return ""
		default:
			return fmt.Sprintf("caught up with the metadata log; waiting for the controller to register this restart of the broker (incarnation %s)", c.q.incarnation)
		}
	}
	st, err := c.q.driver.Status(ctx)
	if err != nil {
		return fmt.Sprintf("catching up with the metadata log: quorum status unknown: %v", err)
	}
	if ss := st.Election.Soft; ss.Controller == election.None {
		return fmt.Sprintf("catching up with the metadata log: no controller reachable (epoch %d, applied %d); a majority of controller.quorum.voters must be up and reachable",
			ss.Epoch, st.Applied)
	}
	return fmt.Sprintf("catching up with the metadata log: applied %d of the controller's commit index %d (controller %d)",
		st.Applied, st.ControllerCommit, int32(st.Election.Soft.Controller))
}
