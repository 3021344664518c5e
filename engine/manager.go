package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// lockFile is the data directory's lock, as Kafka's ".lock".
// Part of the on-disk format; never change.
const lockFile = ".lock"

// deleteDirSuffix marks a partition directory being deleted, as Kafka's
// "<topic>-<partition>.<id>-delete".
const deleteDirSuffix = "-delete"

// MetaProperties is meta.properties: who owns the data directory.
type MetaProperties struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// ManagerConfig configures a data directory.
type ManagerConfig struct {
	// ClusterID and NodeID are checked against meta.properties; a directory
	// from another cluster or node is refused, never wiped.
	ClusterID string
	NodeID    int32
	// Defaults are the options for a log without topic overrides.
	Defaults Options
	// TopicOptions, if set, returns a topic's effective options.
	TopicOptions func(topic string) Options
	// OnDirFailure is told once when the directory fails.
	OnDirFailure func(error)
	// OnSync, if set, is told about every fdatasync of a partition log's
	// active segment, for metrics (see SyncObserver).
	OnSync SyncObserver
	// Logger receives what recovery did, per partition; nil discards it.
	Logger *slog.Logger
	// FreeSpaceFloor is the free space below which client appends are
	// refused (diskspace.go); the zero value turns it off.
	FreeSpaceFloor FreeSpaceFloor
	// OnDiskSpace, if set, is told when the directory crosses its floor,
	// runs out of space, or recovers from a failure for lack of space.
	OnDiskSpace func(DiskSpaceEvent)
	// MetadataLogDir, if set, names the subdirectory that holds the node's
	// metadata log. Like partition directories, it shows that the
	// directory already holds data, so a missing meta.properties beside it
	// is refused rather than written anew.
	MetadataLogDir string
	// ReadClusterID, if set, reads the cluster id recorded in the metadata
	// log at path, for the error that reports a missing meta.properties.
	ReadClusterID func(path string) (string, error)
	// OpenFilesMax is log.open.files.max: how many segment and index files
	// the directory keeps open at most (HandleCache). Zero means no budget:
	// every file stays open while its segment lives.
	OpenFilesMax int
	// JoinCluster is set on a node that learns the cluster id from its
	// cluster (a voter of a metadata quorum without cluster.id in its
	// config): a new directory's meta.properties has no cluster id until
	// SetClusterID records it.
	JoinCluster bool
	// OnLogsLoaded, if set, is told about the partitions whose load or
	// creation was deferred for lack of file descriptors, or that
	// CreateLogsLater created in the background, once they are loaded
	// (GetOrCreateLog returned ErrLogLoading for them until then). It runs
	// on the retrying goroutine.
	OnLogsLoaded func([]TopicPartition)
	// LoadLater: OpenManager loads no partition. Every partition found on
	// disk is pending (GetOrCreateLog answers ErrLogLoading for it) until
	// LoadPending loads the ones its caller wants first and hands the
	// rest to the background loader, which reports them through
	// OnLogsLoaded. The broker sets it so that its client listener waits
	// only for the partitions the node leads (which only the metadata
	// image, read after the directory is open, tells).
	LoadLater bool
}

