package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/internal/membudget"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/peer"
	"github.com/wren-broker/wren/replication"
	txncoord "github.com/wren-broker/wren/txn/coordinator"
)

// metadataDirName held a one-voter metadata log inside the first log dir
// before a one-voter controller became a quorum of one: the controller
// converts it into quorumDirName on first start. Neither has a
// "-<partition>" suffix, so the engine never takes them for partitions.
const metadataDirName = "__cluster_metadata"

// Broker is one running wren node: its data directory, controller,
// partitions and Kafka listener.
type Broker struct {
	cfg        *config.Config
	logger     *slog.Logger
	logs       *engine.Manager
	controller *cluster.Controller
	replicas   *replication.Manager
	groups     *coordinator.Driver
	// txn is the transaction coordinator, txnPeers its way to the other
	// nodes (txn.go).
	txn      *txncoord.Driver
	txnPeers *txnPeers
	server   *kafka.Server
	// producerIDs hands out idempotent producers' ids from the blocks
	// this node holds.
	producerIDs *cluster.ProducerIDManager
	listener    net.Listener
	// listeners are every bound client listener by name, listener the
	// first of them.
	listeners map[string]net.Listener
	// internal is the server's in-process listener the links read this
	// node through, as kafka.InternalPrincipal (uplink.go).
	internal *kafka.InternalListener
	// uplinks are the running links (uplink.go): the file's [uplink.NAME]
	// and the run-time ones (uplink.NAME.KEY); uplinkRT is the state of
	// the run-time ones.
	uplinks  uplinkList
	uplinkRT *uplinkRuntime
	// uplinkPlanned are the configs of the links about to run, stored
	// before they start, so that a link's first loop check
	// (uplinkConfigs) already sees the links starting beside it.
	uplinkPlanned atomic.Pointer[[]config.Uplink]
	// uplinkRefusing are the refuse-writes links past their budget, read
	// by every produce (uplink_hold.go); uplinkHoldTask looks at the
	// links' backlogs.
	uplinkRefusing uplinkRefusingLinks
	uplinkHoldTask *task
	// uplinkDownAfter is how long a link may be down before cluster
	// health calls it down (Options.UplinkDownAfter).
	uplinkDownAfter time.Duration
	// tlsStop ends the SSL listeners' certificate reloaders.
	tlsStop context.CancelFunc
	tlsDone sync.WaitGroup
	// certReloaders are the SSL listeners' certificates, by listener
	// name, for the run-time changes of their stores (applyDynamicSSL).
	certReloaders map[string]*certReloader
	ops           *opsState
	// logDirCtrl is the controller once open, for the log dir's events
	// (logDirChanged), which start before it.
	logDirCtrl atomic.Pointer[cluster.Controller]
	// acls is the ACL authorizer of the controller's images (acl.go).
	acls *aclAuthorizer

	// components are the parts above in start order; Close closes them
	// in reverse.
	components components
	closeOnce  sync.Once
	closeErr   error
	// fatal receives the first error that means this node must stop
	// (Fatal); buffered, later ones are dropped.
	fatal chan error
}

// Options are what tests and the CLI may change beyond the config file.
type Options struct {
	// FS is the file system; nil means the OS.
	FS     vfs.FS
	Logger *slog.Logger
	// MaxFollowerWait bounds how long this node, as a partition's leader,
	// holds a follower's Fetch whatever replica.fetch.wait.max.ms the
	// follower asks; zero means 5 s. Tests raise it to show that nothing
	// waits out a long poll.
	MaxFollowerWait time.Duration
	// TLSReloadInterval is how often SSL listeners' key and trust store
	// files are checked for changes, the CONTROLLER listener's included;
	// zero means 5 s.
	TLSReloadInterval time.Duration
	// Authorizer, if set, returns the authorizer every Kafka request is
	// judged by (kafka.Node.Authorizer); nil allows everything.
	Authorizer func() kafka.Authorizer
	// UplinkRefresh is how often uplinks read the local topics and
	// leaders again; zero means 5 s. Tests shorten it.
	UplinkRefresh time.Duration
	// UplinkDownAfter is how long a link's far side may stay silent
	// before /v1/cluster/health calls the link down (the cluster
	// degraded); zero means one minute. Tests shorten it.
	UplinkDownAfter time.Duration
}

