package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wal"
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
	// the controller a voter of the replicated metadata log; nil keeps the
	// one-voter controller over the local log in dir.
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
// event loop: validate against the current image, append the records as
// one durable wal entry (so a change is all or nothing after a crash),
// apply them, and publish the new image to subscribers in order. It needs
// no locks beyond the queue, as Kafka's own controller.
//
// With one voter a change commits when it is durable in this node's own
// log. With several (ControllerConfig.Quorum) the acting controller
// proposes it through the replicated metadata log (cluster/quorum: Bully
// election with epochs, the log replicated to a majority), it commits at
// a majority, and every node's image is the replay of committed entries.
type Controller struct {
	cfg   ControllerConfig
	log   *wal.Log // the one-voter log; nil on a quorum
	q     *quorumState
	image atomic.Pointer[Image]

	events chan func()
	done   chan struct{}
	wg     sync.WaitGroup

	// alterISRs are the ISR changes waiting for the loop (AlterISR).
	alterISRs alterISRQueue

	// subscribers run on the loop goroutine after each published image.
	subMu       sync.Mutex
	subscribers []func(old, new *Image)
	closeOnce   sync.Once
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("cluster: controller closed")

// OpenController opens the metadata log in dir, replays it into the
// image, and starts the event loop. A new log gets its cluster id first.
func OpenController(fsys vfs.FS, dir string, cfg ControllerConfig) (*Controller, error) {
	if len(cfg.Voters) == 0 {
		cfg.Voters = []int32{cfg.NodeID}
	}
	if cfg.Quorum != nil {
		c := &Controller{cfg: cfg, events: make(chan func()), done: make(chan struct{})}
		if err := c.openQuorum(fsys); err != nil {
			return nil, err
		}
		c.wg.Add(1)
		go c.loop()
		return c, nil
	}
	l, err := wal.Open(fsys, dir, wal.Options{})
	if err != nil {
		return nil, fmt.Errorf("cluster: metadata log: %w", err)
	}
	c := &Controller{cfg: cfg, log: l, events: make(chan func()), done: make(chan struct{})}
	im := emptyImage()
	err = l.Scan(l.FirstIndex(), func(index uint64, payload []byte) error {
		recs, err := decodeEntry(payload)
		if err != nil {
			return fmt.Errorf("metadata log entry %d: %w", index, err)
		}
		im, err = applyRecords(im, index, recs)
		return err
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	c.image.Store(im)
	if im.ClusterID == "" {
		id := cfg.ClusterID
		if id == "" {
			id = NewUUID().String()
		}
		if err := commitResult(c.commit, DecideClusterID(im, id)); err != nil {
			l.Close()
			return nil, err
		}
	} else if cfg.ClusterID != "" && cfg.ClusterID != im.ClusterID {
		l.Close()
		return nil, fmt.Errorf("cluster: the metadata log in %s belongs to cluster %s, but this node was given cluster.id %s (by its config or meta.properties)", dir, im.ClusterID, cfg.ClusterID)
	}
	// This node's broker registers itself, so placement has a broker list
	// in a one-node cluster too. A registration that did not change is not
	// written again.
	reg := RegisterBrokerRequest{Registration: BrokerRegistrationRecord{BrokerID: cfg.NodeID, Rack: cfg.Rack, Listeners: cfg.Listeners}, CleanShutdown: true}
	if err := commitResult(c.commit, DecideRegisterBroker(c.Image(), c.rules(), reg)); err != nil {
		l.Close()
		return nil, err
	}
	c.wg.Add(1)
	go c.loop()
	return c, nil
}

func decodeEntry(payload []byte) ([]Record, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil {
		return nil, fmt.Errorf("cluster: bad metadata entry: %w", err)
	}
	out := make([]Record, 0, len(raws))
	for _, raw := range raws {
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
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
// it, on the event loop. On a quorum it runs only on the acting controller
// whose image holds every committed entry: a new controller's image may
// lack entries its predecessor committed until its own leader-change entry
// is applied, and a change validated against it could be wrong (a topic
// created twice) or silently nothing (the delete of a config key the
// stale image lacks). Otherwise the change is NOT_CONTROLLER, which
// clients and the forwarding node retry.
func (c *Controller) change(ctx context.Context, fn func()) error {
	var refused error
	err := c.run(ctx, func() {
		if c.q != nil {
			ok, err := c.q.driver.ActingAndCurrent(ctx)
			if err != nil || !ok {
				refused = fmt.Errorf("%w: node %d is not an acting controller with a current metadata image (the controller is %d)",
					kerr.NotController, c.cfg.NodeID, c.ControllerID())
				return
			}
		}
		fn()
	})
	if err != nil {
		return err
	}
	return refused
}

// commit appends records as one durable entry, applies them and publishes
// the image. Only the event loop (or OpenController before it starts)
// calls it.
func (c *Controller) commit(recs []Record) error {
	if c.q != nil {
		return c.proposeRecords(recs)
	}
	payload, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	index, err := c.log.Append(payload)
	if err != nil {
		return fmt.Errorf("%w: metadata log: %w", kerr.KafkaStorageError, err)
	}
	old := c.image.Load()
	im, err := applyRecords(old, index, recs)
	if err != nil {
		// The change was validated against this image: a mismatch is a
		// controller bug, and the log now holds it.
		panic(fmt.Sprintf("cluster: committed metadata entry %d does not apply: %v", index, err))
	}
	c.image.Store(im)
	c.subMu.Lock()
	subs := append([]func(old, new *Image){}, c.subscribers...)
	c.subMu.Unlock()
	for _, fn := range subs {
		fn(old, im)
	}
	return nil
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
	if c.q != nil {
		return int32(c.q.driver.SoftState().Controller)
	}
	return c.cfg.NodeID
}

// Brokers lists the node ids of the brokers, sorted: on a quorum the
// registered unfenced brokers and this node, as Kafka's Metadata lists
// only live brokers; on one voter, the voters.
func (c *Controller) Brokers() []int32 {
	if c.q != nil {
		b := []int32{c.cfg.NodeID}
		for _, r := range c.Image().Brokers() {
			if !r.Fenced && r.ID != c.cfg.NodeID {
				b = append(b, r.ID)
			}
		}
		sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
		return b
	}
	b := append([]int32(nil), c.cfg.Voters...)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return b
}

// Voters are the node ids of controller.quorum.voters, sorted.
func (c *Controller) Voters() []int32 {
	v := append([]int32(nil), c.cfg.Voters...)
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v
}

// Subscribe registers fn to run, on the controller's loop, after each new
// image, and runs it once now with (nil, current image) so the subscriber
// starts from a complete view.
func (c *Controller) Subscribe(fn func(old, new *Image)) error {
	if c.q != nil {
		// Images are published by the quorum driver, under applyMu.
		c.q.applyMu.Lock()
		defer c.q.applyMu.Unlock()
		c.subMu.Lock()
		c.subscribers = append(c.subscribers, fn)
		c.subMu.Unlock()
		fn(nil, c.image.Load())
		return nil
	}
	return c.run(context.Background(), func() {
		c.subMu.Lock()
		c.subscribers = append(c.subscribers, fn)
		c.subMu.Unlock()
		fn(nil, c.image.Load())
	})
}

// Close stops the loop and closes the metadata log.
func (c *Controller) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.q != nil {
			// The housekeeping goroutines call into the loop: stop them
			// first.
			close(c.q.stop)
			c.q.wg.Wait()
		}
		close(c.done)
		c.wg.Wait()
		if c.q != nil {
			err = c.q.driver.Close()
			return
		}
		err = c.log.Close()
	})
	return err
}
