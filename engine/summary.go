package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"

	"github.com/wren-broker/wren/internal/vfs"
)

// CleanStopSummaryFile is the clean-stop summary: written by a Close that
// left the clean-shutdown marker, it holds every partition's leader-epoch
// entries and producer snapshot, so that the next clean start reads one
// file instead of two per partition. Only wren reads it, and only when it
// is provably from the same stop as the marker and the files beside it
// (doc.go, "Clean restarts"). Kafka ignores it.
const CleanStopSummaryFile = "wren-clean-stop-summary"

// summaryMagic and summaryVersion open the file; a CRC-32C covers the body.
const (
	summaryMagic   = "wrenCSS\x00"
	summaryVersion = 1
	// summaryHeader is the magic, the version (2 bytes), the body's length
	// (4) and its CRC (4).
	summaryHeader = len(summaryMagic) + 2 + 4 + 4
	// summaryMaxBytes bounds what a start reads: far above 10,000
	// partitions' summary, far below what would hurt.
	summaryMaxBytes = 1 << 30
)

var summaryCRC = crc32.MakeTable(crc32.Castagnoli)

// fileStamp is a file as a stat saw it: its size and identity.
type fileStamp struct {
	Size int64
	ID   vfs.FileIdentity
}

// stampOf stats name. ok is false when the FS keeps no identity or its
// ctimes are whole seconds: the stamp could not tell versions apart.
func stampOf(fsys vfs.FS, name string) (fileStamp, bool, error) {
	size, id, ok, err := vfs.StatIdentity(fsys, name)
	if err != nil {
		return fileStamp{}, false, err
	}
	if !ok || id.WholeSecond() {
		return fileStamp{}, false, nil
	}
	return fileStamp{Size: size, ID: id}, true, nil
}

// logStamp is a partition's directory and last segment as a stat saw
// them: any file created, renamed or removed in the directory (a segment,
// a snapshot, the leader-epoch checkpoint, all written under temporary
// names and renamed) moves the directory's ctime, and any write or
// truncation of the last segment moves its own.
type logStamp struct {
	Dir      vfs.FileIdentity
	LastBase int64
	Last     fileStamp
}

// stampLog stats the log's directory and its last segment's .log.
func stampLog(fsys vfs.FS, dir string, lastBase int64) (logStamp, bool, error) {
	d, ok, err := stampOf(fsys, dir)
	if err != nil || !ok {
		return logStamp{}, false, err
	}
	f, ok, err := stampOf(fsys, segmentFileName(dir, lastBase, logSuffix))
	if err != nil || !ok {
		return logStamp{}, false, err
	}
	return logStamp{Dir: d.ID, LastBase: lastBase, Last: f}, true, nil
}

// partitionSummary is one partition's part of the summary: what its
// leader-epoch-checkpoint and its newest producer snapshot held at the
// stop, and the stamp that proves they still do.
type partitionSummary struct {
	TP             TopicPartition
	Stamp          logStamp
	RecoveryPoint  int64
	LogStartOffset int64
	Epochs         []EpochEntry
	// SnapshotOffset is the producer snapshot's offset (its file's
	// name), -1 for none; Snapshot its bytes.
	SnapshotOffset int64
	Snapshot       []byte
}

// cleanStopSummary is the whole file.
type cleanStopSummary struct {
	Marker         vfs.FileIdentity
	RecoveryPoints fileStamp
	LogStarts      fileStamp
	Partitions     []*partitionSummary
}

