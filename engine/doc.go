// Package engine stores partition logs in Apache Kafka's on-disk format, so
// Kafka's tools read wren's files and wren reads Kafka's.
//
// A partition is a directory "<topic>-<partition>" of segments. A segment
// is three files named by its base offset (20 digits, zero padded):
//
//	00000000000000000000.log        RecordBatch v2 bytes exactly as the producer sent them,
//	                                with baseOffset and partitionLeaderEpoch filled in
//	00000000000000000000.index      sparse offset index: relative offset int32, position int32
//	00000000000000000000.timeindex  time index: timestamp int64, relative offset int32
//	00000000000000000000.txnindex   aborted transactions (only once the segment has an ABORT
//	                                marker): version int16 0, producer id, first offset, last
//	                                offset, last stable offset, int64 each (txnindex.go)
//
// plus leader-epoch-checkpoint. The data directory (Manager) holds
// meta.properties, recovery-point-offset-checkpoint and
// log-start-offset-checkpoint, and a .lock; after a completed Close also
// .kafka_cleanshutdown, which the next open reads and removes, durably,
// before it returns (Manager.HadCleanShutdown: the cluster treats a broker
// back without it as one that may have lost unsynced records). After an
// open without it, Close leaves none until UncleanShutdownHandled (the
// cluster registered the restart as unclean), so a failed start does not
// launder a crash. A completed Close also leaves wren-clean-stop-summary
// beside the marker (see Clean restarts, below); Kafka ignores it.
//
// Index files reserve no disk: they start empty and grow by one entry per
// append, up to segment.index.bytes, which is a cap that rolls the segment,
// not a reservation. Kafka sizes a new index file to segment.index.bytes
// with a sparse setLength and trims it at roll; wren's files always have
// the trimmed shape, an index file's size is its entries, so Kafka's tools
// read them as they read a rolled Kafka segment. An idle partition costs a
// few directory entries, not 20 MiB, and an index append can meet a full
// disk mid-segment, which fails that append like a log write would.
//
// # Appends and durability
//
// Log.Append validates each batch (engine/batch: magic, CRC-32C, lengths,
// record walk, decompression under a cap), rewrites baseOffset and
// partitionLeaderEpoch in place (they sit outside the CRC, so nothing is
// re-encoded), and pwrites the bytes at the active segment's tail. Under
// FlushAck (the default) it returns only after an fdatasync covering the
// write; concurrent appenders share one (wal.GroupCommitter). Under
// FlushInterval it returns after the write and syncs by flush.messages and
// flush.ms, Kafka's page-cache behaviour.
//
// A failed fdatasync, and any write error but a full disk or a shortage of
// descriptors (ErrTooManyOpenFiles, below), fails the whole
// log directory: nothing in it is acknowledged again and the error is never
// retried, because after a failed fdatasync the kernel may have dropped the
// dirty pages.
//
// # Disk pressure
//
// Each directory keeps a free-space floor (FreeSpaceFloor), sampled with
// statfs through the vfs seam: periodically by the owner, by appends as they
// use up the headroom, by refused appends every 100 ms, and right after a
// write meets ENOSPC. Below the floor CheckWritable returns ErrLogDirFull
// (the wire layer refuses Produce, CreateTopics and CreatePartitions with a
// retriable error) while retention, the cleaner and internal appends go on;
// above the floor plus an eighth, writes resume. A write that meets ENOSPC or
// EDQUOT anyway (log, index, producer snapshot, new segment at roll) is undone
// to the size before it and fails that append alone with ErrNoSpace; a
// cleaner pass that meets it removes its .cleaned files and aborts; a
// checkpoint that meets it keeps the old file. An fdatasync that fails for
// lack of space still fails the directory, but once space is back every log
// is cut to its durable offset (nothing above it was acknowledged under
// FlushAck), the active segment's indexes are rebuilt, everything is synced,
// and the directory is healthy again without a restart (diskspace.go).
//
// Invariant: LogStartOffset <= DurableOffset <= LogEndOffset, and every
// offset below DurableOffset reads back after any crash.
//
// # Reads
//
// Log.Read finds the segment by binary search over base offsets, the
// position by binary search in the offset index, then scans batch headers
// forward at most one index interval. It returns a file range
// (wire.FileSlice) that wire.SendFile moves to a socket with sendfile(2),
// whatever writes the response. Readers hold a reference on the
// segment and pin its files, so retention can delete it under them.
//
// # Open files
//
// A segment's files are not held open for the life of the process
// (10,000 partitions would take 30,000 descriptors). Each is a handle
// (handles.go) that opens on first use and again after it was closed.
// Operations pin a handle for their duration (an atomic reference count);
// the HandleCache, ristretto v2 with a cost of one per descriptor, holds a
// reference on idle handles within the budget log.open.files.max
// (ManagerConfig.OpenFilesMax; DefaultOpenFilesMax derives it from
// RLIMIT_NOFILE). An eviction drops only the cache's reference, so a
// descriptor closes at its last release, never under a read or a sendfile
// (a ReadResult pins its file until Release). The active segment is pinned
// by its log from its first write until an fdatasync covers everything
// written (the group commit unpins it), or, when index entries were added,
// until the log has been idle for a while and its indexes are fsynced
// (Manager.FlushDirty), so no descriptor with unsynced writes is ever
// closed; an append's hot path is then one atomic pin and unpin per file
// operation, no cache lookup. A deleted
// segment's handles are dropped: never opened again, closed at the last
// release. An idle partition holds no descriptor once the cache evicts its
// files.
//
// The budget is kept by a count of open descriptors: an open that would
// pass it first closes idle cached handles; if everything is pinned, or
// the kernel says EMFILE or ENFILE, the operation fails with
// ErrTooManyOpenFiles (retriable, naming the file, logged at most every
// 10 s). It never fails the log directory: operations that change several
// files pin them all before changing anything. Two change the directory
// past a point of no return: a truncation to an empty log creates the new
// segment's files (under .tmp names, which recovery deletes) before the
// old ones go, and a cleaner swap is committed by its .log.swap rename.
// If a directory sync or rename after that point meets a shortage, the
// change stands in memory (an empty log at the new start; the compacted
// segment, whose files stay pinned), the operation fails retriably, and
// the rest stays pending (dirwork.go): the log takes no append or other
// change until it is done, every such operation tries it again first, and
// a restart finishes it from the files by the crash rules (completeSwaps,
// the orphan rule). A truncation that removed later segments and cannot
// sync the directory likewise cuts the segment left only once the sync is
// done, so a crash never brings them back beside a cut segment.
//
// # Recovery
//
// Segments below the recovery point were synced with their indexes at roll
// and are trusted after an index sanity check. The segment holding the
// recovery point, every later one, and any listed in damaged-segments are
// scanned batch by batch with CRC checks, and their indexes rebuilt.
// Only a torn tail is cut: bad bytes at the end of the last segment, at or
// above the recovery point, with no valid batch after them. Anything else
// is media damage (damage.go): left on disk as it is, listed in
// damaged-segments, and the partition refuses appends and the damaged
// offsets' reads (ErrPartitionDamaged) until `wren storage repair`
// (repair.go: CheckPartition reads every batch without writing; a
// RepairPlan skips the damaged ranges, leaving an offset gap, or truncates
// at the first, on an operator's word and under the directory's lock). The
// scrubber (scrub.go) finds damage in trusted segments the same way, at a
// capped read rate. docs/ARCHITECTURE.md explains the rules and their
// known limit.
//
// Crash safety of metadata: new segment files count only after an fsync of
// the directory; segment removal is made durable before any later change
// that depends on it; checkpoints are written to a temporary file, synced
// and renamed.
//
// A log that a clean stop left at its recovery point reopens without a
// write, sync, rename or truncation: an empty active segment at the
// recovery point passes the clean-load check, a log that needed no scan
// skips the fdatasync (everything below the recovery point was synced
// before the checkpoint naming it was written), and a leader epoch that
// starts exactly at the log end is kept rather than dropped and written
// back when the replica leads again. On an SD card each avoided sync is a
// disk cache flush, times every partition, at every start.
//
// The Manager loads its partitions with a bounded pool of workers
// (min(8, 2*GOMAXPROCS): a load mostly waits on the disk), taking results
// in directory order, so the logs and the first error are those a serial
// load gives. After a clean stop no partition is scanned (and the leader
// epochs and producer snapshots come from the clean-stop summary); after a crash
// only those written since the recovery-point checkpoint was last written
// (periodically, log.flush.offset.checkpoint.interval.ms) are. An empty
// .log whose index files are missing, what a segment creation cut short
// leaves, loads as the empty segment it is. A load that runs out of file
// descriptors (EMFILE, ENFILE) defers that partition instead of failing
// the directory, and so does a creation that runs out of them:
// GetOrCreateLog answers ErrLogLoading for it, the
// checkpoints keep its entries, and a background retry with backoff loads
// it and reports it (ManagerConfig.OnLogsLoaded). Any other load error
// fails the open, as it always did. Idle segments still hold their three
// files open from load on; opening them on first use instead belongs with
// the open-file cache (segment.go, index.go).
//
// # Clean restarts
//
// A clean start of 10,000 idle partitions should do almost no work per
// partition. Each partition still has its directory listed and its files
// looked up (stat); what a clean stop leaves spares it the rest:
//
// The clean-stop summary (summary.go), wren-clean-stop-summary in the data
// directory, holds every partition's leader-epoch entries and producer
// snapshot: what its leader-epoch-checkpoint and newest %020d.snapshot
// hold. A Close that met no error writes it last: every log flushed and
// closed, the offset checkpoints written, the clean-shutdown marker
// written, then the summary (temporary file, fsync, rename, directory
// fsync). Magic, version and a CRC-32C over the body open it; a summary
// that does not parse, or of another version, is ignored with a log line.
//
// A start trusts it only as proof of the very stop that left the files
// (vfs.FileIdentity: inode and nanosecond ctime; any write, truncation,
// rename or replacement moves a file's ctime, nothing sets it back):
//
//   - the summary names the clean-shutdown marker's identity: any other
//     stop (an older wren, Kafka, this build's next stop) writes a new
//     marker, another inode; a copied or restored directory has other
//     inodes throughout. On a mismatch the whole summary is ignored.
//   - it names the recovery-point and log-start-offset checkpoints'
//     size and identity (the stop writes both before the marker): a
//     mismatch of either ignores the whole summary.
//   - each partition's part names its directory's identity and its last
//     segment's base offset, size and identity, with its recovery point
//     and log start offset. Every change to the leader-epoch checkpoint,
//     a snapshot or a segment list is a file written under a temporary
//     name and renamed, or removed, which moves the directory's ctime; an
//     append or truncation moves the last segment's. So an offline tool
//     (wren storage repair) or a hand that changed a partition's files
//     is seen; that partition, and only it, loads from its own files.
//   - a file system whose ctimes are whole seconds could not tell two
//     versions apart: a stop there writes no summary, and a start does
//     not use one.
//
// The summary never replaces a partition's files, it copies them: a stop
// writes the snapshot and the leader-epoch checkpoint whenever they may
// differ from what they hold (the epoch cache knows what its file holds:
// what it was loaded with or last wrote), before it stamps the log for
// the summary. So the partitions' own files are the truth at every
// moment, and the summary is only ever a second, checked copy of them.
// A start reads the summary, then removes it with the marker, and syncs
// the directory, before any partition loads or anything is written: a
// crash from then on finds neither and recovers from the partitions' own
// files, as after any crash; a crash before that sync finds both as the
// stop left them, with every file still as they name it, and uses them
// again. A start that finds the summary but no marker (a crash after a
// start) ignores and removes it.
//
// A clean stop syncs and writes nothing of a partition a clean start left
// untouched: the load stamped its directory and last segment (after a
// clean stop every segment, index and snapshot was durable, and the load
// wrote nothing); at Close the same stamps, no index entry unsynced and
// the same producer snapshot as the one loaded mean its files are as
// durable as they were, and the summary's part is taken from its state.
// It costs two lookups, no open and no sync. Any change since (an append,
// a roll, a truncation, a new epoch, retention) moves a stamp, and the
// partition is flushed and its snapshot written as before. An empty log
// (its end at offset 0, no producer) gets no snapshot at all, as in
// Kafka: a load without one replays nothing and finds the same empty
// state. The first stop after creating 10,000 partitions otherwise
// creates 10,000 files (two fsyncs and a rename each), all charged to
// the memory cgroup of a small host.
//
// # Loading later
//
// With ManagerConfig.LoadLater, OpenManager does everything above but
// load the partitions: each found on disk is pending, as a load deferred
// for lack of descriptors is (GetOrCreateLog answers ErrLogLoading, the
// checkpoints keep its entries, a Close leaves its files and checkpoint
// entries as they were), until Manager.LoadPending loads the ones its
// caller wants first, before it returns, and hands the rest to the
// background loader (chunks reported through OnLogsLoaded). The broker
// loads the partitions its node leads first and opens its client
// listener then; the followers load after. A load of the first ones that
// fails for a reason other than descriptors fails LoadPending as it
// fails an open; one of the rest is logged and retried, and only that
// partition stays unserved.
//
// # Transactions in the log
//
// A transactional batch opens a transaction for its producer at its first
// offset; a control batch holding Kafka's EndTransactionMarker ends it
// (engine/batch/control.go). The producer state (engine/producer) tracks
// the open transactions: a leader checks a marker written through
// Log.AppendTxnMarker (an older producer epoch or coordinator epoch is
// refused), a follower's append and every replay apply markers as the log
// holds them, reading the control record. Log.LastStableOffset(hw) is
// min(first offset of the oldest open transaction, first offset of a
// completed one whose marker hw has not passed, hw); Log.ReadCommitted
// reads below it and lists the aborted transactions of the range read.
//
// Each ABORT marker appends one entry to its segment's .txnindex, written
// and fsynced (with the directory, when it creates the file) in the
// marker's append, before the log end offset that a sync, and so the
// recovery point, can cover moves past the marker: every entry of a marker
// below the recovery point is durable. Every producer-state load (recovery,
// truncation, a directory back from a full disk) rebuilds the entries of
// the offsets it replays from the snapshot it started at, and drops those
// past the log end (rebuildTxnIndexes); a truncation cuts the entries past
// its offset after the log's cut is durable; the file goes with its
// segment, and one without its .log is an orphan that a load removes. The
// snapshot's current-transaction offsets restore the open transactions.
// Retention and the cleaner stop at the first unstable offset. A transaction whose batches
// retention deleted before its marker is known to a replay without a
// snapshot only from the marker on; its entry may then start at the
// marker, which serves no offset below the log.
//
// The cleaner applies Kafka's transaction rules (cleaner_txn.go): the
// records of aborted transactions go and are never mapped (an aborted
// record never shadows a committed one); a COMMIT or ABORT marker stays
// while a batch of its transaction does, then gets a delete horizon
// (KIP-534, as a tombstone) and goes in a pass after delete.retention.ms;
// a producer's last marker, and a run's last batch, stay. It never merges
// a segment with a .txnindex into an earlier run (cleanSeg.aborted), so
// each index stays beside its markers, and the rewritten index keeps only
// the entries of ABORT markers that stayed for their batches (written
// after the swap: an entry left over by a crash names records that are
// gone).
//
// All file access goes through internal/vfs, so tests crash the engine at
// any write and lose exactly what was not synced.
package engine
