package coordinator

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/replication"
)

// OffsetsTopic is Kafka's topic of committed offsets and group metadata.
const OffsetsTopic = groups.OffsetsTopic

var (
	// ErrClosed is returned to requests submitted after Run ended.
	ErrClosed = errors.New("coordinator: driver closed")
	// ErrNotCoordinator is returned when this node does not coordinate the
	// group (its __consumer_offsets partition is not loaded here).
	ErrNotCoordinator = errors.New("coordinator: not the coordinator of this group")
)

// Limits on what grows from client input.
const (
	// submitQueueLen bounds the requests waiting for the owner goroutine.
	submitQueueLen = 1024
	// deliveryQueueLen bounds the Readies waiting for their append's
	// durability, per partition.
	deliveryQueueLen = 1024
	// loadReadBytes is the read size while replaying a partition.
	loadReadBytes = 1 << 20
)

// Config is the Driver's settings.
type Config struct {
	Groups groups.Config
	// Partitions is offsets.topic.num.partitions.
	Partitions int32
	// TickInterval is how often groups' timers run (and leadership is
	// checked).
	TickInterval time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Topics returns the cluster's topics and the metadata version they
	// are from, or nil topics when the version is still known (the
	// version passed in). KIP-848 groups are assigned from them, and
	// classic groups rebalance when a subscribed topic grows. nil means no
	// topics.
	Topics func(known uint64) (version uint64, topics []groups.TopicMeta)
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Driver owns the coordinators of this node. Create it with New, start
// Run, and submit requests from any goroutine.
type Driver struct {
	cfg      Config
	replicas *replication.Manager
	submitc  chan func()
	done     chan struct{} // closed when Run returns

	mu      sync.Mutex
	nextID  uint64
	waiters map[uint64]chan groups.Response

	// Owned by the Run goroutine.
	loaded map[int32]*loadedPartition
	// loadErr is the last load failure per partition, so a partition that
	// cannot load (a damaged log stays so until repaired) is reported
	// once, not on every tick.
	loadErr map[int32]string
	// topics as of metadata version topicsVersion (haveTopics).
	topics        []groups.TopicMeta
	topicsVersion uint64
	haveTopics    bool
}

// loadedPartition is one coordinator with its leader epoch and the FIFO
// of its Readies.
type loadedPartition struct {
	c        *groups.Coordinator
	epoch    int32
	p        *replication.Partition
	fifo     chan delivery
	fifoDone chan struct{}
}

// delivery is one Ready's responses behind its appends' waits (none when
// the Ready had no records), waited in order.
type delivery struct {
	waits     []func() error
	responses []groups.Response
}

// New returns a Driver for the partitions replicas hosts.
func New(cfg Config, replicas *replication.Manager) (*Driver, error) {
	if err := cfg.Groups.Validate(); err != nil {
		return nil, err
	}
	if cfg.Partitions <= 0 || cfg.TickInterval <= 0 || cfg.RetentionCheckInterval <= 0 {
		return nil, fmt.Errorf("coordinator: partitions %d, tick %v, retention check %v must be positive",
			cfg.Partitions, cfg.TickInterval, cfg.RetentionCheckInterval)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Topics == nil {
		cfg.Topics = func(uint64) (uint64, []groups.TopicMeta) { return 0, nil }
	}
	return &Driver{
		cfg: cfg, replicas: replicas,
		submitc: make(chan func(), submitQueueLen),
		done:    make(chan struct{}),
		waiters: make(map[uint64]chan groups.Response),
		loaded:  make(map[int32]*loadedPartition),
	}, nil
}

// Partitions is the __consumer_offsets partition count.
func (d *Driver) Partitions() int32 { return d.cfg.Partitions }

func (d *Driver) nowMs() int64 { return d.cfg.Now().UnixMilli() }

// Run owns the coordinators until ctx ends; it then unloads them, answers
// what waits with NOT_COORDINATOR, and returns once every queued Ready
// was delivered.
func (d *Driver) Run(ctx context.Context) {
	defer close(d.done)
	tick := time.NewTicker(d.cfg.TickInterval)
	defer tick.Stop()
	expire := time.NewTicker(d.cfg.RetentionCheckInterval)
	defer expire.Stop()
	d.checkLeadership()
	for {
		select {
		case <-ctx.Done():
			// Answer what waits, and let every queued Ready finish
			// before the logs close under it.
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
		case <-expire.C:
			now := d.nowMs()
			for p, lp := range d.loaded {
				lp.c.ExpireOffsets(now)
				d.drain(p)
			}
		}
	}
}

// refreshTopics passes the topics to every coordinator when the metadata
// changed.
func (d *Driver) refreshTopics() {
	v, ts := d.cfg.Topics(d.topicsVersion)
	if d.haveTopics && (ts == nil || v == d.topicsVersion) {
		return
	}
	d.topics, d.topicsVersion, d.haveTopics = ts, v, true
	now := d.nowMs()
	for p, lp := range d.loaded {
		lp.c.UpdateTopics(d.topics, now)
		d.drain(p)
	}
}

// checkLeadership loads a coordinator for every partition this node leads
// and has none for (or at a newer epoch), and unloads the others.
func (d *Driver) checkLeadership() {
	d.refreshTopics()
	for i := int32(0); i < d.cfg.Partitions; i++ {
		d.checkPartition(i)
	}
}

// checkPartition loads partition i's coordinator if this node leads it
// and has none (or one of an older epoch), and unloads it if it does not
// lead. Every request checks its partition first, so a deposed
// coordinator never answers and a new leader loads as soon as it may. It
// reports whether this node leads but may not load yet.
//
// A new leader loads only once its high watermark reaches the log end
// offset it had when it became leader (its leader epoch start offset).
// Its high watermark is the one the old leader last sent it, which may
// lag what the old leader had committed and acknowledged (the last
// offset commits, the last generation): replaying only up to it would
// bring the group back without them, so clients saw commits go back or
// their generation refused. Kafka's new leader likewise learns its high
// watermark from its followers' fetches. Meanwhile requests get
// COORDINATOR_LOAD_IN_PROGRESS; the next tick or request tries again.
func (d *Driver) checkPartition(i int32) (loading bool) {
	p := d.replicas.Partition(engine.TopicPartition{Topic: OffsetsTopic, Partition: i})
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

// load replays partition i's log into a new coordinator.
func (d *Driver) load(i int32, p *replication.Partition, epoch int32) {
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	c, err := groups.NewCoordinator(d.cfg.Groups, i, d.cfg.Partitions, groups.SeededMemberIDs(binary.LittleEndian.Uint64(seed[:])))
	if err != nil {
		panic(fmt.Sprintf("coordinator: config validated in New was refused: %v", err))
	}
	if err := replay(c, p.Log(), p.HighWatermark()); err != nil {
		d.loadFailed(i, "cannot load group coordinator; will retry", err)
		return
	}
	if err := c.CompleteLoad(d.nowMs()); err != nil {
		d.loadFailed(i, "cannot complete group coordinator load; will retry", err)
		return
	}
	delete(d.loadErr, i)
	d.warnMisplaced(i, c.Misplaced())
	c.UpdateTopics(d.topics, d.nowMs())
	lp := &loadedPartition{c: c, epoch: epoch, p: p, fifo: make(chan delivery, deliveryQueueLen), fifoDone: make(chan struct{})}
	go d.deliverLoop(i, lp)
	d.loaded[i] = lp
	d.cfg.Logger.Debug("group coordinator loaded", "partition", i, "epoch", epoch)
}

// loadFailed logs a load failure at ERROR the first time it is seen, and
// at DEBUG while it repeats.
func (d *Driver) loadFailed(i int32, msg string, err error) {
	if d.loadErr == nil {
		d.loadErr = map[int32]string{}
	}
	if d.loadErr[i] == err.Error() {
		d.cfg.Logger.Debug(msg, "partition", i, "err", err)
		return
	}
	d.loadErr[i] = err.Error()
	d.cfg.Logger.Error(msg, "partition", i, "err", err)
}

// replay feeds the records of the log below end to c. end is the high
// watermark, not the log end: records past it were never acknowledged (an
// append whose fdatasync failed may still be readable), and a group must
// not come back with a commit its client was told had failed.
func replay(c *groups.Coordinator, l *engine.Log, end int64) error {
	offset := l.LogStartOffset()
	for offset < end {
		b, err := l.ReadBatches(offset, loadReadBytes, end)
		if err != nil {
			return fmt.Errorf("coordinator: read %s at %d: %w", OffsetsTopic, offset, err)
		}
		if len(b) == 0 {
			return fmt.Errorf("coordinator: read %s at %d below log end %d returned nothing", OffsetsTopic, offset, end)
		}
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				return fmt.Errorf("coordinator: batch at %d: %w", offset, err)
			}
			one := b[:h.Size()]
			b = b[h.Size():]
			offset = h.NextOffset()
			if h.IsControl() {
				// A transaction marker ends the producer's pending
				// offsets; other control records (none are written
				// here) and a marker's batch emptied by compaction
				// say nothing.
				m, err := batch.ReadEndTxnMarker(one, batch.Limits{})
				if errors.Is(err, batch.ErrNotEndTxnMarker) || !h.HasProducerID() {
					continue
				}
				if err != nil {
					return fmt.Errorf("coordinator: control batch at %d: %w", h.BaseOffset, err)
				}
				if err := c.ReplayTxnMarker(h.ProducerID, h.ProducerEpoch, m.Commit); err != nil {
					return fmt.Errorf("coordinator: marker at %d: %w", h.BaseOffset, err)
				}
				continue
			}
			var producer *groups.TxnProducer
			if h.IsTransactional() && h.HasProducerID() {
				// A TxnOffsetCommit's records: pending until the
				// producer's marker.
				producer = &groups.TxnProducer{ID: h.ProducerID, Epoch: h.ProducerEpoch}
			}
			err = batch.Records(one, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
				rec, err := groups.DecodeRecord(bytes.Clone(r.Key), bytes.Clone(r.Value))
				if errors.Is(err, groups.ErrUnknownRecordType) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("record at %d: %w", r.Offset, err)
				}
				if producer != nil && rec.Kind != groups.OffsetCommitRecord {
					return fmt.Errorf("record at %d: a transactional batch of producer %d holds a record of kind %d", r.Offset, producer.ID, rec.Kind)
				}
				rec.Producer = producer
				return c.Replay(rec)
			})
			if err != nil {
				return fmt.Errorf("coordinator: batch at %d: %w", h.BaseOffset, err)
			}
		}
	}
	return nil
}