func (s *cleanStopSummary) encode() []byte {
	b := make([]byte, summaryHeader, 4096)
	putID := func(id vfs.FileIdentity) {
		b = binary.BigEndian.AppendUint64(b, id.Ino)
		b = binary.BigEndian.AppendUint64(b, uint64(id.CtimeNs))
	}
	putStamp := func(st fileStamp) {
		b = binary.BigEndian.AppendUint64(b, uint64(st.Size))
		putID(st.ID)
	}
	putID(s.Marker)
	putStamp(s.RecoveryPoints)
	putStamp(s.LogStarts)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Partitions)))
	for _, p := range s.Partitions {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.TP.Topic)))
		b = append(b, p.TP.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(p.TP.Partition))
		putID(p.Stamp.Dir)
		b = binary.BigEndian.AppendUint64(b, uint64(p.Stamp.LastBase))
		putStamp(p.Stamp.Last)
		b = binary.BigEndian.AppendUint64(b, uint64(p.RecoveryPoint))
		b = binary.BigEndian.AppendUint64(b, uint64(p.LogStartOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.Epochs)))
		for _, e := range p.Epochs {
			b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
			b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
		}
		b = binary.BigEndian.AppendUint64(b, uint64(p.SnapshotOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.Snapshot)))
		b = append(b, p.Snapshot...)
	}
	copy(b, summaryMagic)
	binary.BigEndian.PutUint16(b[len(summaryMagic):], summaryVersion)
	body := b[summaryHeader:]
	binary.BigEndian.PutUint32(b[len(summaryMagic)+2:], uint32(len(body)))
	binary.BigEndian.PutUint32(b[len(summaryMagic)+6:], crc32.Checksum(body, summaryCRC))
	return b
}

var errSummaryCorrupt = errors.New("corrupt")

// summaryReader reads the body; the first short read sticks.
type summaryReader struct {
	b   []byte
	bad bool
}

func (r *summaryReader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *summaryReader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *summaryReader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *summaryReader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *summaryReader) id() vfs.FileIdentity {
	return vfs.FileIdentity{Ino: r.u64(), CtimeNs: int64(r.u64())}
}

func (r *summaryReader) stamp() fileStamp {
	size := int64(r.u64())
	return fileStamp{Size: size, ID: r.id()}
}

// decodeSummary checks the magic, the version and the CRC, and parses.
func decodeSummary(data []byte) (*cleanStopSummary, error) {
	if len(data) < summaryHeader || string(data[:len(summaryMagic)]) != summaryMagic {
		return nil, fmt.Errorf("%w: not a clean-stop summary", errSummaryCorrupt)
	}
	if v := binary.BigEndian.Uint16(data[len(summaryMagic):]); v != summaryVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", errSummaryCorrupt, v, summaryVersion)
	}
	n := binary.BigEndian.Uint32(data[len(summaryMagic)+2:])
	body := data[summaryHeader:]
	if uint64(n) != uint64(len(body)) {
		return nil, fmt.Errorf("%w: body of %d bytes, header says %d", errSummaryCorrupt, len(body), n)
	}
	if crc := crc32.Checksum(body, summaryCRC); crc != binary.BigEndian.Uint32(data[len(summaryMagic)+6:]) {
		return nil, fmt.Errorf("%w: CRC mismatch", errSummaryCorrupt)
	}
	r := &summaryReader{b: body}
	s := &cleanStopSummary{Marker: r.id(), RecoveryPoints: r.stamp(), LogStarts: r.stamp()}
	count := r.u32()
	for i := uint32(0); i < count && !r.bad; i++ {
		p := &partitionSummary{}
		p.TP.Topic = string(r.take(int(r.u16())))
		p.TP.Partition = int32(r.u32())
		p.Stamp.Dir = r.id()
		p.Stamp.LastBase = int64(r.u64())
		p.Stamp.Last = r.stamp()
		p.RecoveryPoint = int64(r.u64())
		p.LogStartOffset = int64(r.u64())
		ne := r.u32()
		if uint64(ne)*12 > uint64(len(r.b)) {
			r.bad = true
			break
		}
		p.Epochs = make([]EpochEntry, 0, ne)
		for range ne {
			p.Epochs = append(p.Epochs, EpochEntry{Epoch: int32(r.u32()), StartOffset: int64(r.u64())})
		}
		p.SnapshotOffset = int64(r.u64())
		p.Snapshot = slices.Clone(r.take(int(r.u32())))
		s.Partitions = append(s.Partitions, p)
	}
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: body does not parse", errSummaryCorrupt)
	}
	return s, nil
}

