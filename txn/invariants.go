package txn

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

var kerrTransactionalIDNotFound = kerr.TransactionalIDNotFound.Code

// checkInvariants panics when the coordinator's state breaks a rule its
// transitions keep (run after each input under -tags invariants).
func (c *Coordinator) checkInvariants() {
	for id, m := range c.txns {
		if m.TransactionalID != id {
			panic(fmt.Sprintf("txn: metadata of %q filed under %q", m.TransactionalID, id))
		}
		if !sort.SliceIsSorted(m.Partitions, func(i, j int) bool { return compareTP(m.Partitions[i], m.Partitions[j]) < 0 }) {
			panic(fmt.Sprintf("txn: %q partitions not sorted: %v", id, m.Partitions))
		}
		switch m.State {
		case Empty, CompleteCommit, CompleteAbort:
			if len(m.Partitions) > 0 {
				panic(fmt.Sprintf("txn: %q in %v holds partitions %v", id, m.State, m.Partitions))
			}
		case Ongoing, PrepareCommit, PrepareAbort:
			if len(m.Partitions) == 0 || m.StartMs < 0 {
				panic(fmt.Sprintf("txn: %q in %v with partitions %v start %d", id, m.State, m.Partitions, m.StartMs))
			}
		default:
			panic(fmt.Sprintf("txn: %q in state %v, which the core never keeps", id, m.State))
		}
		if m.ProducerID < 0 {
			panic(fmt.Sprintf("txn: %q has producer id %d", id, m.ProducerID))
		}
	}
	for _, r := range c.ready.Records {
		if r.Metadata != nil && r.Metadata.State == Empty && r.Metadata.ProducerEpoch < 0 {
			panic(fmt.Sprintf("txn: %q persisted Empty with epoch %d", r.TransactionalID, r.Metadata.ProducerEpoch))
		}
	}
}