// Manager owns one data directory (Kafka's log.dirs entry): its lock,
// meta.properties, the recovery-point and log-start-offset checkpoints and
// every partition log in it.
type Manager struct {
	fs     vfs.FS
	dir    string
	cfg    ManagerConfig
	lock   io.Closer
	health *dirHealth
	metaMu sync.Mutex
	meta   MetaProperties // guarded by metaMu once open (SetClusterID)

	// checkpointMu serialises checkpoint writers.
	checkpointMu sync.Mutex
	mu           sync.Mutex
	logs         map[TopicPartition]*Log
	closed       bool

	// holdMu guards the retention hold's hooks (SetRetentionHold).
	holdMu      sync.Mutex
	holds       func() map[TopicPartition]RetentionHold
	holdDropped func(TopicPartition, RetentionDrop)

	// cleaner is the log cleaner's state (hook for the log cleaner,
	// cleaner_manager.go).
	cleaner cleanerState

	// Scrubber totals since start (scrub.go), for metrics.
	scrubPasses, scrubBytes, scrubDamage atomic.Int64

	// hadCleanShutdown: the previous Close completed (cleanshutdown.go).
	// uncleanPending: it did not, and UncleanShutdownHandled was not
	// called yet, so Close must not leave the marker.
	hadCleanShutdown bool
	uncleanPending   atomic.Bool

	// deferred are the partitions whose load or creation ran out of file
	// descriptors, retried in the background (load.go); guarded by mu.
	// Invariant: no partition is in both logs and deferred.
	deferred   map[TopicPartition]loadJob
	loadReport LoadReport // guarded by mu
	// retryStop stops the deferred loads' retries and retryWG awaits
	// them; retryRunning (guarded by mu) says the retrying goroutine runs.
	// retryMu is held by a retry pass and by DeleteLog, so a deletion
	// never renames a directory under a load.
	retryStop         chan struct{}
	retryWG           sync.WaitGroup
	retryRunning      bool
	retryMu           sync.Mutex
	lastOutOfFilesLog atomic.Int64 // unix ns
	// holdLoads (guarded by mu): under LoadLater, the background loader
	// waits for LoadPending. openRemoved: the open removed a directory
	// (a deletion's leftovers), so LoadPending writes the checkpoints.
	holdLoads         bool
	openRemoved       bool
	openRps, openLsos map[TopicPartition]int64
}

// OpenManager locks dir, checks or writes meta.properties, and opens and
// recovers every partition log in it.
func OpenManager(fsys vfs.FS, dir string, cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Defaults.validate(); err != nil {
		return nil, err
	}
	if err := ensureDir(fsys, dir); err != nil {
		if cerr, ok := classifyDirError(dir, err); ok {
			return nil, cerr
		}
		return nil, fmt.Errorf("engine: data directory %s: %w", dir, err)
	}
	lock, err := fsys.Lock(dir + "/" + lockFile)
	if err != nil {
		if cerr, ok := classifyDirError(dir, err); ok {
			return nil, cerr
		}
		return nil, fmt.Errorf("engine: data directory %s: cannot take its lock: %w", dir, err)
	}
	m := &Manager{
		fs: fsys, dir: dir, cfg: cfg, lock: lock,
		health:    &dirHealth{onFail: cfg.OnDirFailure, onSync: cfg.OnSync, options: newSharedOptions(cfg.Defaults)},
		logs:      map[TopicPartition]*Log{},
		deferred:  map[TopicPartition]loadJob{},
		retryStop: make(chan struct{}),
	}
	m.health.space = m.newDiskSpace()
	m.health.afterTruncate = m.Checkpoint
	if cfg.OpenFilesMax > 0 {
		hc, err := NewHandleCache(cfg.OpenFilesMax, cfg.Logger)
		if err != nil {
			lock.Close()
			return nil, err
		}
		m.health.handles = hc
	}
	if err := m.open(); err != nil {
		for _, l := range m.logs {
			l.Close()
		}
		m.stopDeferredLoads()
		lock.Close()
		m.health.handles.Close()
		// A directory this user may read but not write passes the lock
		// when .lock already exists; say so, not just "permission denied".
		err, _ = classifyDirError(dir, err)
		return nil, err
	}
	m.mu.Lock()
	m.startDeferredLoadsLocked(loadRetryAfterOpen)
	m.mu.Unlock()
	return m, nil
}

