package broker

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/uplink"
)

// uplinksComponent runs the enabled [uplink.NAME] links. It comes after
// the kafka listener: a link reads the local topics as a client of this
// node's server through its internal listener (kafka.InternalListener:
// in-process connections, principal User:wren-uplink, read only, no ACL
// asked, whatever the client listeners' security), so it closes (its
// requests in flight answered) before the server does.
func (b *Broker) uplinksComponent(w *wiring) component {
	return component{name: "uplinks",
		start: func() error {
			b.uplinkDownAfter = w.o.UplinkDownAfter
			if b.uplinkDownAfter <= 0 {
				b.uplinkDownAfter = time.Minute
			}
			for _, u := range b.cfg.Uplinks {
				if !u.Enabled {
					continue
				}
				if u.SASL() {
					// A password missing is the config's fault: said at
					// start, not retried. A wrong one is the far side's
					// answer: the link's last error, retried.
					if _, err := u.Password(); err != nil {
						b.closeUplinks()
						return err
					}
				}
				b.uplinks = append(b.uplinks, uplink.Start(uplink.Options{Config: u, NodeID: b.cfg.NodeID,
					Local: localSeed, LocalDial: b.internal.DialContext,
					Logger: b.logger, Refresh: w.o.UplinkRefresh, Backlog: b.uplinkBacklog}))
			}
			if len(b.uplinks) == 0 {
				return nil
			}
			// The retention hold, now that b.uplinks is set: retention
			// keeps what the links did not forward (uplink_hold.go).
			b.logs.SetRetentionHold(b.uplinkHolds, b.uplinkDropped)
			every := w.o.UplinkRefresh
			if every <= 0 {
				every = 5 * time.Second
			}
			b.uplinkHoldTask = goTask(func(ctx context.Context) { b.runUplinkHold(ctx, every) })
			// Pauses are cluster-wide dynamic configs: each image says
			// which links are paused (the first one at once).
			if err := b.controller.Subscribe(func(_, im *cluster.Image) { b.applyUplinkPauses(im) }); err != nil {
				b.closeUplinks()
				return fmt.Errorf("uplinks: %w", err)
			}
			return nil
		},
		close: func() error { b.closeUplinks(); return nil },
	}
}

// applyUplinkPauses pauses the links the image's cluster-wide dynamic
// configs pause (config.UplinkPausedKey) and resumes the others.
func (b *Broker) applyUplinkPauses(im *cluster.Image) {
	paused := config.UplinksPaused(im.BrokerConfigs(""))
	for _, l := range b.uplinks {
		l.SetPaused(paused[l.Name()])
	}
}

// closeUplinks stops the links. b.uplinks stays as it is: /metrics may
// read a stopped link's status until the ops server closes.
func (b *Broker) closeUplinks() {
	if b.uplinkHoldTask != nil {
		b.uplinkHoldTask.stop()
		b.uplinkHoldTask = nil
	}
	if b.logs != nil {
		// A stopped link forwards nothing more: its records are held no
		// longer than its process runs, and the next start holds again.
		b.logs.SetRetentionHold(nil, nil)
	}
	b.uplinkRefusing.Store(nil)
	for _, l := range b.uplinks {
		l.Close()
	}
}

// localSeed is the seed address of the links' local clients: any
// address does, since their dialer connects every one to this node.
const localSeed = "wren-internal:1"

// UplinkStatus is every link's state. The links are set at start (before
// the ready component attaches the metrics) and never change after.
func (b *Broker) UplinkStatus() []uplink.Status {
	var out []uplink.Status
	for _, l := range b.uplinks {
		out = append(out, l.Status())
	}
	return out
}

