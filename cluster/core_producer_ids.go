package cluster

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The producer-id rule (testdata/rules/producer_ids.txt).

// ProducerIDBlockSize is how many producer ids one metadata record hands
// out, as Kafka's controller does (1000).
const ProducerIDBlockSize = 1000

// DecideAllocateProducerIDs reserves the next block of producer ids for
// broker; the response is its first id. The driver answers only once the
// record is committed, so an id is never handed out twice, across
// restarts and controllers.
func DecideAllocateProducerIDs(im *Image, _ RuleConfig, broker int32) Result[int64] {
	start := im.NextProducerID
	if start > math.MaxInt64-ProducerIDBlockSize {
		return Result[int64]{Err: fmt.Errorf("%w: producer ids exhausted", kerr.UnknownServerError)}
	}
	return Result[int64]{Response: start, Records: []Record{{Kind: KindProducerIDs, ProducerIDs: &ProducerIDsRecord{
		BrokerID: broker, NextBlockStart: start + ProducerIDBlockSize, BlockSize: ProducerIDBlockSize,
	}}}}
}
