// Package broker assembles one running wren node from the other packages:
// the data directory (engine), the metadata log and controller (cluster),
// this node's replicas (replication), the group coordinator
// (groups/coordinator), the transaction coordinator (txn/coordinator,
// txn.go), the Kafka listener (kafka) and the operations HTTP
// server (ops). `wren serve` is ServeFile; tests and embedders call Start
// and Close.
//
// # Components
//
// A node is an ordered list of components, each a name, a start and a
// close (components.go; the list is componentList in broker.go). Start
// starts them in order; when component k fails, it closes k-1 down to 0
// and returns an error that names k ("broker: kafka listener: listen tcp
// ..."). Close closes them in the reverse of the start order. So each
// component is up before the components that use it, and outlives them.
// Each start is logged at DEBUG with its duration, each close too: the
// start-up time of a node, part by part. A component that runs a goroutine
// (a task) cancels it and waits for it to return in its close, so nothing
// it uses closes under it.
//
// The order, and why:
//
//  1. ops: the metrics and the http.listen server. First, so that /livez
//     answers and /readyz says "starting" during a long recovery of the log
//     dir; last to close, so /readyz says "shutting down" to the end.
//  2. log dir: the engine locks the data directory and reads what it
//     needs before any partition loads (meta.properties, the marker, the
//     checkpoints, the clean-stop summary), but loads no partition yet
//     (engine.ManagerConfig.LoadLater). Nothing else opens a file in it
//     before the lock is held, and it closes only after everything that
//     writes to it has stopped, so its clean close (checkpoints, trimmed
//     indexes) is the last word. Which partitions this node leads is known
//     only from the metadata image, whose log lives in this directory
//     under its lock; so the partitions load once the image is there
//     (loadLeadersFirst): with one voter in the replicas' start, on a
//     quorum once this node caught up with the metadata log
//     (serveWhenCaughtUp), before the replicas follow the image and the
//     client listener accepts. Then the partitions the image says this
//     node leads, those without a leader it holds a replica of, and every
//     internal topic's load in parallel, and the start waits for them;
//     the rest (the partitions it follows) load in the background after,
//     each hosted as it loads (replication.Manager.LogsLoaded), as are
//     partitions whose load ran out of file descriptors. A replica not
//     loaded yet is not hosted, so it neither serves (a client gets a
//     retriable error) nor fetches; its leader waits for it as for any
//     slow follower until the ISR check drops it, and nothing is
//     acknowledged on its account.
//  3. controller listener (quorum only): binds the CONTROLLER listener and
//     its transport, which must exist before the controller, whose driver
//     talks to its peers at once. Peers' messages that arrive before the
//     controller and the replicas exist are dropped, and the peers retry
//     as after any lost message. The
//     controller closes the transport with its own driver.
//  4. controller: the metadata log, alone or as a quorum member (election
//     and the metadata log's replication run inside it). A quorum member
//     records the cluster id it learns in meta.properties.
//  5. replicas: subscribe to the metadata image (so their partitions open
//     and followers start fetching) and run retention, flushes,
//     checkpoints and ISR checks. They need the log dir and the image;
//     their close stops the follower fetchers and checkpoints the high
//     watermarks before the controller and the log dir close.
//  6. offsets topic: one voter creates __consumer_offsets now; a quorum
//     member retries in the background until it is the acting controller.
//     The group coordinator hashes groups over its partition count.
//  7. group coordinator: reads and writes __consumer_offsets through the
//     replicas; its close lets every queued write finish while the
//     replicas still run.
//  8. transaction coordinator (txn.go): reads and writes
//     __transaction_state through the replicas, created at the first
//     transactional client; its markers reach this node's server (set once
//     the listener starts) or other nodes' client listeners. Its close
//     stops the markers in flight (the next coordinator resumes them from
//     the log) and lets queued writes finish while the replicas run.
//  9. kafka listener: binds the client listener (after everything its
//     handlers call), registers it with the controller on a quorum, and
//     serves. Its close is the first real step of Close: it closes every
//     client connection and waits for their goroutines, so no handler
//     runs when the parts below it close.
//  10. uplinks (uplink.go): each [uplink.NAME] link, and each run-time
//     link the metadata images bring (uplink.NAME.KEY), reads the local
//     topics through the server's internal listener (in-process, as
//     User:wren-uplink), so it starts after the server and closes before
//     it, its requests in flight answered first. Always started: a run-time link may come.
//  11. disk space watcher, then scrubber (when log.scrubber.enable): only
//     read the log dir; started after the listener so their work does not
//     delay the start.
//  12. ready: /readyz passes from here on; its close, the first of Close,
//     makes /readyz fail before anything stops.
//
// Work that slots in later (an election or a metadata replicator of its
// own, replica fetchers as their own part) is a component placed after
// what it uses and before what uses it.
//
// # Shutdown
//
// On SIGTERM, ServeFile tells systemd STOPPING=1 and stops the notifier,
// then runs a controlled shutdown (ControlledShutdown: the acting
// controller moves this node's partition leaderships to other in-sync
// replicas, bounded by controlledShutdownTimeout) while every component
// still runs, and only then calls Close. So leadership moves off the node
// before its listeners close, and clients find the new leaders with a
// metadata refresh. A node that reaches no majority of the voters (the
// others stopped first) has nobody to hand over to: it says so in one WARN
// and closes at once instead of waiting out the bound. An expected stop
// logs nothing at ERROR. Close alone (tests, Run) does no controlled
// shutdown. A node told that another process holds its id (Fatal) closes
// without one and exits with that error.
// The systemd notifier is not a component: it watches a started broker
// from outside (READY=1 once /readyz passes, WATCHDOG=1 while the client
// listener accepts).
//
// See docs/ARCHITECTURE.md for the map of the packages.
package broker
