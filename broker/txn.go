package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/txn"
	txncoord "github.com/wren-broker/wren/txn/coordinator"
)

// The transaction coordinator's wiring: the driver (txn/coordinator) on
// this node's replicas of __transaction_state, created on first use;
// the markers it writes (WriteTxnMarkers to each partition's leader: this
// node's own handler, or another node's client listener); and Produce's
// KIP-890 verification, asked of the coordinator wherever it is.

// txnTopicTimeout bounds one attempt at creating __transaction_state.
const txnTopicTimeout = 30 * time.Second

// txnComponent is the transaction coordinator.
func (b *Broker) txnComponent() component {
	var run *task
	return component{name: "transaction coordinator",
		start: func() (err error) {
			cfg := b.cfg
			b.txnPeers = &txnPeers{b: b}
			b.txn, err = txncoord.New(txncoord.Config{
				Txn:          txn.Config{MaxTimeoutMs: cfg.TransactionMaxTimeoutMs, IDExpirationMs: int64(cfg.TransactionalIDExpirationMs)},
				Partitions:   b.txnPartitions,
				TickInterval: time.Duration(cfg.TransactionAbortCleanupIntervalMs) * time.Millisecond,
				Markers:      b.txnPeers,
				Logger:       b.logger,
			}, b.replicas)
			if err != nil {
				return err
			}
			run = goTask(b.txn.Run)
			return nil
		},
		close: func() error {
			err := run.stop()
			b.txnPeers.close()
			return err
		},
	}
}

// txnPartitions is __transaction_state's partition count, 0 while it
// does not exist.
func (b *Broker) txnPartitions() int32 {
	if t := b.controller.Image().Topic(txn.StateTopic); t != nil {
		return int32(len(t.Partitions))
	}
	return 0
}

// txnPeers reaches the partition leaders and coordinators on other nodes,
// and this node's own handlers for its partitions.
type txnPeers struct {
	b *Broker
	// server is this node's Kafka server, set once it exists.
	server atomic.Pointer[kafka.Server]

	mu     sync.Mutex
	client *kgo.Client
	closed bool

	creating atomic.Bool
	// held, set by tests, writes no marker (every partition is left for
	// the next round): a coordinator stopped between its decision and
	// its markers.
	held atomic.Bool
}

// kgoClient is the client of the other nodes' client listeners, made on
// first use with this node as its seed: it finds partition leaders and
// transaction coordinators from the cluster's metadata.
func (p *txnPeers) kgoClient() (*kgo.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("broker: closed")
	}
	if p.client == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.b.Addr().String()), kgo.ClientID("wren-txn-"+fmt.Sprint(p.b.cfg.NodeID)),
			kgo.RequestRetries(0), kgo.RetryTimeout(5*time.Second))
		if err != nil {
			return nil, err
		}
		p.client = cl
	}
	return p.client, nil
}

func (p *txnPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.client != nil {
		p.client.Close()
	}
}

// WriteMarkers is coordinator.MarkerWriter: markers for the partitions
// this node leads go to its own handler, the others in one
// WriteTxnMarkers that the client sends to each leader. A partition whose
// topic no longer exists counts as written (Kafka drops its marker).
func (p *txnPeers) WriteMarkers(ctx context.Context, m txn.Markers, coordinatorEpoch int32) []txn.TopicPartition {
	if p.held.Load() {
		return m.Partitions
	}
	im := p.b.controller.Image()
	self := p.b.cfg.NodeID
	srv := p.server.Load()
	var left, remote []txn.TopicPartition
	marker := engine.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: coordinatorEpoch}
	for _, tp := range m.Partitions {
		t := im.Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		if t.Partitions[tp.Partition].Leader != self {
			remote = append(remote, tp)
			continue
		}
		if srv == nil {
			left = append(left, tp)
			continue
		}
		if code := srv.WriteTxnMarker(ctx, engine.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}, marker); code != 0 {
			p.b.logger.Debug("transaction marker not written; will retry", "partition", tp, "producer", m.ProducerID, "err", kerr.ErrorForCode(code))
			left = append(left, tp)
		}
	}
	if len(remote) == 0 {
		return left
	}
	cl, err := p.kgoClient()
	if err != nil {
		return append(left, remote...)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, coordinatorEpoch
	for _, tp := range remote {
		if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
		}
		rm.Topics[len(rm.Topics)-1].Partitions = append(rm.Topics[len(rm.Topics)-1].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	done := map[txn.TopicPartition]bool{}
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			continue
		}
		resp := sh.Resp.(*kmsg.WriteTxnMarkersResponse)
		for _, mk := range resp.Markers {
			for _, t := range mk.Topics {
				for _, pp := range t.Partitions {
					tp := txn.TopicPartition{Topic: t.Topic, Partition: pp.Partition}
					switch pp.ErrorCode {
					case 0, kerr.UnknownTopicOrPartition.Code:
						if pp.ErrorCode == 0 || im.Topic(t.Topic) == nil {
							done[tp] = true
						}
					default:
						p.b.logger.Debug("transaction marker not written; will retry", "partition", tp, "producer", m.ProducerID, "err", kerr.ErrorForCode(pp.ErrorCode))
					}
				}
			}
		}
	}
	for _, tp := range remote {
		if !done[tp] {
			left = append(left, tp)
		}
	}
	return left
}

