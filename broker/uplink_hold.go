package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/uplink"
)

// The uplinks' retention hold (uplink/doc.go, "Store and forward"): the
// engine's retention keeps, per partition, what the links forwarding it
// have not forwarded yet (engine.RetentionHold), within each link's
// max.backlog.bytes on this node. The broker computes the holds from the
// links' cursors; the engine knows no link.

// uplinkHolds is the engine's hook (engine.Manager.SetRetentionHold),
// and runUplinkHold's look: the holds of one retention pass, per link
// with a budget and local partition of its topics. A partition this node
// leads is held from the link's cursor; before the cursor is known (no
// session reached the far side since start), from its log start, as
// nothing can be assumed forwarded. Under drop-oldest, once the link's
// backlog on this node (its leaders' backlog bytes) is past the budget,
// each partition keeps its share of the budget (its part of the backlog,
// so that each gives up the same share); under refuse-writes everything
// is kept and writes are refused (uplinkRefuse). A partition this node
// follows is held from its own log start: it deletes only what its
// leader deleted (the leader's log start it takes from fetch responses),
// so a follower that becomes leader still holds what the old leader
// held. Of several links forwarding a topic, the lowest offset and the
// largest budget hold (a record goes only when every link lets it go).
//
// The log cleaner of a compacted topic keeps, on a partition this node
// leads, every record at or past the hold's offset while the link keeps
// everything (RetentionHold.Cleaner): within its budget, or past it under
// refuse-writes (writes are refused then, so the backlog does not grow).
// Past the budget under drop-oldest the cleaner compacts as usual, as
// retention deletes: compaction then may drop superseded values the link
// has not sent (the latest value of each key is still forwarded). A
// follower compacts as usual: a follower that becomes leader may have
// compacted past the new leader's cursor (the far side then gets the
// latest value of each key of that stretch, not every value).
func (b *Broker) uplinkHolds() map[engine.TopicPartition]engine.RetentionHold {
	holds := map[engine.TopicPartition]engine.RetentionHold{}
	links := b.links()
	if b.replicas == nil || len(links) == 0 {
		b.uplinkRefusing.Store(nil)
		return holds
	}
	parts := b.replicas.Partitions()
	// Per partition of parts, for the link at hand: the hold's offset
	// and the backlog's bytes (-1 on a follower, -2 not the link's).
	offsets := make([]int64, len(parts))
	sizes := make([]int64, len(parts))
	var refusing []*uplink.Link
	for _, l := range links {
		budget := l.MaxBacklogBytes()
		if budget <= 0 {
			continue
		}
		var total int64
		for i, p := range parts {
			tp := p.TopicPartition()
			log := p.Log()
			sizes[i] = -2
			if log == nil || !l.Matches(tp.Topic) {
				continue
			}
			offsets[i], sizes[i] = log.LogStartOffset(), -1
			if leader, _, _, _ := p.LeaderState(); leader {
				sizes[i] = log.Size()
				if next, ok := l.Cursor(tp.Topic, tp.Partition); ok {
					offsets[i], sizes[i] = max(next, offsets[i]), 0
					if lb, ok := b.uplinkBacklog(tp.Topic, tp.Partition, next); ok {
						sizes[i] = lb.Bytes
					}
				}
				total += sizes[i]
			}
		}
		full := total > budget
		l.SetBacklogFull(full, total)
		drop := full && !l.RefusesWrites()
		if full && !drop {
			refusing = append(refusing, l)
		}
		for i, p := range parts {
			if sizes[i] == -2 {
				continue
			}
			h := engine.RetentionHold{Offset: offsets[i], MaxBytes: -1}
			if sizes[i] >= 0 && drop {
				h.MaxBytes = int64(float64(sizes[i]) * float64(budget) / float64(total))
			}
			// A leader's hold binds the log cleaner too, while the link
			// keeps everything (within its budget, or refusing writes).
			h.Cleaner = sizes[i] >= 0 && h.MaxBytes < 0
			tp := p.TopicPartition()
			if old, ok := holds[tp]; ok {
				h.Offset = min(h.Offset, old.Offset)
				h.Cleaner = h.Cleaner || old.Cleaner
				// A record goes only when every link's hold lets it go.
				if old.MaxBytes < 0 || h.MaxBytes >= 0 && old.MaxBytes > h.MaxBytes {
					h.MaxBytes = old.MaxBytes
				}
			}
			holds[tp] = h
		}
	}
	if len(refusing) == 0 {
		b.uplinkRefusing.Store(nil)
	} else {
		b.uplinkRefusing.Store(&refusing)
	}
	return holds
}

// uplinkDropped is told what retention deleted past a hold: every link
// with a budget forwarding the topic counts and logs it.
func (b *Broker) uplinkDropped(tp engine.TopicPartition, d engine.RetentionDrop) {
	for _, l := range b.links() {
		if l.MaxBacklogBytes() > 0 && l.Matches(tp.Topic) {
			l.NoteDropped(tp.Topic, tp.Partition, d.From, d.To, d.Bytes)
		}
	}
}

// uplinkRefuse is the produce path's check (kafkaReplica.CheckWritable):
// a write to a topic of a refuse-writes link whose backlog on this node
// is past max.backlog.bytes gets THROTTLING_QUOTA_EXCEEDED. That code is
// retriable, so a Kafka producer retries it within its
// delivery.timeout.ms (the link may catch up meanwhile) and then gives
// its application the error; a storage error would send it looking for
// another leader, and POLICY_VIOLATION is not retried at all.
func (b *Broker) uplinkRefuse(topic string) error {
	ls := b.uplinkRefusing.Load()
	if ls == nil {
		return nil
	}
	for _, l := range *ls {
		if l.Matches(topic) {
			l.NoteRefusedWrite()
			return errUplinkBacklogFull
		}
	}
	return nil
}

// errUplinkBacklogFull is uplinkRefuse's answer; the link's name is in
// its status and log.
var errUplinkBacklogFull = fmt.Errorf("%w: an uplink's backlog is past its max.backlog.bytes (refuse-writes)", kerr.ThrottlingQuotaExceeded)

// runUplinkHold looks at the links' backlogs every interval until ctx
// ends, so that refuse-writes refuses and lets writes through again
// without waiting for a retention pass.
func (b *Broker) runUplinkHold(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.uplinkHolds()
		}
	}
}

// uplinkRefusingLinks is the type of Broker.uplinkRefusing.
type uplinkRefusingLinks = atomic.Pointer[[]*uplink.Link]
