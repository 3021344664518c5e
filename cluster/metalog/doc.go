// Package metalog replicates the cluster's metadata log among the voters
// of controller.quorum.voters: the acting controller appends entries, the
// other voters fetch them, and an entry is committed once a majority holds
// it and an entry of the controller's own epoch is committed with it.
// Every node applies only the committed prefix. See docs/ARCHITECTURE.md,
// "The cluster protocol".
//
// It is a pure state machine in the style of etcd raft: no goroutines,
// clocks, sockets or files. A Node holds an election.Node (the controller
// election) and feeds it the log's position, so the driver has one
// machine to drive: Tick, Step (election and log messages alike),
// Propose, Compact, and one Ready.
//
// # The Ready contract
//
// After any input the driver takes n.Ready() and, in this order:
//
//  1. writes Ready.Snapshot durably, then drops the log's entries up to
//     its index (every entry if TruncateAll);
//  2. drops the log's entries after *Ready.Truncate;
//  3. appends Ready.Entries;
//  4. fdatasyncs the log, then writes Ready.HardState (epoch, votedFor,
//     commit index) and fdatasyncs it;
//  5. only then sends Ready.Messages;
//  6. if RestoreSnapshot, resets its applied state (the metadata image)
//     from Snapshot.Data; then applies CommittedEntries in order;
//  7. reacts to SoftState (became controller, follower, Acting...);
//  8. calls n.Advance(rd).
//
// Steps 1-4 before step 5 make every acknowledgement true: a follower's
// fetch, which tells the controller how far its log goes, leaves only once
// that log is durable, and a vote only once it is on disk. A crash
// anywhere in steps 1-4 loses a tail that nobody was told about: the node
// restarts from what reached the disk (a prefix of the steps), which is
// harmless. The controller counts its own log end towards a majority
// before its fdatasync, because nothing that depends on the count (a
// commit index in a message, an applied entry) leaves before step 4 ends.
//
// # Replication: pull, as KRaft
//
// A follower that knows the controller of its epoch sends it MsgFetch with
// its log end (last index, last epoch); that fetch is also its
// acknowledgement. The controller answers with the entries after that end
// if its own log holds the same entry (one controller per epoch, and a
// controller only appends, so the logs are then equal up to it), holds the
// fetch up to FetchWaitTicks if there is nothing new (a long poll that is
// answered at once when an entry is appended or the commit index moves),
// answers "diverging" with the last entry at or below the follower's end
// whose epoch is at most the follower's last epoch (KIP-101/279), or sends
// its snapshot when the follower's end is below its log start. A follower
// told it diverges truncates after the lower of that index and its own
// last entry of an epoch at most the one named (as Kafka's follower takes
// the lower of the two end offsets), and fetches again; each round its log
// ends in an earlier epoch or matches, so the exchange ends. A follower
// resends after FetchTimeoutTicks without an answer.
//
// Pull rather than raft's push, for a cluster of three edge nodes on a
// flaky switch: the follower owns its retries, so a lost, duplicated or
// reordered message costs one fetch timeout and the controller keeps no
// per-follower send window to repair; a restarted follower, or one that
// lost its tail, simply fetches from where its disk ends; the snapshot is
// just another fetch answer; and it is the shape of Kafka's own metadata
// quorum and of partition replication (followers fetch, divergence is
// found by epoch and end offset), so one set of rules serves both planes.
// The price, about half a round trip more per commit than push, does not
// matter at metadata rates.
//
// # Commit, and a new controller
//
// The controller's commit index is the highest index that a majority of
// the voters (itself included) hold, provided that entry is of its own
// epoch (raft's rule; testdata/figure8_commit_own_epoch.txt shows the
// entry of an earlier epoch that a majority held and that was still
// overwritten). Followers learn it from fetch answers, capped at the part
// of their log known to equal the controller's.
//
// A node that wins an epoch appends an EntryLeaderChange entry of that
// epoch at once; its commit commits every entry it inherited. It takes
// proposals (Propose; CanPropose) only while Acting (the election's lease)
// and once that entry is committed and applied, so the image it validates
// changes against holds every committed record.
//
// It needs no catch-up round before that: its log already holds every
// committed entry. An entry committed in epoch e is on a majority that
// acknowledged it while in epoch e; the new controller of an epoch e' > e
// won the votes of a majority; the two majorities share a voter, which
// held the entry when it voted (a voter in epoch e' takes no entries from
// earlier epochs, and committed entries are never truncated, by
// induction), and the voter granted only a candidate whose log (last
// epoch, last index) is at least its own. A log whose last epoch is
// higher, or equal with an index at least as high, holds that entry too
// (the last entry of the higher epoch came from a controller that, by the
// same argument, held it). So the winner is itself the most advanced
// member of a majority, which is what DESIGN asks a new controller to
// reach first.
//
// # Initial catch-up
//
// A node's applied state starts as the replay of its own disk, which may
// lack entries committed while it was down. CaughtUp turns true (and
// stays so) once it applied up to the commit index the controller of its
// epoch sent in a fetch answer, provided that index holds an entry of the
// controller's epoch (before its leader-change entry commits, a new
// controller sends the commit index it inherited, which may lack entries
// its predecessor committed) (a follower); or once its own leader-change
// entry is applied while Acting (a controller). The driver publishes it, so the
// broker serves nothing from a stale state (testdata/catch_up.txt).
//
// # Snapshots
//
// The driver calls Compact(index, image) with an index it has applied;
// the node keeps the snapshot, drops the entries up to it, and hands the
// snapshot out for persisting (step 1). A follower whose log ends below
// the controller's log start gets the snapshot in the fetch answer; it
// keeps its entries after it if it holds the snapshot's last entry, and
// otherwise becomes the snapshot alone. A snapshot holds only committed
// entries, so the commit index moves to its index.
//
// # Follower progress
//
// The controller notes, for each follower that fetched in its epoch, the
// tick of its last fetch and the last tick at which it was caught up:
// its fetch reached the controller's log end, or reached the log end the
// controller had at the follower's previous fetch (then it was caught up
// at that previous fetch; Kafka's rule for lastCaughtUpTimestamp).
// Status reports them with the node's clock (Status.Now), for
// DescribeQuorum's LastFetchTimestamp and LastCaughtUpTimestamp. They
// live here, in ticks, rather than in the driver on its clock, because
// "caught up" compares a fetch with the log end at the moment the fetch
// is taken, which only this machine knows exactly (the driver sees a
// message before it is stepped, and does not know whether the fetch
// matched the log); and ticks keep the rule replayable in scripts
// (testdata/follower_progress.txt). The driver turns ticks into times
// (cluster/quorum). A new epoch starts with no progress: it is a new
// controller's knowledge, as Kafka's LeaderState is.
//
// # What each follower shows
//
// A follower's fetch carries, in Commit, its applied index as of its last
// Advance: its applied state (the metadata image) shows every entry up to
// it. The controller records it with the follower's progress
// (Status.Followers[id].Applied), and holds a fetch only when it equals
// the controller's commit index: a follower that learnt a commit index
// fetches again before it applies (step 5 comes before step 6), so that
// fetch is answered at once, and the next one, sent after the apply,
// reports it. The cluster package waits on these reports before it
// answers a metadata change, so that every live node shows the change
// (read your writes across nodes; testdata/follower_applied.txt).
//
// # Invariants
//
// Built with -tags invariants (internal/invariants), every input checks
// the node's own state when it ends (checkInvariants: its indexes in
// order, a contiguous log, a controller's log ending in its epoch). The
// log changes only at its ends, so a check walks only the entries
// appended since the last one and the first against the snapshot
// (memLog.checked). The ones across nodes internal/sim checks.
//
//   - Log matching: two logs holding an entry with the same index and
//     epoch are equal up to it.
//   - Per node, snapshot index <= applied <= commit <= last index, and the
//     commit index never decreases (on disk either).
//   - A committed entry is never truncated (truncateAfter panics below the
//     commit index) and every node applies the same sequence of committed
//     entries: each node's applied sequence is a prefix of one sequence.
//   - No entry is applied before it is committed.
//   - At most one controller per epoch, and every entry of epoch e was
//     appended by the controller of e (the election's invariants).
//
// The scripts in testdata/ (run by TestDataDriven, rewritten with
// -rewrite) walk through divergence after a controller change (KIP-101),
// commit through the own epoch (raft's figure 8), a snapshot for a lagging
// follower, and a restart that lost its unsynced tail; internal/sim runs
// the machines under random faults and checks the invariants after every
// step.
package metalog
