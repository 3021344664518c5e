package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/internal/membudget"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/replication"
)

// metadataDirName holds the metadata log inside the first log dir. It has
// no "-<partition>" suffix, so the engine never takes it for a partition.
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
	server     *kafka.Server
	listener   net.Listener
	ops        *opsState

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Options are what tests and the CLI may change beyond the config file.
type Options struct {
	// FS is the file system; nil means the OS.
	FS     vfs.FS
	Logger *slog.Logger
}

// Start opens (and recovers) the data directory, the metadata log and
// every partition, then binds the client listener and serves. It returns
// once the listener accepts connections.
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
	client, err := clientListener(cfg)
	if err != nil {
		return nil, err
	}
	logConfigWarnings(cfg, o.Logger)
	dir := cfg.LogDirs[0]
	b := &Broker{cfg: cfg, logger: o.Logger}
	if b.ops, err = startOps(cfg, o); err != nil {
		return nil, err
	}
	defer b.ops.closeUnlessServing()
	voters := make([]int32, len(cfg.Voters))
	for i, v := range cfg.Voters {
		voters[i] = v.ID
	}
	defaults := logOptions(cfg, cfg.TopicDefaults)
	// One decompression budget for every partition of the node
	// (max.decompressed.inflight.bytes).
	decompression := membudget.New(cfg.MaxDecompressedInflightBytes)
	defaults.DecompressionBudget = decompression
	// The engine locks the data directory first: nothing else opens a file
	// in it before the lock is held.
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
		},
		OnSync:         b.ops.metrics.ObserveSync,
		FreeSpaceFloor: freeSpaceFloor(cfg),
		OnDiskSpace:    b.onDiskSpace,
		MetadataLogDir: metadataDirName,
		ReadClusterID: func(path string) (string, error) {
			return cluster.ReadClusterID(o.FS, path)
		},
		// A voter of a quorum learns the cluster id from the first
		// controller (recordClusterID).
		JoinCluster: len(cfg.Voters) > 1 && cfg.ClusterID == "",
	})
	if err != nil {
		return nil, err
	}
	// On a quorum the CONTROLLER listener and its transport come first:
	// the controller's driver starts talking to its peers at once.
	var quorumCfg *cluster.QuorumConfig
	var ctrlRef atomic.Pointer[cluster.Controller]
	var replRef atomic.Pointer[replication.Manager]
	if len(cfg.Voters) > 1 {
		if quorumCfg, err = quorumConfig(cfg, dir, o.Logger, &ctrlRef, &replRef, b.logs); err != nil {
			b.logs.Close()
			return nil, err
		}
	}
	b.controller, err = cluster.OpenController(o.FS, dir+"/"+metadataDirName, cluster.ControllerConfig{
		Quorum:                   quorumCfg,
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
	})
	if err != nil {
		if quorumCfg != nil {
			quorumCfg.Transport.Close()
		}
		b.logs.Close()
		return nil, err
	}
	ctrlRef.Store(b.controller)
	b.replicas = replication.NewManager(cfg.NodeID, b.logs, func(im *cluster.Image, topic string, overrides map[string]string) engine.Options {
		opts, err := topicOptions(cfg, dynamicConfigs(cfg, im), overrides)
		if err != nil {
			o.Logger.Error("topic configs do not resolve; using the broker defaults", "topic", topic, "err", err)
		}
		opts.DecompressionBudget = decompression
		return opts
	}, o.Logger)
	b.replicas.SetLeaderDefaults(cluster.LeaderConfig{
		MinInsyncReplicas:           int(cfg.TopicDefaults.MinInsyncReplicas),
		UncleanLeaderElectionEnable: cfg.TopicDefaults.UncleanLeaderElectionEnable,
	})
	if quorumCfg != nil {
		b.replicas.SetReplication(replicationConfig(cfg, quorumCfg.Transport.(*quorum.TCPTransport), b.controller))
		replRef.Store(b.replicas)
	}
	if quorumCfg != nil {
		if err := b.controller.Subscribe(b.recordClusterID); err != nil {
			b.closeStores()
			return nil, err
		}
	}
	// On a quorum the replicas follow the image only once it is current
	// (serveWhenCaughtUp).
	if quorumCfg == nil {
		if err := b.controller.Subscribe(b.replicas.ApplyImage); err != nil {
			b.closeStores()
			return nil, err
		}
	}
	var offsetsPartitions int32
	if quorumCfg != nil {
		// Only the acting controller can create it, maybe later.
		offsetsPartitions = offsetsTopicPartitions(cfg, b.controller)
	} else if offsetsPartitions, err = ensureOffsetsTopic(context.Background(), cfg, b.controller); err != nil {
		b.closeStores()
		return nil, err
	}
	b.groups, err = coordinator.New(coordinator.Config{
		Groups:                 groupsConfig(cfg),
		Partitions:             offsetsPartitions,
		TickInterval:           groupTickInterval,
		RetentionCheckInterval: time.Duration(cfg.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
		Topics:                 topicsFor(b.controller),
		Logger:                 o.Logger,
	}, b.replicas)
	if err != nil {
		b.closeStores()
		return nil, err
	}
	ln, err := net.Listen("tcp", client.addr)
	if err != nil {
		b.closeStores()
		return nil, fmt.Errorf("broker: listen on %s: %w", client.addr, err)
	}
	b.listener = ln
	host, port := advertised(cfg, client, ln.Addr())
	if quorumCfg != nil {
		// The heartbeats to the controller carry this registration.
		b.controller.SetRegistration(context.Background(), "", []cluster.BrokerListener{
			{Name: client.name, Host: host, Port: port, SecurityProtocol: "PLAINTEXT"}})
	}
	serverCfg, err := withLimits(kafka.ServerConfig{
		ListenerName: client.name,
		Logger:       o.Logger,
		Observer:     b.ops.metrics,
	}, cfg)
	if err == nil {
		b.server, err = kafka.NewServer(serverCfg, &kafka.Node{Config: cfg, Metadata: b.controller, Controller: b.controller,
			Partitions: kafkaPartitions{b.replicas}, Host: host, Port: port,
			ProducerIDs: cluster.NewProducerIDManager(b.controller, cfg.NodeID), Groups: kafkaGroupCoordinator(b.groups)})
	}
	if err == nil {
		err = b.controller.Subscribe(func(_, im *cluster.Image) { applyConnectionLimits(cfg, b.server, im, o.Logger) })
	}
	if err != nil {
		ln.Close()
		b.closeStores()
		return nil, err
	}
	// Requests that change metadata and reach a node that is not the
	// controller are forwarded to it, and served there by this server.
	b.controller.SetForwardHandler(b.server.ServeForwarded)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Add(4)
	go func() {
		defer b.wg.Done()
		b.groups.Run(ctx)
	}()
	go func() {
		defer b.wg.Done()
		b.watchDiskSpace(ctx)
	}()
	go func() {
		defer b.wg.Done()
		if err := b.serveWhenCaughtUp(ctx, ln, quorumCfg != nil); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
			o.Logger.Error("kafka listener stopped", "err", err)
		}
	}()
	go func() {
		defer b.wg.Done()
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
	}()
	if quorumCfg != nil {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.ensureOffsetsTopicLater(ctx)
		}()
	}
	if cfg.LogScrubberEnable {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.runScrubber(ctx)
		}()
	}
	b.ops.serving(b)
	o.Logger.Info("wren started", "node.id", cfg.NodeID, "cluster.id", b.controller.ClusterID(), "listener", ln.Addr().String(), "log.dir", dir, "log.flush.policy", cfg.LogFlushPolicy)
	return b, nil
}

