package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/vfs"
)

// ControllerConfig configures the controller.
type ControllerConfig struct {
	NodeID int32
	// Voters are the node ids of controller.quorum.voters. With one voter
	// the controller commits a change once it is durable on this node.
	Voters []int32
	// ClusterID for a new metadata log; empty means generate one.
	ClusterID string
	// DefaultPartitions and DefaultReplicationFactor apply when a
	// CreateTopics request asks for -1 (num.partitions,
	// default.replication.factor).
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// ValidateTopicConfig checks one topic config override (nil value =
	// delete). Nil accepts everything.
	ValidateTopicConfig func(key string, value *string) error
	// ValidateBrokerConfig checks one dynamic broker config.
	ValidateBrokerConfig func(key string, value *string) error
	// ValidateBrokerLayer checks a broker resource's dynamic configs as
	// a whole (RuleConfig.ValidateBrokerLayer).
	ValidateBrokerLayer func(name string, keys []string, configs map[string]string) error
	// Rack (broker.rack) and Listeners of this node's broker registration,
	// which the controller writes at start.
	Rack      string
	Listeners []BrokerListener
	// MinInsyncReplicas and UncleanLeaderElectionEnable are the broker
	// defaults of min.insync.replicas and unclean.leader.election.enable
	// for the leader rules, under the topic's and the cluster-wide
	// dynamic configs. Zero MinInsyncReplicas reads as 1.
	MinInsyncReplicas           int
	UncleanLeaderElectionEnable bool
	// PartitionOffsets, if set, returns the offsets last reported for a
	// partition, so an unclean election records which offsets it may have
	// lost; nil records the range as unknown.
	PartitionOffsets func(topic UUID, partition int32) *PartitionOffsets
	// LeaderRebalance, when set, has the acting controller of a quorum
	// move leadership back to preferred replicas (auto.leader.rebalance);
	// nil leaves leaders where elections put them.
	LeaderRebalance *LeaderRebalanceConfig
	// Quorum, set when controller.quorum.voters lists several nodes, makes
	// the controller a voter of the replicated metadata log. Nil (or one
	// without a Transport) with one voter makes it a quorum of one, its
	// log in QuorumDirName beside dir (or in Quorum.Dir), converted from
	// an older version's one-voter log in dir on first start.
	Quorum *QuorumConfig
}

// LeaderRebalanceConfig is auto.leader.rebalance.enable's schedule.
type LeaderRebalanceConfig struct {
	// CheckInterval is leader.imbalance.check.interval.seconds.
	CheckInterval time.Duration
	// PerBrokerPercentage is leader.imbalance.per.broker.percentage.
	PerBrokerPercentage int
}

