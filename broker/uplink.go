package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/uplink"
)

// uplinksComponent runs the enabled links: the file's [uplink.NAME]
// tables, and the run-time links of the cluster-wide dynamic configs
// uplink.NAME.KEY (`wren uplink add|remove`, config.RuntimeUplinks),
// started, restarted with new settings and stopped as the metadata
// images come. It comes after the kafka listener: a link reads the local
// topics as a client of this node's server through its internal listener
// (kafka.InternalListener: in-process connections, principal
// User:wren-uplink, read only but for the pull targets, no ACL asked, whatever the client
// listeners' security), so it closes (its requests in flight answered)
// before the server does.
func (b *Broker) uplinksComponent(w *wiring) component {
	return component{name: "uplinks",
		start: func() error {
			b.uplinkDownAfter = w.o.UplinkDownAfter
			if b.uplinkDownAfter <= 0 {
				b.uplinkDownAfter = time.Minute
			}
			rt := &uplinkRuntime{refresh: w.o.UplinkRefresh, wake: make(chan struct{}, 1),
				file: map[string]bool{}, keys: map[string]string{}, logged: map[string]bool{}}
			b.uplinkRT = rt
			// A link paused in the metadata log starts paused: it does
			// not forward until the first image is applied.
			paused := config.UplinksPaused(b.controller.Image().BrokerConfigs(""))
			var links []*uplink.Link
			var planned []config.Uplink
			for _, u := range b.cfg.Uplinks {
				if u.Enabled {
					planned = append(planned, u)
				}
			}
			b.uplinkPlanned.Store(&planned)
			for _, u := range b.cfg.Uplinks {
				rt.file[u.Name] = true
				if !u.Enabled {
					continue
				}
				if u.SASL() {
					// A password missing is the config's fault: said at
					// start, not retried. A wrong one is the far side's
					// answer: the link's last error, retried.
					if _, err := u.Password(); err != nil {
						closeLinks(links)
						return err
					}
				}
				links = append(links, b.startUplink(u, paused[u.Name]))
			}
			b.uplinks.Store(&links)
			// The links' pull sides write their pull targets through the
			// internal listener, and no other topic.
			b.server.SetInternalWritable(b.uplinkPullTarget)
			// The retention hold, now that the links are set: retention
			// and the log cleaner keep what the links did not forward
			// (uplink_hold.go). Set even with no link: a run-time link
			// may come.
			b.logs.SetRetentionHold(b.uplinkHolds, b.uplinkDropped)
			every := w.o.UplinkRefresh
			if every <= 0 {
				every = 5 * time.Second
			}
			b.uplinkHoldTask = goTask(func(ctx context.Context) { b.runUplinkHold(ctx, every) })
			// Run-time links and pauses are cluster-wide dynamic configs:
			// each image says which links run and which are paused (the
			// first one at once). The publisher's goroutine only hands the
			// layer over: starting and stopping links (a stop waits for
			// requests in flight) is runUplinkConfigs' work.
			rt.task = goTask(func(ctx context.Context) { b.runUplinkConfigs(ctx) })
			if err := b.controller.Subscribe(func(_, im *cluster.Image) { rt.offer(im.BrokerConfigs("")) }); err != nil {
				b.closeUplinks()
				return fmt.Errorf("uplinks: %w", err)
			}
			return nil
		},
		close: func() error { b.closeUplinks(); return nil },
	}
}

// uplinkList holds the running links, replaced whole when a run-time
// link starts or stops.
type uplinkList = atomic.Pointer[[]*uplink.Link]

// links are the running links.
func (b *Broker) links() []*uplink.Link {
	if p := b.uplinks.Load(); p != nil {
		return *p
	}
	return nil
}

// startUplink starts link u on this node, paused or not.
func (b *Broker) startUplink(u config.Uplink, paused bool) *uplink.Link {
	return uplink.Start(uplink.Options{Config: u, NodeID: b.cfg.NodeID, Local: localSeed, LocalDial: b.internal.DialContext,
		Logger: b.logger, Refresh: b.uplinkRT.refresh, Backlog: b.uplinkBacklog, Paused: paused,
		CreateTopic: b.uplinkCreateTopic, Links: b.uplinkConfigs})
}

// uplinkConfigs are the configs of the links running on this node and
// of those about to start, for the links' run-time loop checks.
func (b *Broker) uplinkConfigs() []config.Uplink {
	var out []config.Uplink
	seen := map[string]bool{}
	for _, l := range b.links() {
		out = append(out, l.Config())
		seen[l.Name()] = true
	}
	if p := b.uplinkPlanned.Load(); p != nil {
		for _, u := range *p {
			if !seen[u.Name] {
				out = append(out, u)
			}
		}
	}
	return out
}

// uplinkPullTarget says whether a running link pulls into local topic
// topic: the internal listener's sessions may write it
// (kafka.Server.SetInternalWritable), and no other topic.
func (b *Broker) uplinkPullTarget(topic string) bool {
	for _, l := range b.links() {
		if c := l.Config(); c.PullTarget(topic) {
			return true
		}
	}
	return false
}

// uplinkCreateTopic creates the local topic a link pulls a far topic
// into, with the far partition count and the cluster's default
// replication factor, through this node's controller: it answers
// NOT_CONTROLLER unless this node is the acting controller, whose link
// then creates it (every node runs the same links). In process rather
// than as a CreateTopics request of the link's principal: that would be
// forwarded to the controller and judged by the ACLs there.
func (b *Broker) uplinkCreateTopic(ctx context.Context, topic string, partitions int32) error {
	res, err := b.controller.CreateTopics(ctx, []cluster.CreateTopic{{Name: topic, NumPartitions: partitions, ReplicationFactor: -1}}, false)
	if err != nil {
		return err
	}
	return res[0].Err
}