// unload drops partition i's coordinator; what waited is answered with
// NOT_COORDINATOR behind the Readies already queued.
func (d *Driver) unload(i int32) {
	lp := d.loaded[i]
	if lp == nil {
		return
	}
	delete(d.loaded, i)
	lp.c.Unload()
	if lp.c.HasReady() {
		// An unloaded coordinator persists nothing: its Ready is the
		// answers to the requests it held.
		rd := lp.c.Ready()
		if len(rd.Records) > 0 {
			panic(fmt.Sprintf("coordinator: partition %d emitted %d records on Unload", i, len(rd.Records)))
		}
		lp.fifo <- delivery{responses: rd.Responses}
	}
	close(lp.fifo)
}

// drain persists and queues partition i's Ready.
func (d *Driver) drain(i int32) {
	lp := d.loaded[i]
	if lp == nil || !lp.c.HasReady() {
		return
	}
	rd := lp.c.Ready()
	if len(rd.Records) == 0 {
		lp.fifo <- delivery{responses: rd.Responses}
		return
	}
	// One batch per run of records of one kind: a TxnOffsetCommit's
	// records are a transactional batch of their producer, the others
	// plain ones. Each input's records are one run (all or nothing).
	var waits []func() error
	now := d.nowMs()
	for rs := rd.Records; len(rs) > 0; {
		n := 1
		for n < len(rs) && sameProducer(rs[n].Producer, rs[0].Producer) {
			n++
		}
		wait, err := d.appendRecords(lp, rs[:n], now)
		if err != nil {
			d.cfg.Logger.Warn("group coordinator append failed; unloading", "partition", i, "err", err)
			code := appendErrorCode(lp.p)
			if errors.Is(err, producer.ErrInvalidProducerEpoch) {
				// The log knows a newer epoch of the producer than the
				// coordinator did (its records were compacted away):
				// the coordinator's state is rebuilt from the log.
				code = kerr.InvalidProducerEpoch.Code
			}
			lp.fifo <- delivery{waits: waits, responses: withError(rd.Responses, code)}
			d.unload(i)
			return
		}
		waits = append(waits, wait)
		rs = rs[n:]
	}
	lp.fifo <- delivery{waits: waits, responses: rd.Responses}
}

