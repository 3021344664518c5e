package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/replication"
	"github.com/wren-broker/wren/txn"
)

// StateTopic is Kafka's topic of transaction metadata.
const StateTopic = txn.StateTopic

var (
	// ErrClosed is returned to requests submitted after Run ended.
	ErrClosed = errors.New("txn coordinator: driver closed")
	// ErrNotCoordinator: this node does not coordinate the transactional
	// id (its __transaction_state partition is not loaded here).
	ErrNotCoordinator = fmt.Errorf("%w: not the coordinator of this transactional id", kerr.NotCoordinator)
	// ErrNoTopic: __transaction_state does not exist yet.
	ErrNoTopic = fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, StateTopic)
)

const (
	submitQueueLen   = 1024
	deliveryQueueLen = 1024
	loadReadBytes    = 1 << 20
	// markerBackoff bounds the wait between two rounds of markers that
	// did not all land (a leader moving, a node down).
	markerBackoffMin = 50 * time.Millisecond
	markerBackoffMax = time.Second
)

// MarkerWriter writes a transaction's markers to the leaders of its
// partitions (WriteTxnMarkers) and returns the partitions whose marker is
// not written yet; the driver calls it again for those until none is left
// or the coordinator is unloaded (ctx ends).
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, m txn.Markers, coordinatorEpoch int32) []txn.TopicPartition
}