func closeLinks(links []*uplink.Link) {
	for _, l := range links {
		l.Close()
	}
}

// uplinkRuntime is the run-time links' state: the last cluster-wide
// dynamic layer offered (latest wins), and what runUplinkConfigs made
// of the layers before.
type uplinkRuntime struct {
	refresh time.Duration
	task    *task
	wake    chan struct{}

	// mu guards layer only: the publisher's goroutine never waits for
	// a link to start or stop.
	mu    sync.Mutex
	layer map[string]string

	// Owned by runUplinkConfigs: the file's link names (which win over
	// run-time links of the same name), each running run-time link's
	// settings (its uplink.NAME.* keys, to see a change), and the
	// problems logged (each once while it lasts).
	file   map[string]bool
	keys   map[string]string
	logged map[string]bool
}

// offer hands over an image's cluster-wide dynamic layer.
func (rt *uplinkRuntime) offer(layer map[string]string) {
	rt.mu.Lock()
	rt.layer = layer
	rt.mu.Unlock()
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// runUplinkConfigs applies each layer offered until ctx ends.
func (b *Broker) runUplinkConfigs(ctx context.Context) {
	rt := b.uplinkRT
	for {
		select {
		case <-ctx.Done():
			return
		case <-rt.wake:
		}
		rt.mu.Lock()
		layer := rt.layer
		rt.mu.Unlock()
		b.applyUplinkConfigs(layer)
	}
}

// applyUplinkConfigs, on runUplinkConfigs' goroutine only, makes the
// running run-time links those of the cluster-wide dynamic layer: a link
// added starts, a link whose settings changed restarts with them, a link
// removed stops (and so its retention hold goes at once); then the links
// the layer pauses (uplink.NAME.paused) are paused and the others
// resumed. A run-time link the node cannot run
// (its TLS files or password missing here) is
// logged and not run; one the file also names is the file's.
func (b *Broker) applyUplinkConfigs(layer map[string]string) {
	rt := b.uplinkRT
	wanted, errs := config.RuntimeUplinks(layer)
	problems := map[string]bool{}
	note := func(msg string, args ...any) {
		key := fmt.Sprint(append([]any{msg}, args...)...)
		problems[key] = true
		if !rt.logged[key] {
			b.logger.Warn(msg, args...)
		}
	}
	for _, err := range errs {
		note("uplink: a run-time link is not run", "err", err.Error())
	}
	settings := map[string]string{}
	for k, v := range layer {
		if config.IsUplinkKey(k) && !strings.HasSuffix(k, ".paused") {
			name := strings.SplitN(k, ".", 3)[1]
			settings[name] += k + "=" + v + "\n"
		}
	}
	next := map[string]config.Uplink{}
	for _, u := range wanted {
		switch {
		case rt.file[u.Name]:
			note("uplink: the config file defines this link: the run-time link of the same name is not run on this node", "uplink", u.Name)
			continue
		case !u.Enabled:
			continue
		}
		if u.SASL() {
			if _, err := u.Password(); err != nil {
				note("uplink: a run-time link is not run", "uplink", u.Name, "err", err.Error())
				continue
			}
		}
		next[u.Name] = u
	}
	rt.logged = problems

	var stop []*uplink.Link
	var keep []*uplink.Link
	for _, l := range b.links() {
		name := l.Name()
		if rt.file[name] {
			keep = append(keep, l)
			continue
		}
		if _, ok := next[name]; ok && rt.keys[name] == settings[name] {
			keep = append(keep, l)
			delete(next, name) // running as it should
			continue
		}
		stop = append(stop, l)
		delete(rt.keys, name)
	}
	// Stopped before their successors start: a link restarted with new
	// settings never runs twice at once.
	for _, l := range stop {
		l.Close()
		b.logger.Info("uplink: run-time link stopped", "uplink", l.Name())
	}
	paused := config.UplinksPaused(layer)
	planned := make([]config.Uplink, 0, len(keep)+len(next))
	for _, l := range keep {
		planned = append(planned, l.Config())
	}
	for _, u := range next {
		planned = append(planned, u)
	}
	b.uplinkPlanned.Store(&planned)
	for _, name := range slices.Sorted(maps.Keys(next)) {
		keep = append(keep, b.startUplink(next[name], paused[name]))
		rt.keys[name] = settings[name]
		b.logger.Info("uplink: run-time link started", "uplink", name)
	}
	b.uplinks.Store(&keep)
	if len(stop) > 0 {
		// The stopped links' holds go now, and a refuse-writes link
		// stopped refuses no more writes.
		b.uplinkHolds()
	}
	for _, l := range keep {
		l.SetPaused(paused[l.Name()])
	}
}

// closeUplinks stops the links. The list stays as it is: /metrics may
// read a stopped link's status until the ops server closes.
func (b *Broker) closeUplinks() {
	if rt := b.uplinkRT; rt != nil && rt.task != nil {
		// First: no link starts or stops from here on (an image offered
		// later is not applied).
		rt.task.stop()
	}
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
	closeLinks(b.links())
	if b.server != nil {
		b.server.SetInternalWritable(nil)
	}
}

// localSeed is the seed address of the links' local clients: any
// address does, since their dialer connects every one to this node.
const localSeed = "wren-internal:1"

// UplinkStatus is every running link's state: the file's links, set at
// start, and the run-time links running now.
func (b *Broker) UplinkStatus() []uplink.Status {
	var out []uplink.Status
	for _, l := range b.links() {
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
	if !leader || log == nil || next < 0 || next >= hwm {
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
			u.Partitions = append(u.Partitions, health.UplinkPartition{Topic: p.Topic, Partition: p.Partition, Direction: p.Direction, Active: p.Active,
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
