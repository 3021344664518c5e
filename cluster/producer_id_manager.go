package cluster

import (
	"context"
	"sync"
)

// ProducerIDManager hands out producer ids on a broker from blocks the
// controller allocated through the metadata log, fetching the next block
// when one runs out (Kafka's RPCProducerIdManager).
type ProducerIDManager struct {
	c      *Controller
	broker int32

	mu   sync.Mutex
	next int64
	end  int64
}

// NewProducerIDManager returns a manager with no block yet.
func NewProducerIDManager(c *Controller, broker int32) *ProducerIDManager {
	return &ProducerIDManager{c: c, broker: broker}
}

// Next returns a producer id never handed out before.
func (m *ProducerIDManager) Next(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == m.end {
		first, err := m.c.AllocateProducerIDs(ctx, m.broker)
		if err != nil {
			return 0, err
		}
		m.next, m.end = first, first+ProducerIDBlockSize
	}
	id := m.next
	m.next++
	return id, nil
}