func sameProducer(a, b *groups.TxnProducer) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// appendRecords appends rs as one uncompressed batch, acks=all: a
// transactional batch when they carry a producer (a TxnOffsetCommit's),
// with the next sequence of that producer in this partition (Kafka's
// coordinator writes them unchecked; here the log checks them as a
// producer's, and only this driver writes them).
func (d *Driver) appendRecords(lp *loadedPartition, rs []groups.Record, now int64) (func() error, error) {
	b := batch.NewBuilder(batch.CompressionNone)
	if p := rs[0].Producer; p != nil {
		b.ProducerID, b.ProducerEpoch, b.IsTransactional = p.ID, p.Epoch, true
		b.BaseSequence = 0
		if e, ok := lp.p.Log().ProducerState(p.ID); ok && e.ProducerEpoch == p.Epoch && e.LastSequence() >= 0 {
			b.BaseSequence = nextSequence(e.LastSequence())
		}
	}
	for _, r := range rs {
		var value []byte
		if !r.Tombstone() {
			value = r.EncodeValue()
		}
		b.Append(batch.Record{Timestamp: now, Key: r.EncodeKey(), Value: value})
	}
	raw, err := b.Build()
	if err != nil {
		return nil, err
	}
	_, wait, err := lp.p.AppendAsLeader(raw, -1)
	return wait, err
}