func (m *Manager) open() error {
	meta, err := m.loadMeta()
	if err != nil {
		return err
	}
	m.meta = meta
	clean, marker, markerOK, err := m.takeCleanShutdownMarker()
	if err != nil {
		return err
	}
	m.hadCleanShutdown = clean
	m.uncleanPending.Store(!m.hadCleanShutdown)
	rps, err := ReadOffsetCheckpoint(m.fs, m.dir+"/"+RecoveryPointCheckpointFile)
	if err != nil {
		return err
	}
	lsos, err := ReadOffsetCheckpoint(m.fs, m.dir+"/"+LogStartOffsetCheckpointFile)
	if err != nil {
		return err
	}
	names, err := m.fs.List(m.dir)
	if err != nil {
		return err
	}
	// The clean-stop summary is read now, and removed before any
	// partition loads (summary.go): from here on the partitions' own
	// files are the truth.
	var summary map[TopicPartition]*partitionSummary
	if clean && slices.Contains(names, CleanStopSummaryFile) {
		summary = m.readCleanStopSummary(marker, markerOK)
	}
	if err := m.dropCleanStopSummary(names); err != nil {
		return err
	}
	if clean {
		// The marker's and the summary's removal are durable before any
		// load writes: a crash from here on reads as unclean.
		if err := m.fs.SyncDir(m.dir); err != nil {
			return err
		}
	}
	var jobs []loadJob
	removed := false
	for _, name := range names {
		path := m.dir + "/" + name
		if strings.HasSuffix(name, deleteDirSuffix) {
			if !m.isDir(path) {
				continue
			}
			if err := m.fs.RemoveAll(path); err != nil {
				return err
			}
			removed = true
			continue
		}
		tp, err := ParseTopicPartitionDir(name)
		if err != nil {
			continue
		}
		// A partition missing from the checkpoint (created after the last
		// one was written) is recovered from its start. Whether the name
		// is a directory is asked by the load, in parallel, and only when
		// the load fails (loadJob.unchecked).
		jobs = append(jobs, loadJob{tp: tp, path: path, unchecked: true,
			oo: OpenOptions{RecoveryPoint: rps[tp], LogStartOffset: lsos[tp], health: m.health, dirListed: true,
				afterCleanStop: clean, summary: summary[tp]}})
	}
	if m.cfg.LoadLater {
		// LoadPending loads them; until then each is pending, as a load
		// deferred for lack of descriptors is, with what the checkpoints
		// and the summary say of it.
		m.holdLoads = true
		m.openRemoved = removed
		m.openRps, m.openLsos = rps, lsos
		for _, j := range jobs {
			m.deferred[j.tp] = j
		}
		return nil
	}
	if err := m.loadPartitions(jobs); err != nil {
		return err
	}
	return m.checkpointAfterLoad(rps, lsos, removed)
}

// checkpointAfterLoad writes the checkpoints after the partitions'
// loads, unless a clean restart that removed nothing left them as the
// stop wrote them.
func (m *Manager) checkpointAfterLoad(rps, lsos map[TopicPartition]int64, removed bool) error {
	if m.hadCleanShutdown && !removed {
		// A clean restart that removed nothing and whose loads moved no
		// offset: the checkpoints the stop wrote (and synced) say what
		// new ones would, so they are not written again (two files of
		// every partition's line, and four fsyncs, at every start). The
		// clean-shutdown marker's removal was made durable before the
		// loads.
		if rpsNow, lsosNow := m.checkpointOffsets(); maps.Equal(rps, rpsNow) && maps.Equal(lsos, lsosNow) {
			return nil
		}
	}
	return m.SyncDirAndCheckpoint()
}

// logRecovery tells the operator what recovering one partition did, with
// its figures: damage at ERROR (the partition is offline until repaired),
// a torn tail cut at WARN, rebuilt indexes at INFO. A partition that
// needed nothing says nothing.
func (m *Manager) logRecovery(l *Log, st *RecoveryStats) {
	lg := m.cfg.Logger
	if lg == nil || !st.Changed() {
		return
	}
	for _, d := range st.Damage {
		lg.Error("partition offline: damaged data on disk; nothing was truncated or deleted",
			"partition", l.tp.String(), "file", d.File, "position", d.Position, "bytes", d.End-d.Position,
			"first_offset", d.FirstOffset, "last_offset", d.LastOffset, "reason", d.Reason,
			"inspect", "wren storage check --dir "+m.dir,
			"repair", fmt.Sprintf("wren storage repair --dir %s %s --skip|--truncate (with the broker stopped)", m.dir, l.tp))
	}
	args := []any{"partition", l.tp.String(), "segments_scanned", st.SegmentsScanned, "indexes_rebuilt", st.IndexesRebuilt,
		"batches_scanned", st.BatchesRecovered, "bytes_truncated", st.TruncatedBytes, "segments_deleted", st.SegmentsDeleted,
		"producer_snapshot_offset", st.ProducerSnapshotOffset, "producer_batches_replayed", st.ProducerBatchesReplayed,
		"log_end_offset", l.LogEndOffset(), "took", st.Duration.Round(time.Microsecond).String()}
	switch {
	case st.TruncatedBytes > 0:
		lg.Warn("recovery cut a torn tail (bytes never synced, so never acknowledged)", append(args, "at", st.FirstCorruptError.Error())...)
	case st.SegmentsDeleted > 0:
		lg.Warn("recovery removed segments left by an interrupted operation", args...)
	default:
		lg.Info("recovery rebuilt indexes", args...)
	}
}

