package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups/coordinator"
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
func (b *Broker) txnComponent(w *wiring) component {
	var run *task
	return component{name: "transaction coordinator",
		start: func() (err error) {
			cfg := b.cfg
			b.txnPeers = &txnPeers{b: b, listener: w.client.name}
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

	// listener is the client listener whose addresses the other nodes
	// are reached at.
	listener string

	mu      sync.Mutex
	clients map[int32]peerClient
	closed  bool

	creating atomic.Bool
	// held, set by tests, writes no marker (every partition is left for
	// the next round): a coordinator stopped between its decision and
	// its markers.
	held atomic.Bool
}

// peerClient is a franz-go client of one other node's client listener.
type peerClient struct {
	addr string
	cl   *kgo.Client
}

// request sends req to node over its client listener (the address it
// registered for this node's first client listener), with a client kept
// per node. Requests go to the node itself, never through the client's
// routing: what answers is the node the image names.
func (p *txnPeers) request(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	host, port, ok := p.b.controller.BrokerAddr(node, p.listener)
	if !ok {
		return nil, fmt.Errorf("%w: broker %d has no %s listener", kerr.NotCoordinator, node, p.listener)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("broker: closed")
	}
	pc, ok := p.clients[node]
	if !ok || pc.addr != addr {
		if ok {
			pc.cl.Close()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("wren-txn-"+strconv.Itoa(int(p.b.cfg.NodeID))))
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		pc = peerClient{addr: addr, cl: cl}
		if p.clients == nil {
			p.clients = map[int32]peerClient{}
		}
		p.clients[node] = pc
	}
	p.mu.Unlock()
	return pc.cl.SeedBrokers()[0].Request(ctx, req)
}

func (p *txnPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, pc := range p.clients {
		pc.cl.Close()
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
	var left []txn.TopicPartition
	remote := map[int32][]txn.TopicPartition{}
	marker := engine.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: coordinatorEpoch}
	for _, tp := range m.Partitions {
		t := im.Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		if leader := t.Partitions[tp.Partition].Leader; leader != self {
			remote[leader] = append(remote[leader], tp)
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
	for leader, tps := range remote {
		left = append(left, p.writeRemote(ctx, leader, m, coordinatorEpoch, tps)...)
	}
	return left
}

// writeRemote sends the markers of tps to their leader, another node, and
// returns the partitions not written.
func (p *txnPeers) writeRemote(ctx context.Context, leader int32, m txn.Markers, coordinatorEpoch int32, tps []txn.TopicPartition) []txn.TopicPartition {
	if leader < 0 {
		return tps
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, coordinatorEpoch
	for _, tp := range tps {
		if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
		}
		rm.Topics[len(rm.Topics)-1].Partitions = append(rm.Topics[len(rm.Topics)-1].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	kresp, err := p.request(ctx, leader, req)
	if err != nil {
		p.b.logger.Debug("transaction markers not sent; will retry", "leader", leader, "producer", m.ProducerID, "err", err)
		return tps
	}
	done := map[txn.TopicPartition]bool{}
	for _, mk := range kresp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range mk.Topics {
			for _, pp := range t.Partitions {
				tp := txn.TopicPartition{Topic: t.Topic, Partition: pp.Partition}
				if pp.ErrorCode == 0 {
					done[tp] = true
					continue
				}
				p.b.logger.Debug("transaction marker not written; will retry", "partition", tp, "producer", m.ProducerID, "err", kerr.ErrorForCode(pp.ErrorCode))
			}
		}
	}
	var left []txn.TopicPartition
	for _, tp := range tps {
		if !done[tp] {
			left = append(left, tp)
		}
	}
	return left
}

// verify asks the coordinator of req's id, the leader of its
// __transaction_state partition on another node.
func (p *txnPeers) verify(ctx context.Context, r txn.AddPartitionsRequest) (txn.Response, error) {
	t := p.b.controller.Image().Topic(txn.StateTopic)
	if t == nil || len(t.Partitions) == 0 {
		return txn.Response{}, txncoord.ErrNoTopic
	}
	leader := t.Partitions[txn.PartitionFor(r.TransactionalID, int32(len(t.Partitions)))].Leader
	if leader < 0 {
		return txn.Response{}, fmt.Errorf("%w: no leader", kerr.CoordinatorNotAvailable)
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
	kresp, err := p.request(ctx, leader, req)
	if err != nil {
		return txn.Response{}, err
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	out := txn.Response{ErrorCode: resp.ErrorCode, Partitions: map[txn.TopicPartition]int16{}}
	if resp.Version < 4 {
		// The node answered an older version: not a verification.
		return txn.Response{}, fmt.Errorf("%w: AddPartitionsToTxn v%d has no verification", kerr.CoordinatorNotAvailable, resp.Version)
	}
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

var (
	_ kafka.TxnCoordinator  = kafkaTxn{}
	_ kafka.TxnCore         = (*txn.Coordinator)(nil)
	_ kafka.GroupTxnMarkers = (*coordinator.Driver)(nil)
)
