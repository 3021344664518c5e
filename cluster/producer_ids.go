package cluster

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDBlockSize is how many producer ids one metadata record hands
// out, as Kafka's controller does (1000).
const ProducerIDBlockSize = 1000

// AllocateProducerIDs reserves the next block of producer ids for broker
// and returns its first id. The block is durable in the metadata log
// before it is returned, so an id is never handed out twice, across
// restarts and (with the quorum) across controllers.
func (c *Controller) AllocateProducerIDs(ctx context.Context, broker int32) (first int64, err error) {
	if broker == c.cfg.NodeID && !c.Acting() {
		// This broker's own block comes from the acting controller.
		return c.forwardAllocateProducerIDs(ctx, broker)
	}
	var res error
	runErr := c.change(ctx, func() {
		start := c.Image().NextProducerID
		if start > math.MaxInt64-ProducerIDBlockSize {
			res = fmt.Errorf("%w: producer ids exhausted", kerr.UnknownServerError)
			return
		}
		res = c.commit([]Record{{Kind: KindProducerIDs, ProducerIDs: &ProducerIDsRecord{
			BrokerID: broker, NextBlockStart: start + ProducerIDBlockSize, BlockSize: ProducerIDBlockSize,
		}}})
		first = start
	})
	if runErr != nil {
		return 0, runErr
	}
	return first, res
}