// Start opens (and recovers) the data directory, the metadata log and
// every partition, then binds the client listener and serves. It returns
// once the listener accepts connections. It starts the broker's
// components in order (componentList); when one fails, it closes the
// ones before it in reverse and the error names the one that failed.
func Start(cfg *config.Config, o Options) (*Broker, error) {
	if o.FS == nil {
		o.FS = vfs.NewOS()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(cfg.LogDirs) != 1 {
		return nil, fmt.Errorf("broker: %s", config.LogDirsMessage(len(cfg.LogDirs)))
	}
	if errs := cfg.ServeErrors(); len(errs) > 0 {
		return nil, fmt.Errorf("broker: %w", errs)
	}
	clients, err := clientListeners(cfg)
	if err != nil {
		return nil, err
	}
	client := clients[0]
	logConfigWarnings(cfg, o.Logger)
	admin, err := bootstrapAdminCredentials(cfg)
	if err != nil {
		return nil, err
	}
	if _, set := os.LookupEnv(config.BootstrapAdminPasswordEnv); set && cfg.BootstrapAdminUser == "" {
		o.Logger.Warn(config.BootstrapAdminPasswordEnv + " is set but bootstrap.admin.user is not: no bootstrap admin is recorded")
	}
	b := &Broker{cfg: cfg, logger: o.Logger, fatal: make(chan error, 1)}
	w := &wiring{o: o, dir: cfg.LogDirs[0], client: client, clients: clients, bootstrapAdmin: admin}
	b.components = components{list: b.componentList(w), logger: o.Logger}
	if err := b.components.start(); err != nil {
		return nil, err
	}
	o.Logger.Info("wren started", "node.id", cfg.NodeID, "cluster.id", b.controller.ClusterID(), "listener", b.listener.Addr().String(), "log.dir", w.dir, "log.flush.policy", cfg.LogFlushPolicy)
	return b, nil
}

// wiring is what the components hand on to later ones while they start,
// beyond the Broker's own fields.
type wiring struct {
	o      Options
	dir    string
	client listenerAddr
	// clients are every client listener, client the first.
	clients []listenerAddr
	// decompression is one budget for every partition of the node
	// (max.decompressed.inflight.bytes).
	decompression *membudget.Budget
	// quorum and peers are nil with one voter: peers is the CONTROLLER
	// listener's connection layer, whose clients are the quorum's
	// transport and replication.
	quorum *cluster.QuorumConfig
	peers  *peer.Layer
	// The CONTROLLER listener's transport answers peers before the
	// controller and the replicas exist; it finds them here once they do.
	ctrlRef atomic.Pointer[cluster.Controller]
	replRef atomic.Pointer[replication.Manager]
	// offsetsPartitions is the partition count of __consumer_offsets
	// the group coordinator hashes groups over.
	offsetsPartitions int32
	// bootstrapAdmin are the bootstrap admin's credentials, if given.
	bootstrapAdmin []cluster.ScramUpsertion
}

// componentList is the broker's components in start order; doc.go says
// why the order is this one.
func (b *Broker) componentList(w *wiring) []component {
	cfg := b.cfg
	list := []component{
		{name: "ops", start: func() (err error) { b.ops, err = startOps(cfg, w.o); return err }, close: func() error { return b.ops.close() }},
		{name: "log dir", start: func() error { return b.openLogs(w) }, close: func() error { return b.logs.Close() }},
	}
	if len(cfg.Voters) > 1 {
		// The CONTROLLER listener, its peer layer and the quorum's
		// transport come before the controller: its driver starts talking
		// to its peers at once. The controller closes the transport, and
		// with it the layer; closing it again does nothing.
		var stopReloads func()
		list = append(list, component{name: "controller listener",
			start: func() error {
				q, peers, reloads, err := quorumConfig(cfg, w.dir, b.logger, &w.ctrlRef, &w.replRef, b.logs, b.stopFor)
				if err != nil {
					return err
				}
				w.quorum, w.peers = q, peers
				stopReloads = runReloader(reloads, w.o.TLSReloadInterval)
				return nil
			},
			close: func() error {
				stopReloads()
				return w.peers.Close()
			}})
	}
	list = append(list,
		component{name: "controller", start: func() error { return b.openController(w) }, close: func() error { return b.controller.Close() }},
		b.replicasComponent(w),
		b.offsetsTopicComponent(w),
		b.groupsComponent(w),
		b.txnComponent(w),
		b.kafkaListenerComponent(w),
	)
	// Always: a run-time link (`wren uplink add`) may come.
	list = append(list, b.uplinksComponent(w))
	list = append(list, background("disk space watcher", b.watchDiskSpace))
	if cfg.LogScrubberEnable {
		list = append(list, background("scrubber", b.runScrubber))
	}
	if cfg.BootstrapAdminUser != "" {
		list = append(list, background("bootstrap admin", func(ctx context.Context) { b.runBootstrapAdmin(ctx, w.bootstrapAdmin) }))
	}
	// Last: /readyz passes only once every part is up, and fails first
	// when Close begins.
	return append(list, component{name: "ready",
		start: func() error { b.ops.serving(b); return nil },
		close: func() error { b.ops.phase.Store(phaseStopping); return nil }})
}

// openLogs opens and recovers the log dir. The engine locks the data
// directory first: nothing else opens a file in it before the lock is held.
func (b *Broker) openLogs(w *wiring) (err error) {
	cfg, o, dir := b.cfg, w.o, w.dir
	defaults := logOptions(cfg, cfg.TopicDefaults)
	w.decompression = membudget.New(cfg.MaxDecompressedInflightBytes)
	defaults.DecompressionBudget = w.decompression
	b.logs, err = engine.OpenManager(o.FS, dir, engine.ManagerConfig{
		ClusterID: cfg.ClusterID,
		NodeID:    cfg.NodeID,
		Defaults:  defaults,
		Logger:    o.Logger,
		TopicOptions: func(string) engine.Options {
			return defaults
		},
		OnDirFailure: func(err error) {
			o.Logger.Error("log directory failed; nothing in it is acknowledged any more", "dir", dir, "err", err)
			b.logDirChanged()
		},
		OnSync:         b.ops.metrics.ObserveSync,
		FreeSpaceFloor: freeSpaceFloor(cfg),
		OnDiskSpace:    b.onDiskSpace,
		MetadataLogDir: quorumDirName,
		OpenFilesMax:   openFilesMax(cfg),
		ReadClusterID: func(path string) (string, error) {
			return cluster.ReadClusterID(o.FS, path)
		},
		// A voter of a quorum learns the cluster id from the first
		// controller (recordClusterID).
		JoinCluster: len(cfg.Voters) > 1 && cfg.ClusterID == "",
		// Partitions whose load ran out of file descriptors are served
		// once a retry loaded them; until the replicas exist, their first
		// image finds them.
		OnLogsLoaded: func(tps []engine.TopicPartition) {
			if r := w.replRef.Load(); r != nil {
				r.LogsLoaded(tps)
			}
		},
		// The partitions load once the metadata image says which this
		// node leads (loadLeadersFirst).
		LoadLater: true,
	})
	return err
}

// loadLeadersFirst loads, before the replicas follow the image and the
// client listener opens, the partitions that the metadata image this node
// has (its own metadata log, replayed) says it leads, those without a
// leader that it holds a replica of (it may be elected as soon as it is
// back), and every partition of an internal topic (__consumer_offsets for
// the group coordinator). The rest, partitions it follows and any the
// image does not name, load in the background afterwards, each hosted as
// it is loaded (replication.Manager.LogsLoaded); until then a client asking
// for one gets a retriable error and the replica does not fetch.
func (b *Broker) loadLeadersFirst() error {
	im, me := b.controller.Image(), b.cfg.NodeID
	first := func(tp engine.TopicPartition) bool {
		if strings.HasPrefix(tp.Topic, "__") {
			return true
		}
		t := im.Topic(tp.Topic)
		if t == nil {
			return false
		}
		leads := func(p cluster.PartitionImage) bool {
			return p.Leader == me || (p.Leader < 0 && slices.Contains(p.Replicas, me))
		}
		if i := int(tp.Partition); i >= 0 && i < len(t.Partitions) && t.Partitions[i].Partition == tp.Partition {
			return leads(t.Partitions[i])
		}
		for _, p := range t.Partitions {
			if p.Partition == tp.Partition {
				return leads(p)
			}
		}
		return false
	}
	err := b.logs.LoadPending(first)
	rep := b.logs.LoadReport()
	b.logger.Info("log dir loaded", "dir", b.cfg.LogDirs[0], "partitions", rep.Partitions, "recovered", len(rep.Recovered),
		"deferred", rep.Deferred, "loading_after_start", rep.Later, "from_clean_stop_summary", rep.FromSummary, "workers", rep.Workers,
		"took", rep.Duration.Round(time.Millisecond).String())
	return err
}

// openFilesMax is log.open.files.max, derived from the open-file limit
// when it is 0.
func openFilesMax(cfg *config.Config) int {
	if cfg.LogOpenFilesMax > 0 {
		return int(cfg.LogOpenFilesMax)
	}
	return engine.DefaultOpenFilesMax(int(cfg.MaxConnections))
}

// openController opens the metadata log, alone or as a member of the
// quorum.
func (b *Broker) openController(w *wiring) error {
	cfg := b.cfg
	voters := make([]int32, len(cfg.Voters))
	for i, v := range cfg.Voters {
		voters[i] = v.ID
	}
	qc := w.quorum
	if qc == nil {
		// One voter: a quorum of one, no transport.
		qc = &cluster.QuorumConfig{Dir: w.dir + "/" + quorumDirName, Logger: b.logger}
	}
	c, err := cluster.OpenController(w.o.FS, w.dir+"/"+metadataDirName, cluster.ControllerConfig{
		Quorum:                   qc,
		NodeID:                   cfg.NodeID,
		Voters:                   voters,
		ClusterID:                firstNonEmpty(cfg.ClusterID, b.logs.Meta().ClusterID),
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: int16(cfg.DefaultReplicationFactor),
		LeaderRebalance:          leaderRebalance(cfg),
		// The leader rules' defaults under the topics' own settings: the
		// same the replicas check acks=all against.
		MinInsyncReplicas:           int(cfg.TopicDefaults.MinInsyncReplicas),
		UncleanLeaderElectionEnable: cfg.TopicDefaults.UncleanLeaderElectionEnable,
		ValidateTopicConfig: func(key string, value *string) error {
			if value == nil {
				if _, ok := config.LookupTopic(key); !ok {
					return fmt.Errorf("unknown topic config %s", key)
				}
				return nil
			}
			return config.ValidateTopicConfig(key, *value)
		},
		ValidateBrokerConfig: func(key string, value *string) error {
			if value == nil {
				return nil
			}
			return config.ValidateBrokerConfig(key, *value, true)
		},
		ValidateBrokerLayer: config.CheckUplinkChange,
	})
	if err != nil {
		return err
	}
	b.controller = c
	b.acls = b.newACLAuthorizer(c)
	w.ctrlRef.Store(c)
	b.logDirCtrl.Store(c)
	if w.quorum != nil {
		if err := c.Subscribe(b.recordClusterID); err != nil {
			c.Close()
			return err
		}
		if err := c.Subscribe(b.logDataLoss); err != nil {
			c.Close()
			return err
		}
	}
	return nil
}

// replicasComponent is this node's replicas: they follow the metadata
// image from the moment they subscribe, and their background work
// (retention, flushes, checkpoints, ISR checks, follower fetchers) runs
// until close, which stops the fetchers and checkpoints the high
// watermarks.
func (b *Broker) replicasComponent(w *wiring) component {
	var run *task
	return component{name: "replicas",
		start: func() error {
			cfg, logger := b.cfg, b.logger
			b.replicas = replication.NewManager(cfg.NodeID, b.logs, func(im *cluster.Image, topic string, overrides map[string]string) engine.Options {
				opts, err := topicOptions(cfg, dynamicConfigs(cfg, im), overrides)
				if err != nil {
					logger.Error("topic configs do not resolve; using the broker defaults", "topic", topic, "err", err)
				}
				opts.DecompressionBudget = w.decompression
				return opts
			}, logger)
			// Before the first image, as SetReplication: the metrics of
			// where an acks=all produce's time goes.
			b.replicas.SetObserver(b.ops.metrics)
			b.replicas.SetLeaderDefaults(cluster.LeaderConfig{
				MinInsyncReplicas:           int(cfg.TopicDefaults.MinInsyncReplicas),
				UncleanLeaderElectionEnable: cfg.TopicDefaults.UncleanLeaderElectionEnable,
			})
			if w.quorum != nil {
				b.replicas.SetReplication(replicationConfig(cfg, w.peers, b.controller, w.o.MaxFollowerWait))
			}
			// Before the first image: a deferred log loaded from here on
			// reaches the replicas (LogsLoaded), one loaded before is
			// found by that image.
			w.replRef.Store(b.replicas)
			// On a quorum the replicas follow the image only once it is
			// current, and the partitions load then (serveWhenCaughtUp):
			// until then this node's image may be older than its log.
			if w.quorum == nil {
				if err := b.loadLeadersFirst(); err != nil {
					return err
				}
				if err := b.controller.Subscribe(b.replicas.ApplyImage); err != nil {
					return err
				}
			}
			if err := b.controller.Subscribe(func(_, im *cluster.Image) { applyReplicationThrottle(cfg, b.replicas, im, b.logger) }); err != nil {
				return err
			}
			run = goTask(func(ctx context.Context) {
				b.replicas.Run(ctx, replication.BackgroundIntervals{
					Retention:               time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
					Flush:                   time.Second,
					Checkpoint:              time.Duration(cfg.LogFlushOffsetCheckpointIntervalMs) * time.Millisecond,
					ProducerExpirationCheck: time.Duration(cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
					ProducerIDExpirationMs:  int64(cfg.ProducerIDExpirationMs),
					Cleaner:                 cleanerInterval(cfg),
					CleanerConfig: engine.CleanerConfig{
						DedupeBufferBytes: cfg.LogCleanerDedupeBufferSize,
					},
				})
			})
			return nil
		},
		close: func() error { return run.stop() },
	}
}

// offsetsTopicComponent makes sure __consumer_offsets exists. One voter
// creates it at once; on a quorum only the acting controller can create
// it, maybe later, so a goroutine retries until then.
func (b *Broker) offsetsTopicComponent(w *wiring) component {
	var later *task
	return component{name: "offsets topic",
		start: func() (err error) {
			if w.quorum == nil {
				w.offsetsPartitions, err = ensureOffsetsTopic(context.Background(), b.cfg, b.controller)
				return err
			}
			w.offsetsPartitions = offsetsTopicPartitions(b.cfg, b.controller)
			later = goTask(b.ensureOffsetsTopicLater)
			return nil
		},
		close: func() error {
			if later == nil {
				return nil
			}
			return later.stop()
		},
	}
}

// groupsComponent is the group coordinator, on the replicas of
// __consumer_offsets.
func (b *Broker) groupsComponent(w *wiring) component {
	var run *task
	return component{name: "group coordinator",
		start: func() (err error) {
			cfg := b.cfg
			b.groups, err = coordinator.New(coordinator.Config{
				Groups:                 groupsConfig(cfg),
				Partitions:             w.offsetsPartitions,
				TickInterval:           groupTickInterval,
				RetentionCheckInterval: time.Duration(cfg.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
				Topics:                 topicsFor(b.controller),
				Logger:                 b.logger,
			}, b.replicas)
			if err != nil {
				return err
			}
			run = goTask(b.groups.Run)
			return nil
		},
		close: func() error { return run.stop() },
	}
}

// kafkaListenerComponent binds the client listener and serves Kafka on
// it. Its close stops accepting and closes every client connection before
// anything the handlers use closes.
func (b *Broker) kafkaListenerComponent(w *wiring) component {
	var serve *task
	return component{name: "kafka listener",
		start: func() error {
			cfg, logger := b.cfg, b.logger
			bound, err := b.bindClientListeners(w)
			if err != nil {
				return err
			}
			closeAll := func() {
				for _, bl := range bound {
					bl.ln.Close()
				}
				b.stopTLS()
			}
			host, port := bound[0].spec.Host, bound[0].spec.Port
			if w.quorum != nil {
				// The heartbeats to the controller carry this registration.
				var regs []cluster.BrokerListener
				for _, bl := range bound {
					regs = append(regs, cluster.BrokerListener{Name: bl.spec.Name, Host: bl.spec.Host, Port: bl.spec.Port, SecurityProtocol: bl.protocol})
				}
				b.controller.SetRegistration(context.Background(), "", regs)
			}
			serverCfg, err := withLimits(kafka.ServerConfig{
				ListenerName: w.client.name,
				Logger:       logger,
				Observer:     b.ops.metrics,
			}, cfg)
			// Producer ids come from a block this node holds, asked for now
			// and again before it runs out, so InitProducerId does not wait
			// on the controller (nor fail while it is being elected).
			b.producerIDs = cluster.NewProducerIDManager(b.controller, cluster.ProducerIDManagerConfig{Broker: cfg.NodeID, Logger: logger})
			if err == nil {
				b.server, err = kafka.NewServer(serverCfg, &kafka.Node{Config: cfg, Metadata: b.controller, Controller: b.controller,
					Partitions: kafkaPartitions{m: b.replicas, refuse: b.uplinkRefuse}, Host: host, Port: port,
					ProducerIDs: b.producerIDs, Groups: kafkaGroupCoordinator(b.groups),
					Txn: kafkaTxn{d: b.txn, peers: b.txnPeers}, GroupTxnMarkers: b.groups,
					Health: b.ops.health, Authorizer: b.kafkaAuthorizer(w.o.Authorizer)})
			}
			if err == nil {
				err = b.controller.Subscribe(func(_, im *cluster.Image) { applyConnectionLimits(cfg, b.server, im, logger) })
			}
			if err == nil {
				err = b.controller.Subscribe(func(_, im *cluster.Image) { b.applyDynamicSSL(im) })
			}
			if err != nil {
				b.producerIDs.Close()
				closeAll()
				return err
			}
			b.txnPeers.server.Store(b.server)
			// The links read this node through it, advertising the first
			// client listener in their Metadata.
			b.internal = b.server.InternalListener(bound[0].spec)
			// Requests that change metadata and reach a node that is not the
			// controller are forwarded to it, and served there by this server.
			b.controller.SetForwardHandler(b.server.ServeForwarded)
			serve = goTask(func(ctx context.Context) {
				if err := b.serveWhenCaughtUp(ctx, bound, w.quorum != nil); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
					logger.Error("kafka listener stopped", "err", err)
				}
			})
			return nil
		},
		close: func() error {
			err := b.server.Close()
			serve.stop()
			b.stopTLS()
			b.producerIDs.Close()
			return err
		},
	}
}

// Addr is the bound address of the first client listener.
func (b *Broker) Addr() net.Addr { return b.listener.Addr() }

// ListenerAddr is the bound address of the named client listener, nil
// for a name the broker does not serve.
func (b *Broker) ListenerAddr(name string) net.Addr {
	if ln, ok := b.listeners[strings.ToUpper(name)]; ok {
		return ln.Addr()
	}
	return nil
}

// Fatal receives an error when the node must stop by itself: another
// process took its node id. `wren serve` then closes it and exits with
// the error.
func (b *Broker) Fatal() <-chan error { return b.fatal }

// stopFor reports a reason to stop on Fatal; the first one wins.
func (b *Broker) stopFor(err error) {
	select {
	case b.fatal <- err:
	default:
	}
}

// Controller is the node's controller.
func (b *Broker) Controller() *cluster.Controller { return b.controller }

// Replicas is the node's replica manager.
func (b *Broker) Replicas() *replication.Manager { return b.replicas }

// Close stops serving, then closes partitions and the data directory
// cleanly (checkpoints written, indexes trimmed): the components in the
// reverse of their start order. Safe to call twice.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.closeErr = b.components.close()
	})
	return b.closeErr
}

