package kafka

import (
	"slices"

	"github.com/wren-broker/wren/cluster"
)

// trueISR is the ISR Metadata reports: the committed one of the metadata
// image, which followers join and leave through their leader (AlterISR),
// so it names the replicas that hold every committed record.
func trueISR(p cluster.PartitionImage) []int32 {
	if p.ISR == nil {
		return []int32{}
	}
	return slices.Clone(p.ISR)
}
