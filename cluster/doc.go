// Package cluster holds the cluster's metadata: the metadata log (on wal),
// the metadata image built from it, and the controller that changes it.
//
// Every change (a topic created or removed, a partition's assignment,
// leader or ISR, a dynamic config) is a Record. The controller validates a
// change against the current Image, appends its records to the metadata
// log as one durable entry, applies them to a new Image and publishes it.
// Brokers act only on published images. Images are immutable, so any
// goroutine may read the one it holds.
//
// Invariant: the published Image is exactly the replay of the metadata log
// up to Image.Offset; replaying the log at start rebuilds it.
//
// The controller's decisions are a pure core (core.go and core_*.go, one
// file and one script under testdata/rules per rule): a rule reads the
// image, the rule config and the request and returns a Result, the
// records to commit and the answer; it never commits. The Controller's
// methods are its driver: on the event loop they read the image, call the
// rule, commit Result.Entries and answer.
//
// Batches: the topics of one CreateTopics, and the ISR changes (AlterISR)
// queued while the loop is busy, are each checked against the image the
// ones before them leave and committed together, in entries of about 1 MiB
// (a topic's records never split), so thousands of partitions cost a few
// quorum round trips. An entry's records apply copying each map and topic
// once (applyRecords), and a node snapshots its log every 4,096 entries or
// 8 MiB of them, whichever comes first.
//
// Brokers register in the metadata log (BrokerRegistrationRecord; the
// controller registers its own node at start) and are fenced and unfenced
// by BrokerFenceRecord. Only registered, unfenced brokers get new replicas
// or lead.
//
// Placement (placement.go, pure): a replication factor above the number
// of unfenced brokers is INVALID_REPLICATION_FACTOR; never two replicas of
// a partition on one broker; replicas and preferred leaders (the first
// replica) balanced across brokers counting every existing partition, so
// adding topics or partitions keeps the balance; each partition spread
// over min(RF, racks) racks when broker.rack is set; ties broken by id, so
// the result depends only on the input. Manual assignments are checked
// with INVALID_REPLICA_ASSIGNMENT.
//
// Partition leaders (leader.go and leadership.go, pure; the controller
// commits what they return). Invariants of every partition: the leader is
// -1 or in the ISR; ISR and ELR are disjoint sets of replicas; the ELR is
// empty while |ISR| >= min.insync.replicas; a last known leader is kept
// only while there is no leader; the leader epoch bumps exactly when the
// leader changes (to -1 included), the partition epoch on every change.
// The rules, in Kafka's PartitionChangeBuilder order:
//   - ELR (KIP-966): when the ISR shrinks below min.insync.replicas the
//     high watermark stops, so the replicas that leave it keep every
//     committed record and become eligible leader replicas, until they
//     come back from an unclean shutdown (they may have lost acknowledged
//     records) or the ISR is back at min.insync.replicas.
//   - Election: the current leader while it is live and in the ISR; else
//     the first live replica in assignment order in the ISR; with the ISR
//     empty, the first live one in the ELR (it becomes the ISR).
//   - Unclean, only where unclean.leader.election.enable is set (topic,
//     then cluster-wide dynamic config, then the broker default) or an
//     operator asks (ElectLeaders UNCLEAN): the last known leader if the
//     ISR and ELR are empty, else the first live replica. The ISR becomes
//     the new leader alone, and a DataLossRecord enters the data-loss
//     ledger (Image.DataLossLedger) with the offsets that may be lost.
//     Kafka elects the last known leader without the setting; wren does
//     not, since that replica came back from an unclean shutdown. A
//     broker's own dynamic layer is not read (AlterConfigs refuses the key
//     there): the controller decides for the whole cluster. Turning the
//     setting on at run time elects leaderless partitions in the same
//     metadata entry (LeaderlessElections).
//   - Preferred: the first replica, when it is live and in the ISR.
//   - Rebalance (auto.leader.rebalance.enable): a broker whose share of
//     its preferred partitions led elsewhere is above
//     leader.imbalance.per.broker.percentage gets a preferred election of
//     each of them where it is live and in the ISR; the acting controller
//     checks every leader.imbalance.check.interval.seconds.
//   - Reassignment (reassign.go): Replicas is the target followed by the
//     replicas being removed, with AddingReplicas and RemovingReplicas
//     recorded; the ISR change that brings the last new replica in
//     completes it in the same entry (a removed leader hands over to a
//     target replica in the ISR), and a partition being reassigned is
//     left alone by rebalancing.
//   - Fencing and controlled shutdown take the broker out of every ISR
//     (electing elsewhere where it led); AlterISR is the leader's own ISR
//     change, checked against the leader and partition epochs.
//   - Log dir (LogDirRecords): a broker whose heartbeats report its log
//     dir taking no writes (below its free-space floor, or failed) is
//     recorded so (BrokerImage.LogDir) and leaves every ISR, its
//     leaderships going to live ISR members that can write; where none
//     can, it keeps the partition (reads go on, writes are refused) until
//     one joins the ISR (LogDirMovable). While it lasts it joins no ISR
//     (INELIGIBLE_REPLICA), no preferred election picks it, and any
//     election prefers a replica that can write; back writable, it
//     rejoins ISRs by AlterISR and the rebalance returns its leaderships.
//
// There is one commit path (Controller.commit, quorum_apply.go): the
// records of a change are one entry of the metadata log (cluster/metalog,
// driven by cluster/quorum): only the acting controller proposes, a change
// returns once a majority holds it, it is applied here and the subscribers
// have the image, every node's image is the replay of the committed
// entries only, and a change asked of another node is NOT_CONTROLLER. One
// voter is a quorum of one (no transport; it elects itself at its first
// tick, and a change commits once durable on this node); an older
// version's one-voter log converts on first start (convert.go). The
// quorum driver applies committed entries to the image in memory; the
// publisher (publish.go) hands images to the subscribers on its own
// goroutine, so a slow disk under them never holds up the election's
// ticks. The driver's parts: opening the quorum (quorum_open.go),
// applying and committing (quorum_apply.go), the app-message codec
// (quorum_codec.go) and dispatcher (quorum_app.go), broker liveness and
// registration (quorum_liveness.go), catch-up (quorum_catchup.go). The acting
// controller records the cluster id of a new cluster, registers the
// brokers that heartbeat to it (their advertised listeners), fences a
// broker silent for broker.session.timeout.ms and unfences it when heard
// again; producer-id blocks are asked of it over the CONTROLLER listener.
// A broker's ProducerIDManager (producer_id_manager.go) asks for its first
// block at start and for the next once 90% of the current one is handed
// out, retrying while no controller answers, so InitProducerId is served
// from the block the broker holds and never waits on the controller until
// both blocks are used up (then COORDINATOR_LOAD_IN_PROGRESS). A block is
// committed before the controller returns it; a restarted broker starts
// without one, so it never reuses ids of a block it held before.
// WaitPropagated (propagation.go) holds the answer to a client's change
// until every other live, unfenced node shows it, for at most
// PropagationWaitMax: read your writes across nodes.
//
// Those liveness decisions are a pure core (liveness.go, Liveness.Decide:
// image, what was heard from each broker and when, the monotonic time in;
// actions out; testdata/liveness): the driver in quorum_liveness.go only
// gathers the inputs and commits the actions. A broker's session counts
// from the last time this node heard anything from it, quorum traffic
// included and also from before it became the acting controller, so a
// dead old controller is fenced a session after it went silent; but a new
// controller never fences within 1.5 heartbeat intervals of taking over
// (a live broker needs that long to find it), and a broker heard within
// the session is never fenced for silence. A broker is unfenced only when
// it heartbeats, has caught up, and is not shutting down.
//
// Incarnations (KIP-966): every process start heartbeats a new random
// incarnation id in its registration, whether its data directory's last
// shutdown was clean (engine's clean-shutdown marker), and its broker
// epoch (BrokerImage.Epoch, the offset of its registration) once its image
// shows it. A new incarnation is registered at once, inside its session or
// not; if its predecessor did not shut down cleanly and did not sync
// before acknowledging (its registration's AcksDurable is false: flush
// policy interval), the registration applies UncleanShutdownChanges in the
// same entry (out of every ISR and ELR, a new leader where it led) and
// fences it while it catches up. Under flush policy ack a crash loses
// nothing acknowledged, and the rule would only take partitions offline. A
// heartbeat of a replaced incarnation (StaleHeartbeat, or one the acting
// controller saw replaced) is refused and keeps no session alive. A node
// serves, and its replicas follow the image, only once the image holds
// its own incarnation's registration (Controller.Registered). The
// registration record's incarnation_id is optional: records without it
// replay as before, and a broker registered without one is taken at its
// word once.
//
// Initial catch-up: a restarted node's image is the replay of its own
// log, which misses what was committed while it was down. CaughtUp is
// closed once it applied everything the acting controller had committed
// when it first heard its commit index (metalog.Node.CaughtUp); until
// then its heartbeats say it is catching up (the controller keeps it
// fenced), and the broker neither serves clients nor applies the image to
// its replicas.
//
// Node facts (node_facts.go): what only a node knows about itself (its log
// dir failed or below its free-space floor, its replicas holding damaged
// data) is in no metadata record. Every node sends its own, an opaque body
// the broker fills, to every other voter once per broker heartbeat
// interval, and keeps the latest it heard from each, so that any node can
// answer for the whole cluster's health from what it holds, even while
// the controller does not answer. Bodies are bounded (64 KiB).
// See docs/ARCHITECTURE.md, "The cluster protocol".
package cluster
