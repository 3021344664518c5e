package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionalProducerFailsFast: wren has no transaction
// coordinator, so a transactional producer must get a fatal error at
// once, not retry FindCoordinator until its timeout. The client's own
// retry limits are set far above the deadline here, so a client that
// retries is caught by the deadline, not stopped by its limits.
func TestTransactionalProducerFailsFast(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	fast, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.DefaultProduceTopic("txn"), kgo.RecordRetries(1000), kgo.RetryTimeout(5 * time.Minute)}

	t.Run("BeginTransaction", func(t *testing.T) {
		cl, _ := newClient(t, b, append(opts, kgo.TransactionalID("billing-1"))...)
		err := cl.BeginTransaction()
		if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
			t.Fatalf("BeginTransaction: got %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
		}
	})
	t.Run("produce", func(t *testing.T) {
		cl, _ := newClient(t, b, append(opts, kgo.TransactionalID("billing-2"))...)
		// Producing outside a transaction is refused by the client; the
		// point is that it ends before the deadline with the error.
		err := cl.ProduceSync(fast, kgo.StringRecord("v")).FirstErr()
		if err == nil || fast.Err() != nil {
			t.Fatalf("transactional produce: got %v (deadline: %v), want an immediate error", err, fast.Err())
		}
	})
	t.Run("InitProducerId", func(t *testing.T) {
		// Straight to InitProducerId, as a client that skips
		// FindCoordinator would: the same code.
		cl, _ := newClient(t, b)
		req := kmsg.NewPtrInitProducerIDRequest()
		id := "billing-3"
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		resp := direct[*kmsg.InitProducerIDResponse](t, cl, req)
		if !errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.TransactionalIDAuthorizationFailed) || resp.ProducerID != -1 {
			t.Fatalf("InitProducerId: code %d id %d", resp.ErrorCode, resp.ProducerID)
		}
	})
	t.Run("FindCoordinator", func(t *testing.T) {
		cl, _ := newClient(t, b)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{"billing-4"}
		resp := direct[*kmsg.FindCoordinatorResponse](t, cl, req)
		c := resp.Coordinators[0]
		if c.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || c.ErrorMessage == nil ||
			!strings.Contains(*c.ErrorMessage, "transactions are not supported by wren") {
			t.Fatalf("FindCoordinator: code %d message %v", c.ErrorCode, c.ErrorMessage)
		}
	})
}