// nextSequence is the sequence after last, wrapping at math.MaxInt32 as
// Kafka's producers do.
func nextSequence(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}

func appendErrorCode(p *replication.Partition) int16 {
	if leader, _ := p.Leader(); !leader {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

func withError(rs []groups.Response, code int16) []groups.Response {
	out := make([]groups.Response, len(rs))
	for i, r := range rs {
		out[i] = r.WithError(code)
	}
	return out
}

// deliverLoop hands out partition i's responses in Ready order, each after
// its append is durable.
func (d *Driver) deliverLoop(i int32, lp *loadedPartition) {
	defer close(lp.fifoDone)
	failed := false
	for dl := range lp.fifo {
		rs := dl.responses
		if failed {
			// An earlier append of this coordinator failed: a later
			// Ready built on its state must not be answered as if it
			// held.
			rs = withError(rs, kerr.NotCoordinator.Code)
		} else {
			var err error
			for _, wait := range dl.waits {
				if err = wait(); err != nil {
					break
				}
			}
			if err != nil {
				failed = true
				d.cfg.Logger.Warn("group coordinator append not durable; unloading", "partition", i, "err", err)
				rs = withError(rs, appendErrorCode(lp.p))
				go d.submit(context.Background(), func() {
					if d.loaded[i] == lp {
						d.unload(i)
					}
				})
			}
		}
		d.deliver(rs)
	}
}

func (d *Driver) deliver(rs []groups.Response) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range rs {
		if ch, ok := d.waiters[r.RequestID]; ok {
			delete(d.waiters, r.RequestID)
			ch <- r // buffered 1: never blocks
		}
	}
}

// submit queues fn for the owner goroutine.
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

// Call is one request in flight; Wait gives its response.
type Call struct {
	d  *Driver
	id uint64
	ch chan groups.Response
	// err is set when the request never reached a coordinator.
	err error
}

// Submit hands a request for group to the owner goroutine: input is
// called there with the coordinator of the group's partition and the
// request's RequestID, and must feed exactly one request to it. Submit
// returns once the request is queued, so a connection's requests reach
// the coordinator in order; Call.Wait waits for the answer.
func (d *Driver) Submit(ctx context.Context, group string, input func(c *groups.Coordinator, requestID uint64, nowMs int64)) *Call {
	d.mu.Lock()
	d.nextID++
	call := &Call{d: d, id: d.nextID, ch: make(chan groups.Response, 1)}
	d.waiters[call.id] = call.ch
	d.mu.Unlock()
	i := groups.PartitionFor(group, d.cfg.Partitions)
	err := d.submit(ctx, func() {
		// The coordinator's view of the topics is never older than the
		// metadata a request was made against: a group assigned from
		// a topic then grown within one tick still sees the growth.
		d.refreshTopics()
		loading := d.checkPartition(i)
		lp := d.loaded[i]
		switch {
		case lp == nil && loading:
			d.answerLoading(i, call.id, input)
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

// answerLoading answers a request for partition i, which this node leads
// but has not loaded yet, as a coordinator still loading does: the groups
// core gives COORDINATOR_LOAD_IN_PROGRESS (retriable), the code Kafka
// gives while it loads.
func (d *Driver) answerLoading(i int32, requestID uint64, input func(c *groups.Coordinator, requestID uint64, nowMs int64)) {
	c, err := groups.NewCoordinator(d.cfg.Groups, i, d.cfg.Partitions, groups.SeededMemberIDs(0))
	if err != nil {
		panic(fmt.Sprintf("coordinator: config validated in New was refused: %v", err))
	}
	input(c, requestID, d.nowMs())
	rd := c.Ready()
	if len(rd.Records) > 0 {
		panic(fmt.Sprintf("coordinator: partition %d emitted %d records while loading", i, len(rd.Records)))
	}
	d.deliver(rd.Responses)
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
// coordinator (ErrNotCoordinator, ErrClosed), or ctx's error.
func (c *Call) Wait(ctx context.Context) (groups.Response, error) {
	select {
	case r, ok := <-c.ch:
		if !ok {
			return groups.Response{}, c.err
		}
		return r, nil
	case <-ctx.Done():
		c.d.mu.Lock()
		delete(c.d.waiters, c.id)
		c.d.mu.Unlock()
		return groups.Response{}, ctx.Err()
	case <-c.d.done:
		return groups.Response{}, ErrClosed
	}
}

// ListGroups lists the groups of every loaded coordinator. The error code
// is COORDINATOR_LOAD_IN_PROGRESS while a partition this node leads is
// still to load (as Kafka's, whose list fails while one loads), else the
// first non-zero one a coordinator gave.
func (d *Driver) ListGroups(ctx context.Context) ([]groups.ListedGroup, int16, error) {
	type result struct {
		gs   []groups.ListedGroup
		code int16
	}
	ch := make(chan result, 1)
	err := d.submit(ctx, func() {
		var r result
		for i := int32(0); i < d.cfg.Partitions; i++ {
			loading := d.checkPartition(i)
			lp := d.loaded[i]
			if lp == nil {
				if loading && r.code == 0 {
					r.code = kerr.CoordinatorLoadInProgress.Code
				}
				continue
			}
			gs, code := lp.c.ListGroups()
			if code != 0 && r.code == 0 {
				r.code = code
			}
			r.gs = append(r.gs, gs...)
		}
		ch <- r
	})
	if err != nil {
		return nil, 0, err
	}
	select {
	case r := <-ch:
		return r.gs, r.code, nil
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	case <-d.done:
		return nil, 0, ErrClosed
	}
}

// Leads reports whether partition i's coordinator is loaded here. It is a
// hint for FindCoordinator, read without the owner: the answer may be
// stale by the time the client asks the coordinator.
func (d *Driver) Leads(i int32) bool {
	p := d.replicas.Partition(engine.TopicPartition{Topic: OffsetsTopic, Partition: i})
	if p == nil {
		return false
	}
	leader, _ := p.Leader()
	return leader
}

// maxMisplacedLogged bounds the groups warnMisplaced names one by one.
const maxMisplacedLogged = 20

// warnMisplaced says which groups a load found in a partition that
// Kafka's mapping no longer names for them (groups.Coordinator.Misplaced),
// with their committed offsets, so an operator can seek them back.
func (d *Driver) warnMisplaced(partition int32, misplaced map[string][]string) {
	if len(misplaced) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(misplaced))
	d.cfg.Logger.Warn("groups in this __consumer_offsets partition belong to another by Kafka's mapping: an older wren mapped group ids whose hash is negative differently, so their consumers now start from auto.offset.reset; each group's committed offsets follow, to seek it back (wren group seek, kafka-consumer-groups --reset-offsets)",
		"partition", partition, "groups", len(ids))
	for _, id := range ids[:min(len(ids), maxMisplacedLogged)] {
		d.cfg.Logger.Warn("misplaced group", "partition", partition, "group", id, "offsets", misplaced[id])
	}
}

// WriteTxnMarker writes a transaction marker (COMMIT when commit, else
// ABORT) of producerID at producerEpoch, from the transaction coordinator
// at coordinatorEpoch, to __consumer_offsets partition partition: the
// partition-leader side of WriteTxnMarkers for the offsets a
// TxnOffsetCommit left pending there. The control batch is appended as
// the partition's leader (replicated, acks=all) on the owner goroutine,
// so it is ordered with the coordinator's own records; the producer's
// pending offsets on the partition then become committed offsets (commit)
// or are dropped (abort), and WriteTxnMarker returns once the marker is
// durable (an OffsetFetch submitted after it is answered behind it).
//
// Errors wrap the Kafka error to answer: NOT_LEADER_OR_FOLLOWER when this
// node does not lead the partition (or lost it while writing),
// COORDINATOR_LOAD_IN_PROGRESS (retriable) while it leads it but has not
// loaded it yet, INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED
// when the log refuses the marker (nothing was written), REQUEST_TIMED_OUT
// when the marker was written but could not be made durable in time (it
// may still commit: a retry writes it again, which is harmless);
// UNKNOWN_TOPIC_OR_PARTITION for a partition out of range; ErrClosed or
// ctx's error when the driver or the caller ends first.
func (d *Driver) WriteTxnMarker(ctx context.Context, partition int32, producerID int64, producerEpoch int16,
	coordinatorEpoch int32, commit bool) error {
	if partition < 0 || partition >= d.cfg.Partitions {
		return fmt.Errorf("%w: %s partition %d of %d", kerr.UnknownTopicOrPartition, OffsetsTopic, partition, d.cfg.Partitions)
	}
	d.mu.Lock()
	d.nextID++
	call := &Call{d: d, id: d.nextID, ch: make(chan groups.Response, 1)}
	d.waiters[call.id] = call.ch
	d.mu.Unlock()
	marker := engine.TxnMarker{ProducerID: producerID, ProducerEpoch: producerEpoch, Commit: commit, CoordinatorEpoch: coordinatorEpoch}
	err := d.submit(ctx, func() {
		loading := d.checkPartition(partition)
		lp := d.loaded[partition]
		switch {
		case lp == nil && loading:
			call.fail(fmt.Errorf("%w: %s partition %d is loading", kerr.CoordinatorLoadInProgress, OffsetsTopic, partition))
			return
		case lp == nil:
			call.fail(fmt.Errorf("%w: %s partition %d is not led here", kerr.NotLeaderForPartition, OffsetsTopic, partition))
			return
		}
		_, wait, err := lp.p.AppendTxnMarkerAsLeader(marker, -1)
		if err != nil {
			if errors.Is(err, producer.ErrInvalidProducerEpoch) || errors.Is(err, producer.ErrCoordinatorFenced) ||
				errors.Is(err, kerr.NotEnoughReplicas) {
				// Refused before anything was written.
				call.fail(err)
				return
			}
			d.cfg.Logger.Warn("group coordinator marker append failed; unloading", "partition", partition, "err", err)
			if leader, _ := lp.p.Leader(); !leader {
				err = fmt.Errorf("%w: %v", kerr.NotLeaderForPartition, err)
			}
			call.fail(err)
			d.unload(partition)
			return
		}
		lp.c.CompleteTxn(groups.TxnMarkerRequest{RequestID: call.id, ProducerID: producerID, ProducerEpoch: producerEpoch, Commit: commit}, d.nowMs())
		rd := lp.c.Ready()
		if len(rd.Records) > 0 {
			panic(fmt.Sprintf("coordinator: partition %d emitted %d records for a marker", partition, len(rd.Records)))
		}
		lp.fifo <- delivery{waits: []func() error{wait}, responses: rd.Responses}
	})
	if err != nil {
		call.fail(err)
	}
	r, err := call.Wait(ctx)
	if err != nil {
		return err
	}
	if r.TxnMarker == nil {
		return fmt.Errorf("coordinator: marker on %s partition %d answered with another kind of response", OffsetsTopic, partition)
	}
	switch code := r.TxnMarker.ErrorCode; code {
	case 0:
		return nil
	case kerr.NotCoordinator.Code:
		return fmt.Errorf("%w: %s partition %d is not led here any more", kerr.NotLeaderForPartition, OffsetsTopic, partition)
	case kerr.CoordinatorNotAvailable.Code:
		return fmt.Errorf("%w: the marker on %s partition %d was written but is not durable", kerr.RequestTimedOut, OffsetsTopic, partition)
	default:
		return fmt.Errorf("coordinator: marker on %s partition %d: %w", OffsetsTopic, partition, kerr.ErrorForCode(code))
	}
}