// Damaged lists the damage known in every partition of the directory.
func (m *Manager) Damaged() []Damage {
	var out []Damage
	for _, l := range m.Logs() {
		out = append(out, l.Damage()...)
	}
	return out
}

// SyncDirAndCheckpoint makes removals durable and writes fresh checkpoints.
func (m *Manager) SyncDirAndCheckpoint() error {
	if err := m.fs.SyncDir(m.dir); err != nil {
		return err
	}
	return m.Checkpoint()
}

func (m *Manager) optionsFor(topic string) Options {
	if m.cfg.TopicOptions != nil {
		return m.cfg.TopicOptions(topic)
	}
	return m.cfg.Defaults
}

func (m *Manager) loadMeta() (MetaProperties, error) {
	path := m.dir + "/" + MetaPropertiesFile
	data, err := vfs.ReadFile(m.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		found, err := m.existingData()
		if err != nil {
			return MetaProperties{}, err
		}
		if len(found) > 0 {
			return MetaProperties{}, m.missingMetaError(path, found)
		}
		meta := MetaProperties{ClusterID: m.cfg.ClusterID, NodeID: m.cfg.NodeID, DirectoryID: newDirectoryID()}
		if meta.ClusterID == "" && !m.cfg.JoinCluster {
			meta.ClusterID = newDirectoryID()
		}
		return meta, vfs.WriteFileAtomic(m.fs, path, formatMeta(meta))
	}
	if err != nil {
		return MetaProperties{}, err
	}
	meta, err := parseMeta(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("engine: %s: %w", path, err)
	}
	if m.cfg.ClusterID != "" && meta.ClusterID != m.cfg.ClusterID {
		return MetaProperties{}, fmt.Errorf("%w: %s has cluster.id %s, this node is configured for %s", ErrClusterIDMismatch, path, meta.ClusterID, m.cfg.ClusterID)
	}
	if meta.NodeID != m.cfg.NodeID {
		return MetaProperties{}, nodeMismatchError(m.dir, path, meta, m.cfg)
	}
	return meta, nil
}

// nodeMismatchError names whose directory dir is: each node needs a data
// directory of its own, and one node's records are not another's.
func nodeMismatchError(dir, path string, meta MetaProperties, cfg ManagerConfig) error {
	cluster := "this cluster (" + meta.ClusterID + ")"
	switch {
	case meta.ClusterID == "":
		cluster = "a cluster whose id it had not learnt yet"
	case cfg.ClusterID == "":
		// The cluster id is learnt from the metadata log, which lives
		// in this directory: the node cannot tell yet whether it is
		// its own cluster's.
		cluster = "cluster " + meta.ClusterID
	}
	return fmt.Errorf("%w: data directory %s belongs to node %d of %s, not node %d (%s has node.id=%d); "+
		"give node %d a log.dirs of its own (a [node.%d.broker] table in a shared config file), or start this process as node %d",
		ErrNodeIDMismatch, dir, meta.NodeID, cluster, cfg.NodeID, path, meta.NodeID, cfg.NodeID, cfg.NodeID, meta.NodeID)
}