// Config is the Driver's settings.
type Config struct {
	Txn txn.Config
	// Partitions is __transaction_state's partition count in the
	// committed metadata, 0 while the topic does not exist.
	Partitions func() int32
	// TickInterval is how often timed-out transactions and expired ids
	// are looked for (transaction.abort.timed.out.transaction.cleanup.interval.ms),
	// and leadership is checked.
	TickInterval time.Duration
	Markers      MarkerWriter
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Driver owns the transaction coordinators of this node: one per
// __transaction_state partition it leads, loaded by replaying the
// partition, fed from one goroutine (Run), its records appended with
// acks=all and its answers given only once they are durable.
type Driver struct {
	cfg      Config
	replicas *replication.Manager
	submitc  chan func()
	done     chan struct{}

	mu      sync.Mutex
	nextID  uint64
	waiters map[uint64]chan txn.Response

	// Owned by Run.
	loaded  map[int32]*loadedPartition
	loadErr map[int32]string
	count   int32
}

type loadedPartition struct {
	c        *txn.Coordinator
	epoch    int32
	p        *replication.Partition
	fifo     chan delivery
	fifoDone chan struct{}
	// ctx ends when the partition is unloaded: its markers stop.
	ctx    context.Context
	cancel context.CancelFunc
}

type delivery struct {
	wait      func() error
	responses []txn.Response
	markers   []txn.Markers
}

// New returns a Driver for the partitions replicas hosts.
func New(cfg Config, replicas *replication.Manager) (*Driver, error) {
	if err := cfg.Txn.Validate(); err != nil {
		return nil, err
	}
	if cfg.TickInterval <= 0 || cfg.Partitions == nil || cfg.Markers == nil {
		return nil, fmt.Errorf("txn coordinator: tick %v must be positive, partitions and markers set", cfg.TickInterval)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Driver{cfg: cfg, replicas: replicas, submitc: make(chan func(), submitQueueLen), done: make(chan struct{}),
		waiters: map[uint64]chan txn.Response{}, loaded: map[int32]*loadedPartition{}}, nil
}

func (d *Driver) nowMs() int64 { return d.cfg.Now().UnixMilli() }

// Run owns the coordinators until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	defer close(d.done)
	tick := time.NewTicker(d.cfg.TickInterval)
	defer tick.Stop()
	d.checkLeadership()
	for {
		select {
		case <-ctx.Done():
			var fifos []chan struct{}
			for p, lp := range d.loaded {
				fifos = append(fifos, lp.fifoDone)
				d.unload(p)
			}
			for _, done := range fifos {
				<-done
			}
			return
		case fn := <-d.submitc:
			fn()
		case <-tick.C:
			d.checkLeadership()
			now := d.nowMs()
			for p, lp := range d.loaded {
				lp.c.Tick(now)
				d.drain(p)
			}
		}
	}
}

func (d *Driver) checkLeadership() {
	n := d.cfg.Partitions()
	if n != d.count {
		// The topic appeared (or, by hand, changed): the ids map anew.
		for p := range d.loaded {
			d.unload(p)
		}
		d.count = n
	}
	for i := int32(0); i < d.count; i++ {
		d.checkPartition(i)
	}
}

// checkPartition is groups/coordinator's: load once this node leads and
// its high watermark reached its leader epoch start offset, unload when it
// stops leading. It reports whether this node leads but may not load yet.
func (d *Driver) checkPartition(i int32) (loading bool) {
	p := d.replicas.Partition(engine.TopicPartition{Topic: StateTopic, Partition: i})
	leader, epoch, hw, epochStart := false, int32(0), int64(0), int64(0)
	if p != nil {
		leader, epoch, hw, epochStart = p.LeaderState()
	}
	caughtUp := leader && hw >= epochStart
	lp := d.loaded[i]
	switch {
	case lp != nil && (!leader || lp.epoch != epoch || lp.p != p):
		d.unload(i)
		if caughtUp {
			d.load(i, p, epoch)
		}
	case lp == nil && caughtUp:
		d.load(i, p, epoch)
	}
	return leader && !caughtUp
}

func (d *Driver) load(i int32, p *replication.Partition, epoch int32) {
	c, err := txn.NewCoordinator(d.cfg.Txn, i, d.count)
	if err != nil {
		panic(fmt.Sprintf("txn coordinator: config validated in New was refused: %v", err))
	}
	if err := replay(c, p.Log(), p.HighWatermark()); err != nil {
		d.loadFailed(i, err)
		return
	}
	c.CompleteLoad()
	delete(d.loadErr, i)
	ctx, cancel := context.WithCancel(context.Background())
	lp := &loadedPartition{c: c, epoch: epoch, p: p, fifo: make(chan delivery, deliveryQueueLen), fifoDone: make(chan struct{}), ctx: ctx, cancel: cancel}
	go d.deliverLoop(i, lp)
	d.loaded[i] = lp
	d.cfg.Logger.Debug("transaction coordinator loaded", "partition", i, "epoch", epoch)
	d.drain(i) // the markers of transactions found prepared
}

func (d *Driver) loadFailed(i int32, err error) {
	if d.loadErr == nil {
		d.loadErr = map[int32]string{}
	}
	if d.loadErr[i] == err.Error() {
		d.cfg.Logger.Debug("cannot load transaction coordinator; will retry", "partition", i, "err", err)
		return
	}
	d.loadErr[i] = err.Error()
	d.cfg.Logger.Error("cannot load transaction coordinator; will retry", "partition", i, "err", err)
}

// replay feeds the records below the high watermark end to c.
func replay(c *txn.Coordinator, l *engine.Log, end int64) error {
	offset := l.LogStartOffset()
	for offset < end {
		b, err := l.ReadBatches(offset, loadReadBytes, end)
		if err != nil {
			return fmt.Errorf("txn coordinator: read %s at %d: %w", StateTopic, offset, err)
		}
		if len(b) == 0 {
			return fmt.Errorf("txn coordinator: read %s at %d below log end %d returned nothing", StateTopic, offset, end)
		}
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				return fmt.Errorf("txn coordinator: batch at %d: %w", offset, err)
			}
			one := b[:h.Size()]
			b = b[h.Size():]
			offset = h.NextOffset()
			if h.IsControl() {
				continue
			}
			err = batch.Records(one, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
				var value []byte
				if r.Value != nil {
					value = bytes.Clone(r.Value)
				}
				rec, err := txn.DecodeRecord(bytes.Clone(r.Key), value)
				if errors.Is(err, txn.ErrUnknownRecordType) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("record at %d: %w", r.Offset, err)
				}
				return c.Replay(rec)
			})
			if err != nil {
				return fmt.Errorf("txn coordinator: batch at %d: %w", h.BaseOffset, err)
			}
		}
	}
	return nil
}

