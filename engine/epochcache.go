package engine

import (
	"fmt"
	"slices"
	"strconv"
)

// EpochEntry says that leader epoch Epoch wrote its first batch at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache: the start offset of every
// leader epoch in the log, persisted in leader-epoch-checkpoint. Followers
// use it through OffsetForLeaderEpoch to find where their log diverges
// (KIP-101, KIP-279).
//
// Invariant: entries are strictly increasing in both Epoch and StartOffset.
// The caller (Log) serialises access.
type epochCache struct {
	// at is the log's directory (shared with the log): the file's path is
	// built when it is read or written, not held by every idle partition.
	at      *fileDir
	entries []EpochEntry
	// onDisk is what the file holds, when onDiskKnown: the entries it was
	// loaded with (none for a missing file) or last written. A clean
	// Close writes the file only when the entries differ from it.
	onDisk      []EpochEntry
	onDiskKnown bool
}

// path is the leader-epoch-checkpoint file's.
func (c *epochCache) path() string { return c.at.dir + "/" + LeaderEpochCheckpointFile }

func loadEpochCache(at *fileDir) (*epochCache, error) {
	c := &epochCache{at: at}
	rows, err := readCheckpoint(at.fs, c.path(), 2)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		e, err1 := strconv.ParseInt(r[0], 10, 32)
		off, err2 := strconv.ParseInt(r[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || off < 0 {
			return nil, fmt.Errorf("engine: %s: bad entry %q %q", c.path(), r[0], r[1])
		}
		ent := EpochEntry{Epoch: int32(e), StartOffset: off}
		if n := len(c.entries); n > 0 && (c.entries[n-1].Epoch >= ent.Epoch || c.entries[n-1].StartOffset > ent.StartOffset) {
			return nil, fmt.Errorf("engine: %s: entries out of order at epoch %d", c.path(), e)
		}
		c.entries = append(c.entries, ent)
	}
	c.setOnDisk()
	return c, nil
}

// setOnDisk records that the file holds the entries.
func (c *epochCache) setOnDisk() {
	c.onDisk, c.onDiskKnown = slices.Clone(c.entries), true
}

func (c *epochCache) flush() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	if err := writeCheckpoint(c.at.fs, c.path(), lines); err != nil {
		// The file may hold the old entries or the new ones.
		c.onDisk, c.onDiskKnown = nil, false
		return err
	}
	c.setOnDisk()
	return nil
}

// latest is the newest entry, or ok=false.
func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at offset, if it is newer than every
// entry. It reports whether the cache changed (and needs a flush). A batch
// with an older epoch than the latest is not an error here: followers copy
// what the leader wrote.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if l, ok := c.latest(); ok {
		if epoch <= l.Epoch {
			return false
		}
		if offset <= l.StartOffset {
			// A newer epoch cannot start before an older one, and two
			// cannot start at one offset (the invariant); drop the entries
			// it supersedes, as Kafka does.
			c.truncateFromEnd(offset)
		}
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// truncateFromEnd removes entries starting at or after endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart drops entries wholly before startOffset and moves the
// first survivor's start up to it.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= startOffset {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < startOffset {
		c.entries[0].StartOffset = startOffset
		changed = true
	}
	return changed
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor does: for the latest epoch, the log end
// offset; for an older one, the largest epoch <= requested and the start
// offset of the first epoch above it; for an epoch above the latest, or an
// empty cache, (-1, -1).
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	l, ok := c.latest()
	if !ok || requested < 0 {
		return -1, -1
	}
	if requested == l.Epoch {
		return requested, logEndOffset
	}
	if requested > l.Epoch {
		return -1, -1
	}
	// The smallest entry with an epoch above requested exists.
	i := 0
	for c.entries[i].Epoch <= requested {
		i++
	}
	if i == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

func (c *epochCache) snapshot() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}
