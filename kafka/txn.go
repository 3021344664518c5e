package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/txn"
)

// Shared by the transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers) and
// Produce's KIP-890 verification. The coordinator itself is txn (the
// core) and txn/coordinator (its driver), reached through the seam's
// TxnCoordinator.

// txnRequestTimeout bounds a wait for the coordinator's answer: its
// append with acks=all, which replication bounds itself.
const txnRequestTimeout = 60 * time.Second

// verifyTimeout bounds Produce's wait for the coordinator's verification.
const verifyTimeout = 10 * time.Second

// txnSubmit submits input for id now (so a connection's requests reach
// the coordinator in order) and returns the wait for its answer, or the
// error code for a request no coordinator took.
func (s *Server) txnSubmit(ctx context.Context, id string, input TxnInput) func(ctx context.Context) (txn.Response, int16) {
	t := s.node().Txn
	if t == nil {
		return func(context.Context) (txn.Response, int16) {
			return txn.Response{}, kerr.CoordinatorNotAvailable.Code
		}
	}
	call := t.Submit(ctx, id, input)
	return func(ctx context.Context) (txn.Response, int16) {
		ctx, cancel := context.WithTimeout(ctx, txnRequestTimeout)
		defer cancel()
		r, err := call.Wait(ctx)
		if err != nil {
			return txn.Response{}, txnErrorCode(err)
		}
		return r, r.ErrorCode
	}
}

// txnErrorCode is the code for an error that kept a request from a
// coordinator: its Kafka code when it has one, else NOT_COORDINATOR
// (retriable: the client looks for the coordinator again).
func txnErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.NotCoordinator.Code
}

// fencedCode is PRODUCER_FENCED as a client of version v understands
// it: INVALID_PRODUCER_EPOCH below the version that introduced
// PRODUCER_FENCED (KIP-588), as Kafka answers.
func fencedCode(code int16, v, fencedSince int16) int16 {
	if code == kerr.ProducerFenced.Code && v < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// txnGuards are Produce's KIP-890 verification guards, Kafka's
// VerificationGuard: before the first transactional batch of a
// transaction is appended to a partition, its leader asks the
// transaction coordinator whether the partition is in the producer's
// ongoing transaction. The answer is kept per partition and producer
// (the guard) until a marker for the producer is written there, so the
// next transaction is verified again; a marker taken between the
// verification and the append drops the guard, and the append is
// refused. A late produce of an ended transaction thus never opens a
// transaction the coordinator does not know (KAFKA-17754). Each
// partition has its own lock, held across a guarded append, so
// transactional appends to different partitions do not wait on each
// other.
type txnGuards struct {
	mu sync.Mutex
	m  map[engine.TopicPartition]*partitionGuards
}

// partitionGuards are one partition's guards, by producer id.
type partitionGuards struct {
	mu sync.Mutex
	m  map[int64]*txnGuard
}

// txnGuard is one verification; verified once the coordinator agreed.
type txnGuard struct {
	epoch       int16
	leaderEpoch int32
	// verified is read without the lock (whether to ask), set and read
	// under it (the append).
	verified atomic.Bool
}

func (g *txnGuards) partition(tp engine.TopicPartition) *partitionGuards {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[engine.TopicPartition]*partitionGuards{}
	}
	pg := g.m[tp]
	if pg == nil {
		pg = &partitionGuards{m: map[int64]*txnGuard{}}
		g.m[tp] = pg
	}
	return pg
}

// get returns the guard for the producer at epoch on tp under
// leaderEpoch, creating a fresh one when none matches.
func (g *txnGuards) get(tp engine.TopicPartition, pid int64, epoch int16, leaderEpoch int32) *txnGuard {
	pg := g.partition(tp)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if cur := pg.m[pid]; cur != nil && cur.epoch == epoch && cur.leaderEpoch == leaderEpoch {
		return cur
	}
	ng := &txnGuard{epoch: epoch, leaderEpoch: leaderEpoch}
	pg.m[pid] = ng
	return ng
}

// setVerified marks gd verified if it is still the guard in force.
func (g *txnGuards) setVerified(tp engine.TopicPartition, pid int64, gd *txnGuard) {
	pg := g.partition(tp)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.m[pid] == gd {
		gd.verified.Store(true)
	}
}

// drop removes gd if it is still in force (a failed verification).
func (g *txnGuards) drop(tp engine.TopicPartition, pid int64, gd *txnGuard) {
	pg := g.partition(tp)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.m[pid] == gd {
		delete(pg.m, pid)
	}
}

// clear drops the producer's guard on tp: a marker ends its transaction
// there.
func (g *txnGuards) clear(tp engine.TopicPartition, pid int64) {
	pg := g.partition(tp)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	delete(pg.m, pid)
}

// appendIfGuarded runs appendFn under the partition's lock when gd is
// still the verified guard in force, so a marker cannot slip between the
// check and the append; ok false when it is not.
func (g *txnGuards) appendIfGuarded(tp engine.TopicPartition, pid int64, gd *txnGuard, appendFn func()) (ok bool) {
	pg := g.partition(tp)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.m[pid] != gd || !gd.verified.Load() {
		return false
	}
	appendFn()
	return true
}

// verifyCode is the Produce error for a failed verification: the
// coordinator's refusal as Kafka's leader answers it (INVALID_TXN_STATE,
// INVALID_PRODUCER_EPOCH for a fenced producer), and NOT_ENOUGH_REPLICAS,
// retriable, when the coordinator could not answer (moving, loading,
// completing the transaction before).
func verifyCode(code int16) int16 {
	switch code {
	case 0:
		return 0
	case kerr.InvalidTxnState.Code, kerr.InvalidProducerIDMapping.Code:
		return kerr.InvalidTxnState.Code
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionalIDAuthorizationFailed.Code:
		return code
	}
	return kerr.NotEnoughReplicas.Code
}

// reqContext is the context of req's connection, Background when it has
// none (a handler test's request).
func reqContext(req *Request) context.Context {
	if req.Session != nil && req.Session.ctx != nil {
		return req.Session.ctx
	}
	return context.Background()
}
