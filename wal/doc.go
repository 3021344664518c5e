// Package wal is wren's durable-file layer: a group committer that shares
// one fdatasync among concurrent writers (GroupCommitter, also used by the
// partition logs in engine; a writer registers its position under the lock
// that orders its writes and truncations, then waits), and Log, an append-only log of checksummed
// records for wren's internal logs (the cluster metadata log, producer-id
// blocks). All file access goes through internal/vfs, so tests can crash
// the disk and inject write, read and fdatasync errors.
//
// # Records and indexes
//
// A record is an opaque payload of at most MaxRecordBytes. Records are
// addressed by index: the first record of a new log is 1, each append
// takes the next, and 0 means "no record" (LastIndex of a new log), as in
// Raft. FirstIndex() == LastIndex()+1 means the log is empty.
//
// # Files
//
// A log is a directory of segment files named by the index of their first
// record, %020d.wal, plus a LOCK file. A segment is a 24-byte header (magic,
// version, flags, first index, CRC) followed by records back to back, each
// framed as length (uint32 BE), CRC-32C (Castagnoli) of the length bytes
// and the payload, then the payload; see format.go. The active (last)
// segment rolls when the next record would take it past SegmentBytes.
// In memory the log keeps, per segment, only each record's 4-byte file
// offset.
//
// # Durability
//
// Append pwrites at the tail, then waits on the group committer, so it
// returns only once an fdatasync that started after its write has
// completed. AppendNoSync skips the wait; Sync waits for everything written
// before it. A write or fdatasync error is sticky: the log fails, nothing
// further is acknowledged, and only reopening (recovery) resumes it. The
// exception is a full disk (ENOSPC, EDQUOT) on the write of an append that
// lies in one segment: the file is cut back and that append alone fails.
// An Append that returns an error may or may not be present after
// recovery, like a request that timed out.
//
// Invariants that recovery relies on:
//   - A segment's header, and the segment's directory entry, are durable
//     before any record is written to it.
//   - A segment is synced in full before the next one is created, so only
//     the newest file can hold a torn write.
//   - Truncations change files in an order that leaves a contiguous log at
//     every step, syncing the directory after each removal.
//
// # Recovery
//
// Open scans every segment and checks every CRC. In the last file the first
// incomplete or failing record is where a torn write begins; the file is
// cut there and synced. A failing record in any other file, a damaged
// header outside the newest file, or files whose indexes do not chain is
// corruption of synced data: Open returns ErrCorrupt instead of dropping
// records that may have been acknowledged. A newest file whose header is
// torn was never written to and is removed. Records are never returned
// unless their CRC checks, on recovery and on every read.
//
// The gap: damage to synced bytes in the middle of the last file cannot be
// told from a torn write, so recovery cuts there, and records after it are
// lost. Open reports what it cut in Recovery().
//
// # Truncation
//
// TruncatePrefix deletes whole segments below an index (after a snapshot);
// beyond the end it restarts the log at that index. TruncateSuffix cuts
// the log back to an index (a Raft follower whose log diverged); appenders
// waiting on records it removed get ErrTruncated.
package wal
