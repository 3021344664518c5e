package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDBlocks reserves blocks of ProducerIDBlockSize producer ids
// for a broker (the controller's AllocateProducerIDs). A block it returns
// is committed in the metadata log: no later call, on any node and after
// any restart or controller change, returns an id of it again.
type ProducerIDBlocks interface {
	AllocateProducerIDs(ctx context.Context, broker int32) (first int64, err error)
}

// ProducerIDManagerConfig tunes a ProducerIDManager; zero values take the
// defaults below.
type ProducerIDManagerConfig struct {
	// Broker is this node's id, the owner of the blocks.
	Broker int32
	// RequestTimeout bounds one request for a block; a request that gets
	// no answer by then is given up (the block it may have reserved is
	// never used) and asked again after RetryBackoff. A commit takes
	// milliseconds; the bound is short because an answer lost with a
	// connection to a new controller would otherwise keep a starting
	// broker without ids for the whole of it.
	RequestTimeout time.Duration
	// RetryBackoff is the first pause after a failed request; it doubles
	// up to MaxRetryBackoff while the controller stays away.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// BlockWait is how long Next waits for a block when this node has no
	// id left, before it answers COORDINATOR_LOAD_IN_PROGRESS.
	BlockWait time.Duration
	Logger    *slog.Logger
}

const (
	defaultProducerIDRequestTimeout = 2 * time.Second
	defaultProducerIDRetryBackoff   = 100 * time.Millisecond
	defaultProducerIDMaxBackoff     = time.Second
	defaultProducerIDBlockWait      = time.Second
	// producerIDPrefetchPercent: once this share of the current block is
	// handed out the next one is asked for (Kafka's RPCProducerIdManager
	// asks at 90%), so InitProducerId never waits on the controller while
	// it answers within the last tenth of a block.
	producerIDPrefetchPercent = 90
)

// ErrProducerIDManagerClosed is returned by Next after Close.
var ErrProducerIDManagerClosed = errors.New("cluster: producer id manager closed")

// ProducerIDManager hands out producer ids on a broker from blocks the
// controller reserved for it in the metadata log (Kafka's
// AllocateProducerIds, KIP-730, and its RPCProducerIdManager). It asks for
// a block as soon as it starts and for the next one when 90% of the
// current block is used, so InitProducerId is answered here, from memory,
// also while the controller is being elected or the quorum is lost. Only
// when both blocks are used up does a producer wait, and then it gets a
// retriable error rather than an id.
//
// Invariants: an id is handed out only from a block the controller
// returned, which the metadata log already holds as committed; every id
// handed out is above every id handed out before by this manager (blocks
// arrive in increasing order, and one that does not is dropped); a new
// process (a restart) starts with no block, so it never reuses the ids of
// a block its predecessor held.
type ProducerIDManager struct {
	src ProducerIDBlocks
	cfg ProducerIDManagerConfig
	log *slog.Logger

	mu sync.Mutex
	// cur is the block ids are handed out from: [next, end).
	// Invariant: next <= end.
	next, end int64
	// prefetched is the block after cur, once it arrived; -1 when none.
	prefetched int64
	// highest is the end of the last block accepted; a block must start
	// at or above it.
	highest int64
	// fetching is true while the fetch goroutine runs.
	fetching bool
	// arrived is closed (and replaced) when a block arrives.
	arrived chan struct{}
	// lastErr is the last failed request for a block, for the error Next
	// returns while it waits.
	lastErr error
	closed  bool
	// hadBlock is set once the first block arrived.
	hadBlock bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewProducerIDManager returns a manager of broker's producer ids over
// src, and starts asking src for the first block.
func NewProducerIDManager(src ProducerIDBlocks, cfg ProducerIDManagerConfig) *ProducerIDManager {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = defaultProducerIDRequestTimeout
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = defaultProducerIDRetryBackoff
	}
	if cfg.MaxRetryBackoff < cfg.RetryBackoff {
		cfg.MaxRetryBackoff = max(defaultProducerIDMaxBackoff, cfg.RetryBackoff)
	}
	if cfg.BlockWait <= 0 {
		cfg.BlockWait = defaultProducerIDBlockWait
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &ProducerIDManager{src: src, cfg: cfg, log: log, prefetched: -1, highest: math.MinInt64,
		arrived: make(chan struct{}), stop: make(chan struct{})}
	m.mu.Lock()
	m.maybeFetchLocked()
	m.mu.Unlock()
	return m
}

// Next returns a producer id never handed out before in this cluster. With
// no id left it waits up to BlockWait (and ctx) for a block, then fails
// with COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
func (m *ProducerIDManager) Next(ctx context.Context) (int64, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return -1, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, ErrProducerIDManagerClosed)
		}
		if m.next == m.end && m.prefetched >= 0 {
			m.next, m.end, m.prefetched = m.prefetched, m.prefetched+ProducerIDBlockSize, -1
		}
		if m.next < m.end {
			id := m.next
			m.next++
			m.maybeFetchLocked()
			m.mu.Unlock()
			return id, nil
		}
		m.maybeFetchLocked()
		arrived, lastErr := m.arrived, m.lastErr
		m.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(m.cfg.BlockWait)
		}
		select {
		case <-arrived:
		case <-timer.C:
			return -1, m.waitErr(lastErr)
		case <-ctx.Done():
			return -1, m.waitErr(lastErr)
		case <-m.stop:
		}
		m.mu.Lock()
	}
}

