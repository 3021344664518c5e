package uplink

import (
	"time"

	"github.com/wren-broker/wren/config"
)

// holdState is what the retention hold (docs in doc.go, "Store and
// forward") tells a link: the broker computes the hold from the link's
// cursors and reports back here, for Status, metrics and logs. Guarded by
// Link.mu.
type holdState struct {
	full                  bool
	dropped, droppedBytes int64
	lastDrop, lastWarn    time.Time
	refusedWrites         int64
}

// dropWarnEvery bounds the WARN lines about dropped records: one per
// link per interval, carrying the counts since the last one.
const dropWarnEvery = time.Minute

// Cursor is the next local offset the link forwards of a partition, and
// whether it is known (a session read the far tail since start).
func (l *Link) Cursor(topic string, partition int32) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.parts[tp{topic, partition}]
	if p == nil || p.next < 0 {
		return 0, false
	}
	return p.next, true
}

// Matches says whether the link forwards topic.
func (l *Link) Matches(topic string) bool { return l.o.Config.Matches(topic) }

// MaxBacklogBytes is the link's max.backlog.bytes (0: no hold).
func (l *Link) MaxBacklogBytes() int64 { return l.o.Config.MaxBacklogBytes }

// RefusesWrites says whether the link's backlog.full.policy is refuse-writes.
func (l *Link) RefusesWrites() bool {
	return l.o.Config.BacklogFullPolicy == config.BacklogRefuseWrites
}

// SetBacklogFull records whether the link's backlog on this node (bytes)
// is past its max.backlog.bytes, logging each change.
func (l *Link) SetBacklogFull(full bool, bytes int64) {
	l.mu.Lock()
	changed := l.hold.full != full
	l.hold.full = full
	l.mu.Unlock()
	if changed {
		l.log.Warn("uplink backlog past max.backlog.bytes", "full", full, "backlog_bytes", bytes)
	}
}

// NoteDropped counts the offsets [from, to) of a partition that retention
// deleted before the link forwarded them (drop-oldest past the budget),
// with the bytes of their segments, and logs it: a WARN per drop at most
// once a minute per link, the rest counted.
func (l *Link) NoteDropped(topic string, partition int32, from, to, bytes int64) {
	now := time.Now()
	l.mu.Lock()
	l.hold.dropped += to - from
	l.hold.droppedBytes += bytes
	l.hold.lastDrop = now
	warn := now.Sub(l.hold.lastWarn) >= dropWarnEvery
	if warn {
		l.hold.lastWarn = now
	}
	total := l.hold.dropped
	l.mu.Unlock()
	if warn {
		l.log.Warn("uplink records deleted by retention unforwarded (max.backlog.bytes)",
			"topic", topic, "partition", partition, "from", from, "to", to, "dropped_total", total)
	}
}

// NoteRefusedWrite counts a produce partition refused because the
// backlog is past the budget (refuse-writes).
func (l *Link) NoteRefusedWrite() {
	l.mu.Lock()
	l.hold.refusedWrites++
	l.mu.Unlock()
}

// holdStatus fills s's hold fields; l.mu is held.
func (l *Link) holdStatus(s *Status) {
	s.BacklogFull = l.hold.full
	s.Dropped, s.DroppedBytes, s.LastDrop = l.hold.dropped, l.hold.droppedBytes, l.hold.lastDrop
	s.RefusedWrites = l.hold.refusedWrites
}
