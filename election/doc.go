// Package election elects the cluster's controller among the voters of
// controller.quorum.voters: a Bully order (the highest live id with an
// up-to-date metadata log should win) made safe by epochs, votes from a
// majority, and a lease.
//
// It is a pure state machine in the style of etcd raft: no goroutines,
// clocks, sockets or files. A driver feeds it Tick (one per tick of the
// monotonic clock), Step (a message from a peer) and SetLogPosition (where
// the local metadata log ends), and drains Ready.
//
// # The Ready contract
//
// After any input the driver takes n.Ready() and, in this order:
//
//  1. writes Ready.HardState (epoch, votedFor), if set, and fdatasyncs it;
//  2. then sends Ready.Messages;
//  3. then reacts to Ready.SoftState (became controller, follower of N,
//     candidate; Acting gained or lost);
//  4. calls n.Advance(rd).
//
// Step 1 before step 2 is what makes a vote binding: a vote that left the
// node is on disk, so a restarted node cannot vote again in that epoch. A
// crash before step 1 loses the vote and the messages together, which is
// harmless. Tick must be called once per elapsed tick of the monotonic
// clock, catching up after a stall (SIGSTOP, a long pause) before anything
// else: the lease is only as good as that count. The wall clock plays no
// part (F19).
//
// # The protocol
//
// Followers hear the controller's heartbeats. A node that has heard no
// controller for a random election timeout (ElectionTicks plus up to
// ElectionJitterTicks) probes every voter: "would you vote for me in
// epoch+1?". A probe changes nothing at the receiver; the answer carries
// the receiver's log position and whether it is quiet (hears a live
// controller, voted a moment ago, or just started). Then, in the probe
// round:
//
//   - a live, not quiet voter that outranks the prober makes it stand
//     back, once per epoch, so a voter that cannot win never stalls the
//     cluster. The Bully order ranks by log first: a voter outranks the
//     prober when its log is further ahead, or as far ahead and its id
//     higher;
//   - otherwise, with grants from a majority (itself included), and every
//     higher id heard from or ProbeTicks over, it runs: it bumps its
//     epoch, votes for itself, persists that, and asks for votes. If a
//     voter that outranks it probed within the last HeartbeatTicks, that
//     one is up and likely running for the same epoch, so the round waits
//     for its answer up to the round's end instead of ProbeTicks;
//   - otherwise it waits for its next timeout (RetryTicks plus a jitter,
//     when set: most often a voter was still quiet by a tick). An isolated
//     or deaf node therefore never bumps anyone's epoch (F08, F09).
//
// A candidate with votes from a majority of the voters is the controller of
// its epoch and sends heartbeats every HeartbeatTicks.
//
// # Split votes
//
// Two candidates in one epoch can split the votes when five voters split
// two and two (with three, one of them always wins). A split costs an
// election timeout: a voter stays quiet for ElectionTicks after its vote,
// except for the candidate it voted for, so no one gathers a majority for
// the next epoch before then. Standing back in the Bully order is what
// keeps two probers from both running, and two gaps in it let them: a
// prober ran after ProbeTicks without waiting for a higher id that was
// probing too (its answer a round trip away, its probe already here).
// ProbeTicks below a round trip made this one common: it took the wait
// for a dead highest id out of the median failover, and put split votes
// into the p99 (F03-5 in the simulator: p99 42 to 52 ticks). The other:
// a lower id whose log was ahead of the highest's (it held an entry of
// the dead controller the others lacked) refused the highest, while
// neither stood back for the other, each holding a majority of grants.
// Closing both (the probe as evidence, the log-first order) took the
// simulator's F03-5 failover p99 from 58 to 35 ticks over its 1,053
// seeds in WREN_SIM_SEEDS=20000 (max 84 to 55) and F08-5's from 57 to
// 39, at about 2 ticks on F09's
// (a deaf prober is waited for to the round's end). What is left is a
// higher id whose probe arrives after a lower one already ran: a bounded
// wait cannot cover a prober that starts later.
//
// # Safety rules, and why each exists
//
//   - One vote per epoch, persisted before it is sent: with a majority
//     needed to win, two controllers in one epoch would need a node that
//     voted twice.
//   - A voter refuses a candidate whose log (last epoch, last offset) is
//     behind its own: a majority holds every committed metadata record, so
//     the winner does too.
//   - No preemption: a node that heard the controller within ElectionTicks
//     refuses to vote, and does not even adopt the candidate's epoch
//     (which would make it reject the live controller's heartbeats). A
//     returning higher id does not depose a healthy controller (F08, F11).
//     A node that just voted stays quiet for the others for ElectionTicks
//     too, and a candidate refuses probes, so a third node cannot depose a
//     controller elected a moment ago, before its first heartbeat arrives.
//   - A node that starts is quiet for ElectionTicks + 2*ElectionJitterTicks.
//     Safety: it may have acknowledged a heartbeat just before it crashed,
//     and must not vote sooner than it would have without the crash.
//     Stability: its peers, timing out on its previous incarnation, find
//     it quiet and elect among themselves (F11).
//   - The lease: the controller acts (Acting) only while a majority, itself
//     included, acknowledged a heartbeat it sent less than LeaseTicks ago.
//     It counts from the send, so a slow ack never stretches it. It steps
//     down as soon as the lease lapses (a new controller gets one lease
//     period to collect its first acks).
//   - Every message carries an epoch. A receiver adopts (and persists) a
//     higher one, except from probes and from votes it refuses as quiet;
//     it rejects a lower one and answers with its own, so a stale
//     controller learns it has been replaced and steps down. This is the
//     fence that holds even when the lease does not.
//
// # Invariants
//
// Built with -tags invariants (internal/invariants), Tick and Step check
// the node's own state when they end (checkInvariants: the hard state not
// behind the one last handed out, a role that agrees with its vote). The
// ones across nodes internal/sim checks.
//
//   - At most one controller per epoch (votes, one per epoch, majority).
//   - On disk, the epoch never decreases, and within an epoch votedFor goes
//     only from None to a node.
//   - At most one node Acting at any moment, provided ticks run at the same
//     rate on every node and a stalled node catches up its ticks before it
//     acts: a voter that acknowledged a heartbeat sent at tick s refuses
//     votes until s+ElectionTicks at the earliest, and the lease ends at
//     s+LeaseTicks < s+ElectionTicks. With rates that differ by a factor
//     r, this needs LeaseTicks*r < ElectionTicks; the config's defaults
//     (lease 1.5 s, fetch timeout 2 s) tolerate r up to 1.33. A driver that
//     does not catch up after a stall breaks it (testdata/f06_lease.txt
//     shows how); the epoch fence then still rejects the stale controller's
//     messages.
//
// Settings map to ticks as: HeartbeatTicks = controller.heartbeat.interval.ms,
// LeaseTicks = controller.lease.ms, ElectionTicks =
// controller.quorum.fetch.timeout.ms, ElectionJitterTicks =
// controller.quorum.election.backoff.max.ms, each divided by the tick;
// ProbeTicks (how long a probe round waits for the higher ids' answers)
// is the broker's 150 ms, at most the heartbeat interval; RetryTicks is
// the heartbeat interval.
//
// The scripts in testdata/ (run by TestDataDriven, rewritten with
// -rewrite) walk through each rule (probe_split.txt and
// probe_log_rank.txt the two above) and the fault scenarios F06, F08,
// F09, F10, F11 and F19; internal/sim runs the machines under random faults.
package election