// Run starts a broker and serves until ctx ends, then shuts down cleanly.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	b, err := Start(cfg, o)
	if err != nil {
		return err
	}
	<-ctx.Done()
	if o.Logger != nil {
		o.Logger.Info("shutting down")
	}
	return b.Close()
}

type listenerAddr struct {
	name string
	addr string
	host string
	port int
}

// clientListeners lists the listeners that are not controller listeners,
// in file order.
func clientListeners(cfg *config.Config) ([]listenerAddr, error) {
	controller := map[string]bool{}
	for _, n := range cfg.ControllerListenerNames {
		controller[strings.ToUpper(n)] = true
	}
	var out []listenerAddr
	for _, l := range cfg.Listeners {
		if !controller[l.Name] {
			out = append(out, listenerAddr{name: l.Name, addr: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), host: l.Host, port: int(l.Port)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("broker: no client listener in listeners %v", cfg.Listeners)
	}
	return out, nil
}

// advertised is the host and port clients are told to use: the advertised
// listener of the same name, else the bound address.
func advertised(cfg *config.Config, l listenerAddr, bound net.Addr) (string, int32) {
	for _, a := range cfg.AdvertisedListeners {
		if a.Name == l.name {
			return a.Host, int32(a.Port)
		}
	}
	tcp := bound.(*net.TCPAddr)
	host := l.host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = tcp.IP.String()
	}
	return host, int32(tcp.Port)
}

// cleanerInterval is log.cleaner.backoff.ms, or zero with the cleaner off.
// runScrubber re-reads the data directory's segments at the configured
// rate, pass after pass, and says what it found.
func (b *Broker) runScrubber(ctx context.Context) {
	lg := b.logger
	b.logs.RunScrubber(ctx, engine.ScrubConfig{
		BytesPerSecond: b.cfg.LogScrubberIOMaxBytesPerSecond,
		Interval:       time.Duration(b.cfg.LogScrubberIntervalMs) * time.Millisecond,
		OnDamage: func(d engine.Damage) {
			lg.Error("scrubber found damaged data; partition offline for those offsets, nothing was deleted",
				"partition", d.TopicPartition.String(), "file", d.File, "position", d.Position, "bytes", d.End-d.Position,
				"first_offset", d.FirstOffset, "last_offset", d.LastOffset, "reason", d.Reason,
				"inspect", "wren storage check --dir "+b.logs.Dir(),
				"repair", fmt.Sprintf("wren storage repair --dir %s %s --skip|--truncate (with the broker stopped)", b.logs.Dir(), d.TopicPartition))
		},
		OnIndexRebuilt: func(tp engine.TopicPartition, segment int64, reason error) {
			lg.Warn("scrubber rebuilt a segment's indexes", "partition", tp.String(), "segment", segment, "reason", reason)
		},
	}, func(st engine.ScrubStats, err error) {
		if err != nil {
			lg.Error("scrubber pass failed", "err", err)
		}
		lg.Info("scrubber pass done", "partitions", st.Partitions, "segments", st.Segments, "batches", st.Batches,
			"bytes", st.BytesRead, "damage_found", st.DamageFound, "indexes_rebuilt", st.IndexesRebuilt, "took", st.Duration.Round(time.Millisecond).String())
	})
}

func cleanerInterval(cfg *config.Config) time.Duration {
	if !cfg.LogCleanerEnable {
		return 0
	}
	return time.Duration(cfg.LogCleanerBackoffMs) * time.Millisecond
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
