package cluster

// DataLossRecord is an entry of the data-loss ledger: a partition got a
// leader that may not hold every acknowledged record (an unclean
// election). No peer keeps one; wren keeps it so that an operator can see,
// after the fact, which partitions may have lost which records, instead
// of discovering it from a customer.
type DataLossRecord struct {
	TopicID   UUID   `json:"topic_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LeaderEpoch is the epoch the new leader starts: records written
	// under earlier epochs above FromOffset may be gone.
	LeaderEpoch    int32 `json:"leader_epoch"`
	PreviousLeader int32 `json:"previous_leader"`
	NewLeader      int32 `json:"new_leader"`
	// PreviousISR and PreviousELR were the replicas that held every
	// committed record; none of them could lead.
	PreviousISR []int32 `json:"previous_isr"`
	PreviousELR []int32 `json:"previous_elr,omitempty"`
	// Reason is "unclean" (a replica outside the ISR and ELR was elected)
	// or "last_known_leader" (the last leader, which came back after an
	// unclean shutdown, was elected).
	Reason string `json:"reason"`
	// [FromOffset, ToOffset) may be lost: from the new leader's log end
	// offset to the highest offset the replicas that could not lead were
	// known to hold. -1 means not known to the controller.
	FromOffset int64 `json:"from_offset"`
	ToOffset   int64 `json:"to_offset"`
}

// DataLossEntry is a ledger entry with the metadata offset that recorded it.
type DataLossEntry struct {
	Offset uint64
	DataLossRecord
}

// maxLedgerEntries bounds the ledger the image keeps (the newest ones);
// the metadata log holds every entry until it is trimmed.
const maxLedgerEntries = 1000

// DataLossLedger returns the data-loss ledger, oldest first. The slice
// must not be modified.
func (im *Image) DataLossLedger() []DataLossEntry { return im.ledger }

func (next *Image) applyDataLoss(im *Image, offset uint64, r *DataLossRecord) {
	keep := im.ledger
	if len(keep) >= maxLedgerEntries {
		keep = keep[len(keep)-maxLedgerEntries+1:]
	}
	// A fresh slice: images share nothing they may append to.
	next.ledger = append(append(make([]DataLossEntry, 0, len(keep)+1), keep...), DataLossEntry{Offset: offset, DataLossRecord: *r})
}
