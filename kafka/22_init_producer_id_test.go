package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

func initProducerIDRequest(transactionalID *string) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = transactionalID, -1, -1
	return req
}

// TestInitProducerID: each idempotent producer gets a new id at epoch 0;
// a transactional id goes to the transaction coordinator (none here:
// COORDINATOR_NOT_AVAILABLE, retriable); an id that cannot be had is the
// error's code.
func TestInitProducerID(t *testing.T) {
	f := newSeamFixture(t)
	for want := int64(1000); want < 1002; want++ {
		resp := f.do(t, initProducerIDRequest(nil)).(*kmsg.InitProducerIDResponse)
		wantCode(t, "init producer id", resp.ErrorCode, nil)
		if resp.ProducerID != want || resp.ProducerEpoch != 0 {
			t.Errorf("producer id %d epoch %d, want %d epoch 0", resp.ProducerID, resp.ProducerEpoch, want)
		}
	}

	txn := "txn"
	resp := f.do(t, initProducerIDRequest(&txn)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "transactional", resp.ErrorCode, kerr.CoordinatorNotAvailable)
	if resp.ProducerID != -1 {
		t.Errorf("transactional: producer id %d, want -1", resp.ProducerID)
	}

	f.producerIDs.err = fmt.Errorf("%w: no producer id left", kerr.CoordinatorLoadInProgress)
	resp = f.do(t, initProducerIDRequest(nil)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "no block", resp.ErrorCode, kerr.CoordinatorLoadInProgress)
	if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Errorf("no block: producer id %d epoch %d, want -1 -1", resp.ProducerID, resp.ProducerEpoch)
	}
}

// oneBlock reserves one block of producer ids, then answers as a node
// does that knows no controller: NOT_CONTROLLER.
type oneBlock struct {
	mu    sync.Mutex
	given bool
}

func (b *oneBlock) AllocateProducerIDs(context.Context, int32) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.given {
		return 0, fmt.Errorf("%w: no controller is known", kerr.NotController)
	}
	b.given = true
	return 5000, nil
}

// TestInitProducerIDWithoutController: with the broker's own block
// manager and no controller (an election, or the quorum lost), every new
// idempotent producer gets a new id from the block the broker holds,
// never NOT_CONTROLLER; once the block is used up the answer is the
// retriable COORDINATOR_LOAD_IN_PROGRESS, never an id twice.
func TestInitProducerIDWithoutController(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.controllerID = -1
	f.controller.notController = true
	ids := cluster.NewProducerIDManager(&oneBlock{}, cluster.ProducerIDManagerConfig{Broker: 1,
		RetryBackoff: time.Millisecond, MaxRetryBackoff: 10 * time.Millisecond, BlockWait: 20 * time.Millisecond})
	defer ids.Close()
	f.node.ProducerIDs = ids
	seen := map[int64]bool{}
	deadline := time.Now().Add(waitTimeout)
	for i := 0; i < cluster.ProducerIDBlockSize; i++ {
		resp := f.do(t, initProducerIDRequest(nil)).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && i == 0 && time.Now().Before(deadline) {
			// The first block may still be on its way: a client retries.
			i--
			continue
		}
		wantCode(t, fmt.Sprintf("producer %d without a controller", i+1), resp.ErrorCode, nil)
		if seen[resp.ProducerID] || resp.ProducerID < 5000 || resp.ProducerID >= 5000+cluster.ProducerIDBlockSize || resp.ProducerEpoch != 0 {
			t.Fatalf("producer %d: id %d epoch %d (seen before: %v), want a new id of the block from 5000 at epoch 0",
				i+1, resp.ProducerID, resp.ProducerEpoch, seen[resp.ProducerID])
		}
		seen[resp.ProducerID] = true
	}
	for i := 0; i < 3; i++ {
		resp := f.do(t, initProducerIDRequest(nil)).(*kmsg.InitProducerIDResponse)
		wantCode(t, "block used up", resp.ErrorCode, kerr.CoordinatorLoadInProgress)
		if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Fatalf("block used up: producer id %d epoch %d, want -1 -1", resp.ProducerID, resp.ProducerEpoch)
		}
	}
}