func (m *ProducerIDManager) waitErr(lastErr error) error {
	m.mu.Lock()
	if m.lastErr != nil {
		lastErr = m.lastErr
	}
	m.mu.Unlock()
	if lastErr == nil {
		return fmt.Errorf("%w: broker %d has no producer id left and is waiting for the controller to reserve the next block",
			kerr.CoordinatorLoadInProgress, m.cfg.Broker)
	}
	return fmt.Errorf("%w: broker %d has no producer id left and is waiting for the controller to reserve the next block (last attempt: %v)",
		kerr.CoordinatorLoadInProgress, m.cfg.Broker, lastErr)
}

// maybeFetchLocked starts the fetch goroutine when no block is waiting
// behind the current one and the current one is used up to the prefetch
// mark (or there is none).
func (m *ProducerIDManager) maybeFetchLocked() {
	if m.closed || m.fetching || m.prefetched >= 0 {
		return
	}
	if m.end > m.next {
		used := ProducerIDBlockSize - (m.end - m.next)
		if used*100 < ProducerIDBlockSize*producerIDPrefetchPercent {
			return
		}
	}
	m.fetching = true
	m.wg.Add(1)
	go m.fetch()
}

// fetch asks for one block until it gets one or the manager closes.
func (m *ProducerIDManager) fetch() {
	defer m.wg.Done()
	backoff := m.cfg.RetryBackoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RequestTimeout)
		go func() {
			select {
			case <-m.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		first, err := m.src.AllocateProducerIDs(ctx, m.cfg.Broker)
		cancel()
		if err == nil {
			err = m.accept(first)
		}
		if err == nil {
			m.mu.Lock()
			firstBlock := !m.hadBlock
			m.hadBlock = true
			m.mu.Unlock()
			// The first block is worth a line: from then on this broker
			// gives producer ids without the controller.
			args := []any{"broker", m.cfg.Broker, "first", first, "size", ProducerIDBlockSize, "attempts", attempt}
			switch {
			case firstBlock:
				m.log.Info("producer ids: first block reserved", args...)
			case attempt > 1:
				m.log.Info("producer ids: block reserved after retries", args...)
			default:
				m.log.Debug("producer ids: block reserved", args...)
			}
			return
		}
		m.mu.Lock()
		m.lastErr = err
		closed := m.closed
		if closed {
			m.fetching = false
		}
		m.mu.Unlock()
		if closed {
			return
		}
		m.log.Debug("producer ids: no block reserved yet; retrying", "broker", m.cfg.Broker, "attempt", attempt, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-m.stop:
			t.Stop()
			m.mu.Lock()
			m.fetching = false
			m.mu.Unlock()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, m.cfg.MaxRetryBackoff)
	}
}

// accept installs the block starting at first: as the current block if
// that is used up, else as the prefetched one. A block below one already
// accepted would repeat ids: it is refused, and another asked for.
func (m *ProducerIDManager) accept(first int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if first < 0 || first > math.MaxInt64-ProducerIDBlockSize || first < m.highest {
		return fmt.Errorf("cluster: producer id block at %d refused: below the end %d of a block already held, or out of range", first, m.highest)
	}
	m.highest = first + ProducerIDBlockSize
	if m.next == m.end {
		m.next, m.end = first, first+ProducerIDBlockSize
	} else {
		m.prefetched = first
	}
	m.fetching, m.lastErr = false, nil
	close(m.arrived)
	m.arrived = make(chan struct{})
	// A block taken as the current one may already be the last: the
	// next is asked for at once only if this one is used to the mark,
	// which a fresh block is not.
	m.maybeFetchLocked()
	return nil
}

// Available is how many producer ids this broker holds and can hand out
// without the controller: what is left of the current block and the
// prefetched one.
func (m *ProducerIDManager) Available() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.end - m.next
	if m.prefetched >= 0 {
		n += ProducerIDBlockSize
	}
	return n
}

// Close stops asking for blocks; Next fails from then on.
func (m *ProducerIDManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}
