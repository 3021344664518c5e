package replication

import "github.com/wren-broker/wren/engine"

// endOffsetForEpoch is Kafka's LeaderEpochFileCache.endOffsetFor over a
// log's epoch entries (strictly increasing), exactly as the engine's
// cache answers OffsetForLeaderEpoch: for the latest epoch, the log end
// offset; for an older one, the largest epoch at most requested and the
// start offset of the epoch after it; for an epoch below every entry, the
// requested epoch and the first entry's start; above the latest, or with
// no entries, (-1, -1).
func endOffsetForEpoch(entries []engine.EpochEntry, requested int32, logEndOffset int64) (int32, int64) {
	if len(entries) == 0 || requested < 0 {
		return -1, -1
	}
	latest := entries[len(entries)-1]
	switch {
	case requested == latest.Epoch:
		return requested, logEndOffset
	case requested > latest.Epoch:
		return -1, -1
	}
	i := 0
	for entries[i].Epoch <= requested {
		i++
	}
	if i == 0 {
		return requested, entries[0].StartOffset
	}
	return entries[i-1].Epoch, entries[i].StartOffset
}

// truncation is one step of a follower finding where its log diverges
// from the leader's (KIP-101, with KIP-279's iteration).
type truncation struct {
	// TruncateTo is where to cut the log (>= the log end offset: nothing).
	TruncateTo int64
	// Done: the log now agrees with the leader's below its end; else ask
	// the leader again with the latest epoch left in the log.
	Done bool
}

// truncationStep decides from the leader's answer to OffsetForLeaderEpoch
// (leaderEpoch, leaderEndOffset) for the follower's latest epoch. The
// follower looks up its own end offset for the epoch the leader answered:
//   - the leader knows no epoch that old (-1): the follower's log shares
//     nothing provable with it, so it is cut entirely and refilled;
//   - the follower has that epoch: the logs agree up to the smaller end
//     offset, cut there, done;
//   - the follower lacks it (it was led at epochs the leader never saw,
//     KIP-279's fast successive failovers): cut to its own end of the
//     largest epoch below, and ask again.
//
// Never to the local high watermark: a follower's high watermark may be
// above what a new leader has (KIP-101's first scenario loses committed
// records by truncating to it, its second keeps diverged ones).
func truncationStep(follower []engine.EpochEntry, logEndOffset int64, leaderEpoch int32, leaderEndOffset int64) truncation {
	if leaderEpoch < 0 || leaderEndOffset < 0 {
		return truncation{TruncateTo: 0, Done: true}
	}
	epoch, end := endOffsetForEpoch(follower, leaderEpoch, logEndOffset)
	switch {
	case end < 0:
		return truncation{TruncateTo: 0, Done: true}
	case epoch != leaderEpoch:
		return truncation{TruncateTo: min(end, logEndOffset)}
	}
	return truncation{TruncateTo: min(leaderEndOffset, end, logEndOffset), Done: true}
}