// matches says whether the partition's directory and last segment are as
// the stop left them, and its checkpoints' lines say what they said.
func (p *partitionSummary) matches(st logStamp, oo OpenOptions) bool {
	return st == p.Stamp && oo.RecoveryPoint == p.RecoveryPoint && oo.LogStartOffset == p.LogStartOffset
}

// readCleanStopSummary returns the summary the last clean stop left, for
// the marker whose identity the open saw, or nil: no summary, one of
// another stop (the marker or a checkpoint file is not the one it names),
// one this build cannot read, or a damaged one. Nothing here is fatal:
// without it every partition loads from its own files. It never returns
// partitions whose stamps the caller has not yet checked.
func (m *Manager) readCleanStopSummary(marker fileStamp, markerOK bool) map[TopicPartition]*partitionSummary {
	path := m.dir + "/" + CleanStopSummaryFile
	data, err := vfs.ReadFileLimit(m.fs, path, summaryMaxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ignore := func(why string, args ...any) map[TopicPartition]*partitionSummary {
		if m.cfg.Logger != nil {
			m.cfg.Logger.Warn("clean-stop summary ignored; every partition loads from its own files",
				append([]any{"file", path, "reason", why}, args...)...)
		}
		return nil
	}
	if err != nil {
		return ignore("unreadable", "err", err.Error())
	}
	if !markerOK {
		return ignore("no clean-shutdown marker with a fine-grained identity beside it")
	}
	s, err := decodeSummary(data)
	if err != nil {
		return ignore(err.Error())
	}
	if s.Marker != marker.ID {
		return ignore("written at another stop than the clean-shutdown marker's")
	}
	for _, c := range []struct {
		name string
		want fileStamp
	}{{RecoveryPointCheckpointFile, s.RecoveryPoints}, {LogStartOffsetCheckpointFile, s.LogStarts}} {
		st, ok, err := stampOf(m.fs, m.dir+"/"+c.name)
		if err != nil || !ok || st != c.want {
			return ignore(c.name + " changed since the stop")
		}
	}
	out := make(map[TopicPartition]*partitionSummary, len(s.Partitions))
	for _, p := range s.Partitions {
		out[p.TP] = p
	}
	return out
}

// writeCleanStopSummary writes the summary of the closed logs, bound to
// the marker just written and the checkpoints written before it. A log
// that left no summary of itself (a damaged one, one whose close failed,
// a file system without fine-grained identities) is left out, and loads
// from its files. Any failure here leaves no summary (a start then loads
// the old way); it never fails the Close.
func (m *Manager) writeCleanStopSummary(logs []*Log) {
	path := m.dir + "/" + CleanStopSummaryFile
	fail := func(err error) {
		m.fs.Remove(path + ".tmp")
		if m.cfg.Logger != nil {
			m.cfg.Logger.Warn("clean-stop summary not written; the next start loads every partition from its own files",
				"file", path, "err", err.Error())
		}
	}
	marker, ok, err := stampOf(m.fs, m.dir+"/"+CleanShutdownFile)
	if err != nil {
		fail(err)
		return
	}
	if !ok {
		return // whole-second ctimes: nothing to bind it to
	}
	s := &cleanStopSummary{Marker: marker.ID}
	for _, c := range []struct {
		name string
		to   *fileStamp
	}{{RecoveryPointCheckpointFile, &s.RecoveryPoints}, {LogStartOffsetCheckpointFile, &s.LogStarts}} {
		st, ok, err := stampOf(m.fs, m.dir+"/"+c.name)
		if err != nil || !ok {
			if err == nil {
				err = errors.New(c.name + ": no fine-grained identity")
			}
			fail(err)
			return
		}
		*c.to = st
	}
	for _, l := range logs {
		if p := l.stopSummary(); p != nil {
			s.Partitions = append(s.Partitions, p)
		}
	}
	if err := vfs.WriteFileAtomic(m.fs, path, s.encode()); err != nil {
		fail(err)
	}
}

// dropCleanStopSummary removes the summary at open, before any partition
// loads: from here on the partitions' own files are the truth, and the
// next summary is the next clean stop's. The directory sync that makes the
// marker's removal durable makes this one durable too.
func (m *Manager) dropCleanStopSummary(names []string) error {
	for _, name := range []string{CleanStopSummaryFile, CleanStopSummaryFile + ".tmp"} {
		if !slices.Contains(names, name) {
			continue
		}
		if err := m.fs.Remove(m.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("engine: removing %s: %w", m.dir+"/"+name, err)
		}
	}
	return nil
}

// loadedState is what a load after a clean stop found (Log.loaded).
type loadedState struct {
	stamp          logStamp
	snapshotOffset int64
	snapshot       []byte
}

// stampIfUntouched is the load's stamp when untouched (the files are as
// the load found them), else the zero stamp.
func (ld *loadedState) stampIfUntouched(untouched bool) logStamp {
	if ld == nil || !untouched {
		return logStamp{}
	}
	return ld.stamp
}

// closeFilesLocked is Close's work on the files: sync the active segment
// and its indexes, write the producer snapshot and, if the leader-epoch
// checkpoint may not hold the cache, the cache; then note what the
// clean-stop summary says of the log. A log that a clean start loaded
// and nothing changed since (its directory and last segment stamped as
// the load found them, no index entry unsynced) was durable then and is
// now: it syncs and writes nothing. Called under mu.
func (l *Log) closeFilesLocked() error {
	l.summary = nil
	untouched := false
	if ld := l.loaded; ld != nil && !l.active().indexesDirty && len(l.damage) == 0 {
		st, ok, err := stampLog(l.fs, l.dir, l.active().baseOffset)
		untouched = err == nil && ok && st == ld.stamp
	}
	wrote := !untouched
	if !untouched {
		if err := l.active().flush(true); err != nil {
			l.fail(err)
			return err
		}
	}
	l.commit.Advance(l.logEndOffset)
	if len(l.damage) > 0 {
		// A damaged log's producer state skips the damaged batches: no
		// snapshot vouches for it, and no summary either.
		return nil
	}
	var memo *loadedState
	if untouched {
		memo = l.loaded
	}
	off, data, snapWrote, err := l.writeProducerSnapshotMemo(memo)
	if err != nil {
		l.fail(err)
		return err
	}
	wrote = wrote || snapWrote
	if !l.epochs.onDiskKnown || !slices.Equal(l.epochs.entries, l.epochs.onDisk) {
		wrote = true
		if err := l.epochs.flush(); err != nil {
			l.fail(err)
			return err
		}
	}
	// The stamps are taken after the last change to the files; a log
	// untouched that wrote nothing has the stamps its load took.
	st := l.loaded.stampIfUntouched(!wrote)
	if wrote {
		var ok bool
		if st, ok, err = stampLog(l.fs, l.dir, l.active().baseOffset); err != nil || !ok {
			return nil // no summary of this log: it loads from its files
		}
	}
	l.summary = &partitionSummary{TP: l.tp, Stamp: st, Epochs: slices.Clone(l.epochs.entries),
		SnapshotOffset: off, Snapshot: data}
	return nil
}

// stopSummary is the log's part of the clean-stop summary, once closed,
// with the checkpoints' values as the Manager wrote them; nil for none.
func (l *Log) stopSummary() *partitionSummary {
	l.mu.Lock()
	p := l.summary
	closed := l.closed
	l.mu.Unlock()
	if p == nil || !closed {
		return nil
	}
	p.RecoveryPoint = l.RecoveryPoint()
	p.LogStartOffset = l.logStartOffsetView.Load()
	return p
}

// lastSegmentBase is the base offset of the newest .log in a listing.
func lastSegmentBase(names []string) (int64, bool) {
	last, found := int64(-1), false
	for _, n := range names {
		if b, ok := parseBase(n, logSuffix); ok && b > last {
			last, found = b, true
		}
	}
	return last, found
}