// newDirectoryID is a random Kafka Uuid in its base64 form.
func newDirectoryID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// formatMeta writes meta.properties as Kafka 4.x does (version 1, KRaft).
func formatMeta(m MetaProperties) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#\n#%s\n", time.Now().UTC().Format(time.UnixDate))
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	fmt.Fprintf(&b, "directory.id=%s\n", m.DirectoryID)
	fmt.Fprintf(&b, "node.id=%d\n", m.NodeID)
	b.WriteString("version=1\n")
	return b.Bytes()
}

func parseMeta(data []byte) (MetaProperties, error) {
	var m MetaProperties
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return m, fmt.Errorf("bad line %q", line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := props["version"]; v != "1" {
		return m, fmt.Errorf("unsupported meta.properties version %q", v)
	}
	m.ClusterID = props["cluster.id"]
	m.DirectoryID = props["directory.id"]
	var id int32
	if _, err := fmt.Sscan(props["node.id"], &id); err != nil {
		return m, fmt.Errorf("bad node.id %q", props["node.id"])
	}
	m.NodeID = id
	return m, nil
}

// Meta is the directory's meta.properties.
func (m *Manager) Meta() MetaProperties {
	m.metaMu.Lock()
	defer m.metaMu.Unlock()
	return m.meta
}

// Dir is the data directory.
func (m *Manager) Dir() string { return m.dir }

// Failed is the error that failed the directory, or nil.
func (m *Manager) Failed() error { return m.health.check() }

// Log returns an open partition log, or nil.
func (m *Manager) Log(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[tp]
}

// Logs returns every open log, sorted by topic and partition.
func (m *Manager) Logs() []*Log {
	m.mu.Lock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].tp.Less(out[j].tp) })
	return out
}

// GetOrCreateLog opens the partition's log, creating it if needed.
func (m *Manager) GetOrCreateLog(tp TopicPartition) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if l, ok := m.logs[tp]; ok {
		return l, nil
	}
	if _, ok := m.deferred[tp]; ok {
		// Its data is on disk: opening it afresh here would lose its
		// recovery point and log start offset.
		return nil, fmt.Errorf("%w: %s (loaded in the background)", ErrLogLoading, tp)
	}
	if err := m.health.check(); err != nil {
		return nil, err
	}
	if err := validTopicDirName(tp.Topic); err != nil {
		return nil, err
	}
	path := m.dir + "/" + tp.String()
	l, _, err := Open(m.fs, path, tp, m.optionsFor(tp.Topic), OpenOptions{health: m.health})
	if isOutOfFiles(err) {
		// Not the partition's fault: it is created by a background retry
		// once descriptors free up, and served from then on
		// (OnLogsLoaded). What the failed attempt left on disk is an
		// empty segment that loads as one.
		m.deferred[tp] = loadJob{tp: tp, path: path, oo: OpenOptions{health: m.health}}
		m.startDeferredLoadsLocked(loadRetryMin)
		m.noteOutOfFiles("creating a partition", tp, err)
		return nil, fmt.Errorf("%w: %s: %w", ErrLogLoading, tp, err)
	}
	if err != nil {
		return nil, err
	}
	l.checkpointOnTruncate = true
	m.logs[tp] = l
	return l, nil
}

// CreateLogsLater creates the logs of tps that the Manager does not hold
// yet in the background, up to loadWorkers at once, and reports them
// through ManagerConfig.OnLogsLoaded in chunks as they are created; until
// then GetOrCreateLog answers ErrLogLoading for them. A metadata image
// that adds thousands of partitions is applied on the metadata quorum's
// goroutine: creating each log there (a directory, three files and their
// syncs, some milliseconds each) held the quorum up for tens of seconds,
// long enough to lose the controller. It returns how many it queued.
//
// Without ManagerConfig.OnLogsLoaded nobody would hear of them: it queues
// nothing and returns ErrNoLoadReports, and the caller creates them itself.
func (m *Manager) CreateLogsLater(tps []TopicPartition) (int, error) {
	if m.cfg.OnLogsLoaded == nil {
		return 0, ErrNoLoadReports
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	if err := m.health.check(); err != nil {
		return 0, err
	}
	n := 0
	for _, tp := range tps {
		if _, ok := m.logs[tp]; ok {
			continue
		}
		if _, ok := m.deferred[tp]; ok {
			continue
		}
		if validTopicDirName(tp.Topic) != nil {
			continue // GetOrCreateLog says why
		}
		m.deferred[tp] = loadJob{tp: tp, path: m.dir + "/" + tp.String(), oo: OpenOptions{health: m.health}}
		n++
	}
	if n > 0 {
		m.startDeferredLoadsLocked(0)
	}
	return n, nil
}

// ErrNoLoadReports: CreateLogsLater on a Manager without OnLogsLoaded.
var ErrNoLoadReports = errors.New("engine: no OnLogsLoaded to report logs created in the background")

// validTopicDirName refuses names that could escape the data directory.
// The wire layer applies Kafka's full topic name rules first.
func validTopicDirName(topic string) error {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\x00") || len(topic) > 249 {
		return fmt.Errorf("%w: topic name %q", ErrInvalidTopicPartition, topic)
	}
	return nil
}

