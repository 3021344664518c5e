// Package vfs is wren's file-system seam. Every file access in wal and
// engine goes through the FS interface, so the same code runs on the real
// disk in production and, in tests, on a file system that can lose power or
// fail on command.
//
// Three implementations, and a wrapper for measurements:
//
//   - Default / NewOS: the operating system. SyncData is fdatasync(2),
//     Preallocate is fallocate(2) with FALLOC_FL_KEEP_SIZE, SyncDir fsyncs
//     the directory, Lock is flock(2) LOCK_EX|LOCK_NB, and files implement
//     Fder so the engine can sendfile(2) from them.
//   - NewMem: an in-memory FS that simulates a crash (below).
//   - NewFaultFS: wraps any FS and returns chosen errors (EIO, ENOSPC with a
//     short write, ...) from chosen operations on chosen paths. Unlike
//     Pebble's errorfs it does not skip SyncData.
//   - NewSlowFS: wraps any FS and makes every sync (SyncData, Sync,
//     SyncDir) wait a delay first, as a disk with slow flushes does; it
//     keeps the inner FS's descriptors and free-space reports. A wren built
//     with the faultfs tag runs on it for scripts/failover.sh.
//
// # Crash model (MemFS)
//
// MemFS is deliberately strict: it keeps only what POSIX promises, so code
// that passes on it does not lean on the kindness of one file system.
//
//   - File data and size are durable only after SyncData or Sync on the file
//     (any handle of the inode). Writes and truncates since the last sync
//     are lost in a crash.
//   - A directory entry (Create, OpenReadWrite or Lock of a new file,
//     MkdirAll of a new directory, Rename, Remove, RemoveAll) is durable
//     only after SyncDir of the directory that holds it. A file created and
//     synced, in a directory never synced, vanishes in a crash; a rename not
//     followed by SyncDir is undone; a removed file comes back. MkdirAll
//     "a/b" needs SyncDir("a") for b and SyncDir(".") for a.
//   - A rename between two directories is durable in each directory
//     separately: syncing only one can leave the file under both names or
//     under neither. A directory keeps a single parent after a crash.
//   - CrashOptions can keep more than the durable state, as real disks do:
//     a random prefix of each file's unsynced writes (KeepUnsynced) and a
//     torn, partly written, next write (TearLastWrite). Directory entries
//     are never kept beyond their last SyncDir.
//
// # Free space
//
// StatFS reports the space of the file system holding a path, for the
// implementations that have the optional StatFSer ability: the OS FS
// (statfs(2)), a MemFS given a size with SetCapacity (writes past it land
// what fits and fail with ENOSPC, so a test can fill a disk, then lower or
// raise the capacity to simulate another program taking or giving back
// space), and a FaultFS over either (OpStatFS faults apply).
//
// A crash (Crash, or SetCrashAfter at a chosen mutating operation) returns a
// new MemFS holding what a machine finds after power loss; the old MemFS
// and every handle on it fail all later operations with ErrCrashed, so a
// workload that keeps writing notices. Building the post-crash state costs
// time proportional to the data, and a sync costs O(1), so a test can crash
// at every operation of a workload.
//
// Errors look like the kernel's where callers branch on them: a missing
// file satisfies errors.Is(err, fs.ErrNotExist), and the errno values are
// real syscall.Errno (ENOENT, ENOTEMPTY, EISDIR, ENOSPC, EIO, ...).
package vfs