// Addr is the bound client listener address.
func (b *Broker) Addr() net.Addr { return b.listener.Addr() }

// Controller is the node's controller.
func (b *Broker) Controller() *cluster.Controller { return b.controller }

// Replicas is the node's replica manager.
func (b *Broker) Replicas() *replication.Manager { return b.replicas }

// Close stops serving, then closes partitions and the data directory
// cleanly (checkpoints written, indexes trimmed). Safe to call twice.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.ops.phase.Store(phaseStopping)
		errs := []error{b.server.Close()}
		b.cancel()
		b.wg.Wait()
		errs = append(errs, b.closeStores(), b.ops.close())
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

func (b *Broker) closeStores() error {
	var errs []error
	if b.controller != nil {
		errs = append(errs, b.controller.Close())
	}
	errs = append(errs, b.logs.Close())
	return errors.Join(errs...)
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

// clientListener picks the first listener that is not a controller
// listener.
func clientListener(cfg *config.Config) (listenerAddr, error) {
	controller := map[string]bool{}
	for _, n := range cfg.ControllerListenerNames {
		controller[n] = true
	}
	for _, l := range cfg.Listeners {
		if !controller[l.Name] {
			return listenerAddr{name: l.Name, addr: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), host: l.Host, port: int(l.Port)}, nil
		}
	}
	return listenerAddr{}, fmt.Errorf("broker: no client listener in listeners %v", cfg.Listeners)
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