func (d *Driver) unload(i int32) {
	lp := d.loaded[i]
	if lp == nil {
		return
	}
	delete(d.loaded, i)
	lp.cancel()
	lp.c.Unload()
	close(lp.fifo)
}

// drain appends partition i's records and queues its answers and markers
// behind them.
func (d *Driver) drain(i int32) {
	lp := d.loaded[i]
	if lp == nil || !lp.c.HasReady() {
		return
	}
	rd := lp.c.Ready()
	if len(rd.Records) == 0 {
		lp.fifo <- delivery{responses: rd.Responses, markers: rd.Markers}
		return
	}
	b := batch.NewBuilder(batch.CompressionNone)
	now := d.nowMs()
	for _, r := range rd.Records {
		b.Append(batch.Record{Timestamp: now, Key: r.EncodeKey(), Value: r.EncodeValue()})
	}
	raw, err := b.Build()
	var wait func() error
	if err == nil {
		_, wait, err = lp.p.AppendAsLeader(raw, -1)
	}
	if err != nil {
		d.cfg.Logger.Warn("transaction coordinator append failed; unloading", "partition", i, "err", err)
		lp.fifo <- delivery{responses: withError(rd.Responses, appendErrorCode(lp.p))}
		d.unload(i)
		return
	}
	lp.fifo <- delivery{wait: wait, responses: rd.Responses, markers: rd.Markers}
}

func appendErrorCode(p *replication.Partition) int16 {
	if leader, _ := p.Leader(); !leader {
		return kerr.NotCoordinator.Code
	}
	// Retriable: the client asks again, and a reloaded coordinator
	// answers from the log.
	return kerr.CoordinatorNotAvailable.Code
}

func withError(rs []txn.Response, code int16) []txn.Response {
	out := make([]txn.Response, len(rs))
	for i, r := range rs {
		out[i] = r.WithError(code)
	}
	return out
}

// deliverLoop answers partition i's requests in Ready order, each after its
// append is durable, and only then starts the markers decided with it.
func (d *Driver) deliverLoop(i int32, lp *loadedPartition) {
	defer close(lp.fifoDone)
	failed := false
	for dl := range lp.fifo {
		rs := dl.responses
		if failed {
			rs = withError(rs, kerr.NotCoordinator.Code)
		} else if dl.wait != nil {
			if err := dl.wait(); err != nil {
				failed = true
				d.cfg.Logger.Warn("transaction coordinator append not durable; unloading", "partition", i, "err", err)
				rs = withError(rs, appendErrorCode(lp.p))
				go d.submit(context.Background(), func() {
					if d.loaded[i] == lp {
						d.unload(i)
					}
				})
			}
		}
		if !failed {
			for _, mk := range dl.markers {
				go d.writeMarkers(i, lp, mk)
			}
		}
		d.deliver(rs)
	}
}

// writeMarkers writes mk's markers until every partition has it, then
// tells the coordinator (which appends the Complete* record). It stops
// when the partition is unloaded: the next coordinator resumes from the
// Prepare* record.
func (d *Driver) writeMarkers(i int32, lp *loadedPartition, mk txn.Markers) {
	left := mk
	backoff := markerBackoffMin
	for len(left.Partitions) > 0 {
		rest := d.cfg.Markers.WriteMarkers(lp.ctx, left, lp.epoch)
		if lp.ctx.Err() != nil {
			return
		}
		left.Partitions = rest
		if len(rest) == 0 {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-lp.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, markerBackoffMax)
	}
	_ = d.submit(lp.ctx, func() {
		if d.loaded[i] != lp {
			return
		}
		lp.c.MarkersWritten(mk, d.nowMs())
		d.drain(i)
	})
}