// uplinkBacklog measures what a partition's local log holds from a link's
// cursor to its high watermark, for the link's status: the bytes from the
// segments' sizes and the positions the offset index gives (no record is
// read), and the oldest record's time from the header of the batch that
// holds the cursor. The link reads through a kgo client and so knows
// neither; this is the cheapest honest source: two index lookups and one
// 61-byte read per partition per look. The bytes are the log's, as
// stored (compressed if the producer compressed), counted from the
// start of the batch holding the cursor.
func (b *Broker) uplinkBacklog(topic string, partition int32, next int64) (uplink.LocalBacklog, bool) {
	if b.replicas == nil {
		return uplink.LocalBacklog{}, false
	}
	p := b.replicas.Partition(engine.TopicPartition{Topic: topic, Partition: partition})
	if p == nil {
		return uplink.LocalBacklog{}, false
	}
	leader, _, hwm, _ := p.LeaderState()
	out := uplink.LocalBacklog{Leader: leader, HighWatermark: hwm}
	log := p.Log()
	if !leader || log == nil || next >= hwm {
		return out, true
	}
	from, err := log.Read(next, 1, hwm, true)
	if err != nil {
		return out, true // out of range or damaged: the link's own errors say it
	}
	defer from.Release()
	if from.Slice.Size == 0 {
		return out, true
	}
	segs := log.Segments()
	out.Bytes = bytesFrom(segs, from.FirstOffset, from.Slice.Position)
	if leo := log.LogEndOffset(); hwm < leo {
		if past, err := log.Read(hwm, 1, leo, true); err == nil {
			if past.Slice.Size > 0 {
				out.Bytes -= bytesFrom(segs, past.FirstOffset, past.Slice.Position)
			}
			past.Release()
		}
	}
	out.Bytes = max(out.Bytes, 0)
	head := make([]byte, batch.RecordBatchOverhead)
	if _, err := from.Slice.File.ReadAt(head, from.Slice.Position); err == nil {
		if h, err := batch.ParseHeader(head); err == nil {
			ts := h.BaseTimestamp
			if h.TimestampType() == batch.LogAppendTime {
				ts = h.MaxTimestamp
			}
			if ts > 0 {
				out.Oldest = time.UnixMilli(ts)
			}
		}
	}
	return out, true
}

// bytesFrom counts the log's bytes from position pos of the segment
// holding offset to the end of the log.
func bytesFrom(segs []engine.SegmentInfo, offset, pos int64) int64 {
	var n int64
	for i, s := range segs {
		switch {
		case i+1 < len(segs) && segs[i+1].BaseOffset <= offset:
			// a later segment holds offset
		case s.BaseOffset <= offset:
			n += s.Size - pos
		default:
			n += s.Size
		}
	}
	return n
}

// uplinkFacts are the links' states as this node's health facts: each
// link down longer than uplinkDownAfter is down. The totals count every
// partition; the partitions listed are at most
// health.MaxUplinkPartitionsListed over all links (the facts a node sends
// its peers are bounded), refused ones first, then the largest backlogs,
// and errors are cut short: the node's /metrics has every partition.
func (b *Broker) uplinkFacts() []health.UplinkState {
	now := time.Now()
	room := health.MaxUplinkPartitionsListed
	var out []health.UplinkState
	for _, st := range b.UplinkStatus() {
		u := health.UplinkState{Node: b.cfg.NodeID, Link: st.Name, Up: st.Up, Paused: st.Paused, LastError: cut(st.LastError, 1000),
			SentRecords: st.Sent, SentBytes: st.SentBytes, RecordsPerSec: st.RecordsPerSec, BytesPerSec: st.BytesPerSec,
			Partitions:  []health.UplinkPartition{},
			BacklogFull: st.BacklogFull, DroppedRecords: st.Dropped, DroppedBytes: st.DroppedBytes, RefusedWrites: st.RefusedWrites,
			RecentlyDropped: !st.LastDrop.IsZero() && now.Sub(st.LastDrop) < time.Hour}
		down := st.DownFor(now)
		u.DownForMs = down.Milliseconds()
		u.Down = !st.Paused && down > b.uplinkDownAfter
		if !st.LastUp.IsZero() {
			u.LastUpMs = st.LastUp.UnixMilli()
		}
		if !st.LastErrorAt.IsZero() {
			u.LastErrorMs = st.LastErrorAt.UnixMilli()
		}
		for _, p := range st.Partitions {
			if p.Err != "" {
				u.RefusedPartitions++
			}
			u.BacklogRecords += p.Backlog
			u.BacklogBytes += p.BacklogBytes
			u.BacklogSeconds = max(u.BacklogSeconds, p.BacklogSeconds)
		}
		ps := st.Partitions
		if len(ps) > room {
			ps = slices.Clone(ps)
			sort.Slice(ps, func(i, j int) bool {
				a, b := &ps[i], &ps[j]
				if (a.Err != "") != (b.Err != "") {
					return a.Err != ""
				}
				return a.Backlog > b.Backlog
			})
			u.PartitionsNotListed = len(ps) - room
			ps = ps[:room]
			sort.Slice(ps, func(i, j int) bool {
				a, b := &ps[i], &ps[j]
				return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
			})
		}
		room -= len(ps)
		for _, p := range ps {
			u.Partitions = append(u.Partitions, health.UplinkPartition{Topic: p.Topic, Partition: p.Partition, Active: p.Active,
				Leader: p.Leader, Next: p.Next, BacklogRecords: p.Backlog, BacklogBytes: p.BacklogBytes, BacklogSeconds: p.BacklogSeconds,
				RecordsPerSec: p.RecordsPerSec, BytesPerSec: p.BytesPerSec, SentRecords: p.Sent, Error: cut(p.Err, 300)})
		}
		out = append(out, u)
	}
	return out
}

// cut keeps the first n bytes of s, marked as cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