// DeleteLog closes and deletes a partition's log: the directory is renamed
// to "<topic>-<partition>.<id>-delete" durably, then removed.
func (m *Manager) DeleteLog(tp TopicPartition) error {
	m.retryMu.Lock()
	defer m.retryMu.Unlock()
	m.mu.Lock()
	l, ok := m.logs[tp]
	delete(m.logs, tp)
	job, wasDeferred := m.deferred[tp]
	m.undeferLocked(tp)
	m.mu.Unlock()
	var dir string
	switch {
	case ok:
		l.Close()
		dir = l.dir
	case wasDeferred:
		dir = job.path
	default:
		return nil
	}
	doomed := fmt.Sprintf("%s/%s.%s%s", m.dir, tp, strings.ReplaceAll(newDirectoryID(), "-", "_"), deleteDirSuffix)
	if err := m.fs.Rename(dir, doomed); err != nil {
		return err
	}
	if err := m.fs.SyncDir(m.dir); err != nil {
		return err
	}
	return m.fs.RemoveAll(doomed)
}

// Checkpoint writes recovery-point-offset-checkpoint and
// log-start-offset-checkpoint for every log.
func (m *Manager) Checkpoint() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	if err := m.health.check(); err != nil {
		return err
	}
	rps, lsos := m.checkpointOffsets()
	if err := WriteOffsetCheckpoint(m.fs, m.dir+"/"+RecoveryPointCheckpointFile, rps); err != nil {
		return m.checkpointFailed(err)
	}
	if err := WriteOffsetCheckpoint(m.fs, m.dir+"/"+LogStartOffsetCheckpointFile, lsos); err != nil {
		return m.checkpointFailed(err)
	}
	return nil
}

// checkpointOffsets is what the recovery-point and log-start-offset
// checkpoints say now. Neither value takes a log's lock: a truncation
// checkpoints while it holds its log's lock (Log.checkpointOnTruncate).
func (m *Manager) checkpointOffsets() (rps, lsos map[TopicPartition]int64) {
	rps = map[TopicPartition]int64{}
	lsos = map[TopicPartition]int64{}
	for _, l := range m.Logs() {
		rps[l.tp] = l.RecoveryPoint()
		lsos[l.tp] = l.logStartOffsetView.Load()
	}
	// A partition whose load is deferred keeps what the checkpoints said.
	m.mu.Lock()
	for tp, j := range m.deferred {
		if _, loaded := rps[tp]; !loaded {
			rps[tp], lsos[tp] = j.oo.RecoveryPoint, j.oo.LogStartOffset
		}
	}
	m.mu.Unlock()
	return rps, lsos
}

// DeleteRecords advances a log's start offset (DeleteRecords) and makes it
// durable in log-start-offset-checkpoint before returning.
func (m *Manager) DeleteRecords(tp TopicPartition, offset int64) (int64, error) {
	l := m.Log(tp)
	if l == nil {
		return 0, fmt.Errorf("%w: %s", ErrInvalidTopicPartition, tp)
	}
	if err := l.AdvanceLogStartOffset(offset); err != nil {
		return 0, err
	}
	if err := m.Checkpoint(); err != nil {
		return 0, err
	}
	return l.LogStartOffset(), nil
}