// Controller owns the metadata log. Every change goes through its single
// event loop: validate against the current image, then commit the records
// as one entry of the replicated metadata log (so a change is all or
// nothing after a crash). The quorum driver applies committed entries to
// the image, and the publisher hands each new image to the subscribers in
// order, on its own goroutine. It needs no locks beyond the queue, as
// Kafka's own controller.
//
// One voter is a quorum of one over the same metadata log: a change
// commits once it is durable on this node, through the same path.
type Controller struct {
	cfg   ControllerConfig
	q     *quorumState
	image atomic.Pointer[Image]
	pub   *publisher

	events chan func()
	done   chan struct{}
	wg     sync.WaitGroup

	// alterISRs are the ISR changes waiting for the loop (AlterISR).
	alterISRs alterISRQueue

	closeOnce sync.Once
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("cluster: controller closed")

// QuorumDirName is the directory, beside the controller's dir, that holds
// the metadata log of a one-voter controller opened without a
// QuorumConfig (the broker keeps a quorum's there too).
const QuorumDirName = "__cluster_quorum"

// OpenController opens the metadata log, replays it into the image, and
// starts the event loop. With one voter (no QuorumConfig, or one without
// a transport) the quorum is this node alone: a one-voter metadata log
// left in dir by an older version is converted first (convert.go), the
// node elects itself, and a new log gets its cluster id and this node's
// broker registration before OpenController returns.
func OpenController(fsys vfs.FS, dir string, cfg ControllerConfig) (*Controller, error) {
	if len(cfg.Voters) == 0 {
		cfg.Voters = []int32{cfg.NodeID}
	}
	alone := len(cfg.Voters) == 1 && cfg.Voters[0] == cfg.NodeID
	if cfg.Quorum == nil || cfg.Quorum.Transport == nil {
		if !alone {
			return nil, fmt.Errorf("cluster: %d voters %v need a metadata quorum transport", len(cfg.Voters), cfg.Voters)
		}
		qc := oneVoterQuorum(cfg.NodeID, path.Join(path.Dir(dir), QuorumDirName))
		if cfg.Quorum != nil {
			qc.Dir, qc.Logger = cfg.Quorum.Dir, cfg.Quorum.Logger
			qc.SnapshotEntries, qc.SnapshotBytes = cfg.Quorum.SnapshotEntries, cfg.Quorum.SnapshotBytes
		}
		cfg.Quorum = qc
		if err := convertOneVoterLog(fsys, dir, qc.Dir); err != nil {
			return nil, err
		}
	}
	c := &Controller{cfg: cfg, events: make(chan func()), done: make(chan struct{})}
	if err := c.openQuorum(fsys); err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go c.loop()
	if alone {
		if err := c.startAlone(); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// startAlone waits for a one-voter controller to act, then gives a new log
// its cluster id and secret (a log from before secrets its secret) and
// this node's broker registration, as a one-voter cluster has nobody else
// to do it.
func (c *Controller) startAlone() error {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.waitActing(ctx); err != nil {
		return fmt.Errorf("cluster: the one-voter metadata log in %s did not start: %w", c.q.cfg.Dir, err)
	}
	var res error
	err := c.run(ctx, func() {
		im := c.Image()
		if im.ClusterID == "" {
			id := c.cfg.ClusterID
			if id == "" {
				id = NewUUID().String()
			}
			r, err := decideNewCluster(im, id)
			if res = errors.Join(err, commitResult(c.commit, r)); res != nil {
				return
			}
		} else if c.cfg.ClusterID != "" && c.cfg.ClusterID != im.ClusterID {
			res = fmt.Errorf("cluster: the metadata log in %s belongs to cluster %s, but this node was given cluster.id %s (by its config or meta.properties)",
				c.q.cfg.Dir, im.ClusterID, c.cfg.ClusterID)
			return
		} else if !im.HasClusterSecret() {
			// A log from before cluster secrets.
			r, err := decideNewCluster(im, im.ClusterID)
			if res = errors.Join(err, commitResult(c.commit, r)); res != nil {
				return
			}
		}
		// This node's broker registers itself, so placement has a broker
		// list in a one-node cluster too. A registration that did not
		// change is not written again.
		reg := RegisterBrokerRequest{Registration: BrokerRegistrationRecord{BrokerID: c.cfg.NodeID, Rack: c.cfg.Rack, Listeners: c.cfg.Listeners}, CleanShutdown: true}
		res = commitResult(c.commit, DecideRegisterBroker(c.Image(), c.rules(), reg))
	})
	if err := errors.Join(err, res); err != nil {
		return err
	}
	// The subscribers start from the replayed image, as they did when the
	// log was replayed before OpenController returned.
	return c.pub.wait(ctx, c.Image().Offset)
}

func (c *Controller) loop() {
	defer c.wg.Done()
	for {
		select {
		case fn := <-c.events:
			fn()
		case <-c.done:
			return
		}
	}
}

// run executes fn on the event loop and waits for it.
func (c *Controller) run(ctx context.Context, fn func()) error {
	finished := make(chan struct{})
	select {
	case c.events <- func() { fn(); close(finished) }:
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-finished
	return nil
}

// change runs fn, which validates a change against the image and commits
// it, on the event loop. It runs only on the acting controller whose
// image holds every committed entry: a new controller's image may lack
// entries its predecessor committed until its own leader-change entry is
// applied, and a change validated against it could be wrong (a topic
// created twice) or silently nothing (the delete of a config key the
// stale image lacks). Otherwise the change is NOT_CONTROLLER, which
// clients and the forwarding node retry.
func (c *Controller) change(ctx context.Context, fn func()) error {
	var refused error
	err := c.run(ctx, func() {
		ok, err := c.q.driver.ActingAndCurrent(ctx)
		if err != nil || !ok {
			refused = fmt.Errorf("%w: node %d is not an acting controller with a current metadata image (the controller is %d)",
				kerr.NotController, c.cfg.NodeID, c.ControllerID())
			return
		}
		fn()
	})
	if err != nil {
		return err
	}
	return refused
}

// commit appends records as one entry of the metadata log and returns
// once it is committed, applied to the image and handed to the
// subscribers. Only the event loop calls it. It is the one commit path,
// for one voter and for a quorum alike (quorum_apply.go).
func (c *Controller) commit(recs []Record) error {
	return c.proposeRecords(recs)
}

// Image returns the current metadata image.
func (c *Controller) Image() *Image { return c.image.Load() }

// ClusterID is the cluster's id.
func (c *Controller) ClusterID() string { return c.Image().ClusterID }

// NodeID is this node's id.
func (c *Controller) NodeID() int32 { return c.cfg.NodeID }

// ControllerID is the id of the active controller, -1 while none is
// known.
func (c *Controller) ControllerID() int32 {
	return int32(c.q.driver.SoftState().Controller)
}

// Brokers lists the node ids of the brokers, sorted: the registered
// unfenced brokers and this node, as Kafka's Metadata lists only live
// brokers.
func (c *Controller) Brokers() []int32 {
	b := []int32{c.cfg.NodeID}
	for _, r := range c.Image().Brokers() {
		if !r.Fenced && r.ID != c.cfg.NodeID {
			b = append(b, r.ID)
		}
	}
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return b
}

// Voters are the node ids of controller.quorum.voters, sorted.
func (c *Controller) Voters() []int32 {
	v := append([]int32(nil), c.cfg.Voters...)
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v
}

// alone reports whether this node is the only voter: a quorum of one,
// with no peers to heartbeat to, forward to or hand leadership to.
func (c *Controller) alone() bool { return len(c.cfg.Voters) == 1 }

// Subscribe registers fn to run after each new image, on the publisher's
// goroutine (publish.go), and runs it once now with (nil, current image)
// so the subscriber starts from a complete view: it first waits, for at
// most commitTimeout, until the publisher has handed out the image
// applied now (a replayed log, say), then starts from the image the
// other subscribers hold. fn must not wait for the controller's loop.
func (c *Controller) Subscribe(fn func(old, new *Image)) error {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.pub.wait(ctx, c.Image().Offset); errors.Is(err, ErrClosed) {
		return err
	}
	c.pub.subscribe(fn)
	return nil
}

// Close stops the loop and closes the metadata log.
func (c *Controller) Close() error {
	var err error
	c.closeOnce.Do(func() {
		// The housekeeping goroutines call into the loop: stop them
		// first.
		close(c.q.stop)
		c.q.wg.Wait()
		close(c.done)
		c.wg.Wait()
		err = c.q.driver.Close()
		c.pub.close()
	})
	return err
}
