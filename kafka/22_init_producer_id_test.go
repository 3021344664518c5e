package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initProducerIDRequest(transactionalID *string) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = transactionalID, -1, -1
	return req
}

// TestInitProducerID: each idempotent producer gets a new id at epoch 0;
// transactions are refused; an id that cannot be had is the error's code.
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
	wantCode(t, "transactional", resp.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	if resp.ProducerID != -1 {
		t.Errorf("transactional: producer id %d, want -1", resp.ProducerID)
	}

	f.producerIDs.err = fmt.Errorf("%w: no controller to reserve a block", kerr.CoordinatorNotAvailable)
	resp = f.do(t, initProducerIDRequest(nil)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "no block", resp.ErrorCode, kerr.CoordinatorNotAvailable)
	if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Errorf("no block: producer id %d epoch %d, want -1 -1", resp.ProducerID, resp.ProducerEpoch)
	}
}