func (d *Driver) deliver(rs []txn.Response) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range rs {
		if ch, ok := d.waiters[r.RequestID]; ok {
			delete(d.waiters, r.RequestID)
			ch <- r
		}
	}
}

func (d *Driver) submit(ctx context.Context, fn func()) error {
	select {
	case d.submitc <- fn:
		return nil
	case <-d.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Call is one request in flight.
type Call struct {
	d   *Driver
	id  uint64
	ch  chan txn.Response
	err error
}

// Submit hands a request for the transactional id to the owner goroutine:
// input is called there with the coordinator of the id's partition and
// must feed exactly one request to it.
func (d *Driver) Submit(ctx context.Context, id string, input func(c *txn.Coordinator, requestID uint64, nowMs int64)) *Call {
	d.mu.Lock()
	d.nextID++
	call := &Call{d: d, id: d.nextID, ch: make(chan txn.Response, 1)}
	d.waiters[call.id] = call.ch
	d.mu.Unlock()
	err := d.submit(ctx, func() {
		if n := d.cfg.Partitions(); n != d.count {
			d.checkLeadership()
		}
		if d.count == 0 {
			call.fail(ErrNoTopic)
			return
		}
		i := txn.PartitionFor(id, d.count)
		loading := d.checkPartition(i)
		lp := d.loaded[i]
		switch {
		case lp == nil && loading:
			call.fail(fmt.Errorf("%w: %s-%d is loading", kerr.CoordinatorLoadInProgress, StateTopic, i))
			return
		case lp == nil:
			call.fail(ErrNotCoordinator)
			return
		}
		input(lp.c, call.id, d.nowMs())
		d.drain(i)
	})
	if err != nil {
		call.fail(err)
	}
	return call
}

func (c *Call) fail(err error) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if _, ok := c.d.waiters[c.id]; ok {
		delete(c.d.waiters, c.id)
		c.err = err
		close(c.ch)
	}
}

// Wait returns the response, or the error that kept the request from a
// coordinator (ErrNotCoordinator, a load in progress, ErrClosed), or
// ctx's.
func (c *Call) Wait(ctx context.Context) (txn.Response, error) {
	select {
	case r, ok := <-c.ch:
		if !ok {
			return txn.Response{}, c.err
		}
		return r, nil
	case <-ctx.Done():
		c.d.mu.Lock()
		delete(c.d.waiters, c.id)
		c.d.mu.Unlock()
		return txn.Response{}, ctx.Err()
	case <-c.d.done:
		return txn.Response{}, ErrClosed
	}
}

// Leads reports whether this node leads the transactional id's partition
// (a hint, read without the owner).
func (d *Driver) Leads(id string) bool {
	n := d.cfg.Partitions()
	if n <= 0 {
		return false
	}
	p := d.replicas.Partition(engine.TopicPartition{Topic: StateTopic, Partition: txn.PartitionFor(id, n)})
	if p == nil {
		return false
	}
	leader, _ := p.Leader()
	return leader
}

// Inspect runs fn on the owner goroutine with every loaded coordinator
// (for List and Describe, which answer at once), and reports whether some
// partition this node leads is still loading.
func (d *Driver) Inspect(ctx context.Context, fn func(c *txn.Coordinator)) (loading bool, err error) {
	done := make(chan bool, 1)
	err = d.submit(ctx, func() {
		l := false
		for i := int32(0); i < d.count; i++ {
			if d.checkPartition(i) {
				l = true
			}
			if lp := d.loaded[i]; lp != nil {
				fn(lp.c)
			}
		}
		done <- l
	})
	if err != nil {
		return false, err
	}
	select {
	case l := <-done:
		return l, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-d.done:
		return false, ErrClosed
	}
}