// verify asks the coordinator of req's id on another node.
func (p *txnPeers) verify(ctx context.Context, r txn.AddPartitionsRequest) (txn.Response, error) {
	cl, err := p.kgoClient()
	if err != nil {
		return txn.Response{}, err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = r.TransactionalID, r.ProducerID, r.ProducerEpoch, true
	for _, tp := range r.Partitions {
		if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic = tp.Topic
			rt.Topics = append(rt.Topics, tt)
		}
		rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, rt)
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		return txn.Response{}, err
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	out := txn.Response{ErrorCode: resp.ErrorCode, Partitions: map[txn.TopicPartition]int16{}}
	for _, t := range resp.Transactions {
		for _, tt := range t.Topics {
			for _, pp := range tt.Partitions {
				out.Partitions[txn.TopicPartition{Topic: tt.Topic, Partition: pp.Partition}] = pp.ErrorCode
			}
		}
	}
	return out, nil
}

// ensureTopic starts creating __transaction_state unless it exists or is
// being created.
func (p *txnPeers) ensureTopic() bool {
	if p.b.controller.Image().Topic(txn.StateTopic) != nil {
		return true
	}
	if !p.creating.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer p.creating.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), txnTopicTimeout)
		defer cancel()
		if err := p.createTopic(ctx); err != nil {
			p.b.logger.Info("transaction state topic not created yet; a client's retry asks again", "err", err)
		}
	}()
	return false
}

// createTopic creates __transaction_state: compacted, with
// transaction.state.log.* settings, the replication factor at most the
// voters. The acting controller creates it; another node forwards the
// request to it.
func (p *txnPeers) createTopic(ctx context.Context) error {
	cfg := p.b.cfg
	rf := cfg.TransactionStateLogReplication
	if n := int16(len(cfg.Voters)); n > 0 && rf > n {
		rf = n
	}
	minISR := fmt.Sprint(min(int(cfg.TransactionStateLogMinISR), int(rf)))
	compact := "compact"
	c := p.b.controller
	if !c.ShouldForward() {
		res, err := c.CreateTopics(ctx, []cluster.CreateTopic{{
			Name: txn.StateTopic, NumPartitions: cfg.TransactionStateLogNumPartitions, ReplicationFactor: rf,
			Configs: map[string]*string{"cleanup.policy": &compact, "min.insync.replicas": &minISR},
		}}, false)
		if err != nil {
			return err
		}
		if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return err
		}
		return nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(txnTopicTimeout / time.Millisecond)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = txn.StateTopic, cfg.TransactionStateLogNumPartitions, rf
	for k, v := range map[string]string{"cleanup.policy": compact, "min.insync.replicas": minISR} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	out, err := c.ForwardRequest(ctx, int16(kmsg.CreateTopics), 7, req.AppendTo(nil), cluster.RequestOrigin{})
	if err != nil {
		return err
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.SetVersion(7)
	if err := resp.ReadFrom(out); err != nil {
		return err
	}
	if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode != 0 && resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	return nil
}

// kafkaTxn is the driver as the seam's TxnCoordinator.
type kafkaTxn struct {
	d     *txncoord.Driver
	peers *txnPeers
}

func (t kafkaTxn) Submit(ctx context.Context, id string, input kafka.TxnInput) kafka.TxnCall {
	return txnCall{t.d.Submit(ctx, id, func(c *txn.Coordinator, requestID uint64, nowMs int64) {
		input(c, requestID, nowMs)
	})}
}

func (t kafkaTxn) Verify(ctx context.Context, req txn.AddPartitionsRequest) (txn.Response, error) {
	if t.d.Leads(req.TransactionalID) {
		return t.Submit(ctx, req.TransactionalID, func(c kafka.TxnCore, requestID uint64, nowMs int64) {
			r := req
			r.RequestID = requestID
			c.AddPartitions(r, nowMs)
		}).Wait(ctx)
	}
	return t.peers.verify(ctx, req)
}

func (t kafkaTxn) EnsureTopic() bool { return t.peers.ensureTopic() }

type txnCall struct{ c *txncoord.Call }

func (c txnCall) Wait(ctx context.Context) (txn.Response, error) {
	r, err := c.c.Wait(ctx)
	if errors.Is(err, txncoord.ErrClosed) {
		return r, fmt.Errorf("%w: %w", kerr.NotCoordinator, err)
	}
	return r, err
}

// groupTxnMarkersPending stands for the group coordinator's
// WriteTxnMarker until it exists: every marker on a __consumer_offsets
// partition is refused with a retriable error, so a transaction that
// added a group's offsets (AddOffsetsToTxn) stays in PrepareCommit or
// PrepareAbort, retried, and is never half written.
// MERGE: replace with the groups/coordinator Driver (b.groups), whose
// WriteTxnMarker has exactly this signature, once both branches merge.
type groupTxnMarkersPending struct{}

func (groupTxnMarkersPending) WriteTxnMarker(context.Context, int32, int64, int16, int32, bool) error {
	return fmt.Errorf("%w: transaction markers on %s are not written by this build", kerr.CoordinatorNotAvailable, groups.OffsetsTopic)
}

var (
	_ kafka.TxnCoordinator  = kafkaTxn{}
	_ kafka.TxnCore         = (*txn.Coordinator)(nil)
	_ kafka.GroupTxnMarkers = groupTxnMarkersPending{}
)