// SetRetentionHold makes RunRetention keep records for the uplinks: holds
// is asked once per pass for the partitions held (RetentionHold), and
// dropped is told what a pass deleted of what a hold kept, past its
// budget. The engine knows nothing of links: the broker computes the
// holds from their cursors. Nil holds turns the hold off.
func (m *Manager) SetRetentionHold(holds func() map[TopicPartition]RetentionHold, dropped func(TopicPartition, RetentionDrop)) {
	m.holdMu.Lock()
	m.holds, m.holdDropped = holds, dropped
	m.holdMu.Unlock()
}

// RunRetention applies retention to every log; highWatermark says how far
// each may be deleted, and the holds SetRetentionHold set keep the
// records they name. It returns the number of segments deleted.
func (m *Manager) RunRetention(highWatermark func(*Log) int64) (int, error) {
	m.holdMu.Lock()
	holdsFn, dropped := m.holds, m.holdDropped
	m.holdMu.Unlock()
	var holds map[TopicPartition]RetentionHold
	if holdsFn != nil {
		holds = holdsFn()
	}
	total := 0
	var errs []error
	for _, l := range m.Logs() {
		before := l.Size()
		var n int
		var err error
		if h, ok := holds[l.tp]; ok {
			var d RetentionDrop
			n, d, err = l.DeleteOldSegmentsHeld(highWatermark(l), h)
			if d.To > d.From && dropped != nil {
				dropped(l.tp, d)
			}
		} else {
			n, err = l.DeleteOldSegments(highWatermark(l))
		}
		total += n
		if n > 0 && m.cfg.Logger != nil {
			m.cfg.Logger.Info("retention deleted segments", "partition", l.tp.String(), "segments", n,
				"bytes", before-l.Size(), "log_start_offset", l.LogStartOffset())
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	if total > 0 {
		errs = append(errs, m.Checkpoint())
	}
	return total, errors.Join(errs...)
}

// FlushDirty applies flush.ms to logs under FlushInterval, and lets the
// files of logs idle for dirtyPinIdle close (ReleaseIdleHandles).
func (m *Manager) FlushDirty() error {
	var errs []error
	for _, l := range m.Logs() {
		if err := l.flushIfDue(l.nowMs()); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, m.ReleaseIdleHandles(dirtyPinIdle))
	return errors.Join(errs...)
}

// dirtyPinIdle is how long a log keeps its active segment's files pinned
// after its last write, once the write is durable: long enough that a
// partition written every few seconds never reopens its files, short
// enough that partitions written once in a while do not hold descriptors.
const dirtyPinIdle = 5 * time.Second

// ReleaseIdleHandles unpins the active segment files of every log that
// wrote nothing for idle and has everything durable (their index files
// fsynced first if they took entries), so the handle cache may close them.
func (m *Manager) ReleaseIdleHandles(idle time.Duration) error {
	var errs []error
	for _, l := range m.Logs() {
		if err := l.releaseIdle(l.nowMs(), idle.Milliseconds()); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HandleStats returns the open-file budget's figures (zero without one).
func (m *Manager) HandleStats() HandleStats { return m.health.handles.Stats() }

// Close closes every log, writes the checkpoints and releases the lock.
// When all of that succeeded it leaves the clean-shutdown marker, which
// the next open reads (HadCleanShutdown).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.stopDeferredLoads()
	var errs []error
	for _, l := range m.Logs() {
		errs = append(errs, l.Close())
	}
	if m.health.check() == nil {
		errs = append(errs, m.Checkpoint())
	}
	if err := errors.Join(errs...); err == nil && m.health.check() == nil {
		err := m.writeCleanShutdownMarker()
		errs = append(errs, err)
		if err == nil && !m.uncleanPending.Load() {
			// After the marker, bound to it (doc.go, "Clean restarts").
			m.writeCleanStopSummary(m.Logs())
		}
	}
	errs = append(errs, m.lock.Close())
	m.health.handles.Close()
	return errors.Join(errs...)
}
