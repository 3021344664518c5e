package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/peer"
	"github.com/wren-broker/wren/replication"
	"github.com/wren-broker/wren/wire"
)

// replicationConfig is follower fetching over the CONTROLLER listener's
// replica connections, and ISR changes through the controller.
func replicationConfig(cfg *config.Config, peers *peer.Layer, c *cluster.Controller, maxFollowerWait time.Duration) replication.ReplicationConfig {
	return replication.ReplicationConfig{
		LagTimeMaxMs:    cfg.ReplicaLagTimeMaxMs,
		AlterISR:        c.SubmitAlterISR,
		MaxFollowerWait: maxFollowerWait,
		Fetch: replication.FetchConfig{
			Dial: func(leader int32) (replication.LeaderConn, error) {
				return peers.DialReplica(election.NodeID(leader))
			},
			MaxBytes:       cfg.ReplicaFetchMaxBytes,
			ResponseBytes:  min(cfg.ReplicaFetchResponseMaxBytes, peer.DefaultMaxFrameBytes-(1<<20)),
			WaitMaxMs:      cfg.ReplicaFetchWaitMaxMs,
			Backoff:        time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
			RequestTimeout: time.Duration(cfg.QuorumRequestTimeoutMs) * time.Millisecond,
		},
	}
}

// quorumDirName holds the metadata log inside the first log dir, of one
// voter or of several.
const quorumDirName = cluster.QuorumDirName

// quorumFetchBytes bounds the entries of one metadata fetch answer: a
// quarter of a peer frame, so an answer of large entries (a CreateTopics
// of many topics commits about 1 MiB per entry) is never dropped as over
// the frame limit.
const quorumFetchBytes = peer.DefaultMaxFrameBytes / 4

// quorumTick is the election's tick. The controller.* settings are
// divided by it, so they are honoured to within one tick.
const quorumTick = 50 * time.Millisecond

// probeRoundTimeout is how long a node that would run waits for the
// probe answers of higher ids (election.Config.ProbeTicks). Answers on a
// LAN take milliseconds; the heartbeat interval it used to be (500 ms)
// was paid in full by every failover of the highest id, whose successor
// waited for the dead node's answer.
const probeRoundTimeout = 150 * time.Millisecond

// controllerListenerAddr is where this node accepts its peers: the
// listener named in controller.listener.names, else its own entry of
// controller.quorum.voters.
func controllerListenerAddr(cfg *config.Config) (string, error) {
	names := map[string]bool{}
	for _, n := range cfg.ControllerListenerNames {
		names[n] = true
	}
	for _, l := range cfg.Listeners {
		if names[l.Name] {
			return l.Addr(), nil
		}
	}
	for _, v := range cfg.Voters {
		if v.ID == cfg.NodeID {
			return v.Addr(), nil
		}
	}
	return "", fmt.Errorf("broker: node.id %d has no CONTROLLER listener and is not in controller.quorum.voters", cfg.NodeID)
}

func ticks(ms int32) int {
	return max(1, int((time.Duration(ms)*time.Millisecond+quorumTick-1)/quorumTick))
}

// quorumConfig binds the CONTROLLER listener, starts its peer layer with
// its two clients, the metadata quorum's transport and the replica
// connections, and builds the controller's quorum settings. The
// controller is set in ctrl once open, for the peers' heartbeats and
// forwarded requests; the replicas in repl, for the followers' fetches.
//
// When the CONTROLLER listener speaks SSL, the layer speaks mutual TLS with
// the listener's certificate and trust store (config.ControllerSSL), read
// again every tlsReload when the files change; reloads is the reloader,
// for the broker to run and stop.
func quorumConfig(cfg *config.Config, dir string, logger *slog.Logger, ctrl *atomic.Pointer[cluster.Controller], repl *atomic.Pointer[replication.Manager], logs *engine.Manager, fatal func(error)) (*cluster.QuorumConfig, *peer.Layer, *certReloader, error) {
	addr, err := controllerListenerAddr(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	var peerTLS *peer.TLS
	var reloads *certReloader
	if ssl, ok := cfg.ControllerSSL(); ok {
		self := election.NodeID(cfg.NodeID)
		var selfAddr string
		for _, v := range cfg.Voters {
			if v.ID == cfg.NodeID {
				selfAddr = v.Addr()
			}
		}
		reloads, err = newCertReloader(ssl, logger, func(c *tls.Certificate) error {
			return peer.CheckOwnCertificate(c, self, selfAddr)
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("broker: controller listener %s: %w", ssl.Listener, err)
		}
		if reloads.cas.Load() == nil {
			return nil, nil, nil, fmt.Errorf("broker: controller listener %s speaks mutual TLS and needs a trust store (%s)", ssl.Listener, ssl.Key("ssl.truststore.location"))
		}
		peerTLS = &peer.TLS{Certificate: reloads.cert.Load, CAs: reloads.cas.Load, Base: ssl.BaseTLSConfig()}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("broker: %w", err) // net names the address: "listen tcp ADDR: ..."
	}
	voters := map[election.NodeID]string{}
	ids := make([]election.NodeID, 0, len(cfg.Voters))
	for _, v := range cfg.Voters {
		voters[election.NodeID(v.ID)] = v.Addr()
		ids = append(ids, election.NodeID(v.ID))
	}
	peers, err := peer.New(peer.Config{
		ID: election.NodeID(cfg.NodeID), Voters: voters, Listener: ln, Logger: logger,
		// The data directory's cluster id comes first: a node whose data
		// belongs to another cluster is refused by its peers' handshake
		// before it learns anything of theirs.
		ClusterID: func() string {
			if id := logs.Meta().ClusterID; id != "" {
				return id
			}
			if c := ctrl.Load(); c != nil && c.ClusterID() != "" {
				return c.ClusterID()
			}
			return cfg.ClusterID
		},
		DialTimeout: time.Duration(cfg.QuorumRequestTimeoutMs) * time.Millisecond,
		// Another process that took this node's id after it started
		// (peer/identity.go): the node stops rather than share it.
		OnDuplicate: fatal,
		TLS:         peerTLS,
	})
	if err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	// The metadata quorum: the message channel's client.
	tr := quorum.NewTCPTransport(peers, func(from election.NodeID, body []byte) {
		if c := ctrl.Load(); c != nil {
			c.HandleApp(from, body)
		}
	})
	// Followers fetch from their leaders on replica connections of this
	// listener: only a peer that passed the handshake can ask.
	// A follower's fetch session lives as long as its connection.
	peers.HandleReplicas(func(from election.NodeID, conn uint64, req kmsg.Request) *wire.Body {
		if r := repl.Load(); r != nil {
			return r.ServeReplicaRequest(int32(from), conn, req)
		}
		return nil
	}, func(from election.NodeID, conn uint64) {
		if r := repl.Load(); r != nil {
			r.ReplicaConnClosed(int32(from), conn)
		}
	})
	if err := peers.Start(); err != nil {
		return nil, nil, nil, err // Start closed the layer and its listener
	}
	fetchWait := ticks(cfg.ControllerHeartbeatIntervalMs)
	return &cluster.QuorumConfig{
		Dir: dir + "/" + quorumDirName, Transport: tr, SendApp: tr.SendApp, Tick: quorumTick, Logger: logger,
		CleanShutdown: logs.HadCleanShutdown(),
		LogDir:        func() cluster.BrokerLogDir { return logDirState(logs) },
		AcksDurable:   cfg.LogFlushPolicy == config.FlushPolicyAck,
		Node: metalog.Config{
			Election: election.Config{ID: election.NodeID(cfg.NodeID), Voters: ids,
				HeartbeatTicks:      ticks(cfg.ControllerHeartbeatIntervalMs),
				LeaseTicks:          ticks(cfg.ControllerLeaseMs),
				ElectionTicks:       ticks(cfg.QuorumFetchTimeoutMs),
				ElectionJitterTicks: ticks(cfg.QuorumElectionBackoffMaxMs),
				ProbeTicks:          min(ticks(cfg.ControllerHeartbeatIntervalMs), max(1, int(probeRoundTimeout/quorumTick))),
				// A probe round that did not run is retried after a
				// heartbeat interval and a jitter, not a whole election
				// timeout.
				RetryTicks: ticks(cfg.ControllerHeartbeatIntervalMs),
				Seed:       uint64(time.Now().UnixNano()) ^ uint64(cfg.NodeID),
			},
			FetchWaitTicks:        fetchWait,
			FetchTimeoutTicks:     max(fetchWait+1, ticks(cfg.QuorumRequestTimeoutMs)),
			MaxFetchEntries:       256,
			MaxFetchBytes:         quorumFetchBytes,
			MaxUncommittedEntries: 1024,
		},
		BrokerHeartbeatInterval: time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		BrokerSessionTimeout:    time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
	}, peers, reloads, nil
}

// recordClusterID writes the cluster id into meta.properties once the
// metadata image has it (a node that joined a cluster learns it from the
// first controller). A data directory of another cluster is refused: the
// engine fails it, and nothing in it is written or acknowledged.
func (b *Broker) recordClusterID(old, new *cluster.Image) {
	if new.ClusterID == "" || (old != nil && old.ClusterID == new.ClusterID) {
		return
	}
	if err := b.logs.SetClusterID(new.ClusterID); err != nil {
		b.logger.Error("this node's data directory belongs to another cluster; it is refused, not wiped", "err", err)
	}
}

// logDataLoss logs, at ERROR on every node, each data-loss ledger entry an
// image adds: an unclean election, whichever way it came (a broker fenced
// or unfenced, unclean.leader.election.enable turned on, ElectLeaders
// UNCLEAN). The first image (old nil, at start) holds earlier entries,
// which were logged when they were made.
func (b *Broker) logDataLoss(old, new *cluster.Image) {
	if old == nil {
		return
	}
	var seen uint64
	if l := old.DataLossLedger(); len(l) > 0 {
		seen = l[len(l)-1].Offset
	}
	for _, e := range new.DataLossLedger() {
		if e.Offset <= seen {
			continue
		}
		b.logger.Error("unclean leader election: acknowledged records may be lost",
			"topic", e.Topic, "partition", e.Partition, "leader", e.NewLeader, "previous_leader", e.PreviousLeader,
			"leader_epoch", e.LeaderEpoch, "previous_isr", e.PreviousISR, "reason", e.Reason,
			"from_offset", e.FromOffset, "to_offset", e.ToOffset)
	}
}

// offsetsTopicPartitions is the partition count of __consumer_offsets on a
// quorum: the existing topic's, else the config's, which the acting
// controller creates it with (ensureOffsetsTopicLater).
func offsetsTopicPartitions(cfg *config.Config, c *cluster.Controller) int32 {
	if t := c.Image().Topic(coordinator.OffsetsTopic); t != nil {
		return int32(len(t.Partitions))
	}
	return cfg.OffsetsTopicNumPartitions
}

// ensureOffsetsTopicLater creates __consumer_offsets once this node is the
// acting controller and enough brokers registered for its replication
// factor, retrying until then.
func (b *Broker) ensureOffsetsTopicLater(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if b.controller.Image().Topic(coordinator.OffsetsTopic) != nil {
			return
		}
		if b.controller.Acting() {
			if _, err := ensureOffsetsTopic(ctx, b.cfg, b.controller); err != nil {
				b.logger.Debug("offsets topic not created yet", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaderRebalance is auto.leader.rebalance.enable's schedule for the
// controller, nil when it is off.
func leaderRebalance(cfg *config.Config) *cluster.LeaderRebalanceConfig {
	if !cfg.AutoLeaderRebalanceEnable {
		return nil
	}
	return &cluster.LeaderRebalanceConfig{
		CheckInterval:       time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		PerBrokerPercentage: int(cfg.LeaderImbalancePerBrokerPercentage),
	}
}

// catchUpWarnInterval is how often a node that cannot catch up with the
// metadata log says so.
const catchUpWarnInterval = 5 * time.Second

// serveWhenCaughtUp starts serving clients once this node's metadata
// image is current, as a KRaft broker starts its data-plane acceptors
// only after its initial catch-up: until then the client listener is
// bound but does not accept, so a client's first answer (Metadata,
// FindCoordinator, Produce, Fetch) already reflects every change made
// while this node was down, and its replicas neither lead nor follow from
// the stale image it replayed (on a quorum they subscribe to the image
// only here). Connections made meanwhile wait in the listen backlog and
// are served once it opens. It also waits until the image holds this
// process's own registration (Controller.Registered): only then does the
// image reflect whether this restart was clean. A node that cannot reach
// a controller (the minority side) keeps waiting, and says so in its log
// and in /readyz.
func (b *Broker) serveWhenCaughtUp(ctx context.Context, bound []boundListener, quorum bool) error {
	if !quorum {
		// One voter: nobody else holds the partitions, and the metadata
		// has nothing to change for an unclean shutdown.
		b.logs.UncleanShutdownHandled()
	}
	if quorum {
		t := time.NewTicker(catchUpWarnInterval)
		defer t.Stop()
		waiting := time.Now()
	wait:
		for {
			select {
			case <-b.controller.CaughtUp():
				// And once the controller registered this process: only
				// then does the image say whether this node may still
				// lead after the way it last stopped (KIP-966).
				select {
				case <-b.controller.Registered():
					break wait
				case <-ctx.Done():
					return b.serveAll(bound)
				case <-t.C:
					b.logger.Warn("not serving clients yet", "reason", b.catchUpStatus(),
						"waiting_for", time.Since(waiting).Round(time.Second).String())
				}
			case <-ctx.Done():
				// Closing: Serve on a closed server closes the listener.
				return b.serveAll(bound)
			case <-t.C:
				b.logger.Warn("not serving clients yet", "reason", b.catchUpStatus(),
					"waiting_for", time.Since(waiting).Round(time.Second).String())
			}
		}
		// The controller acted on how this process's predecessor stopped:
		// a clean close may leave the marker again.
		b.logs.UncleanShutdownHandled()
		// The partitions this node leads in the current image load before
		// it serves; the rest load in the background (loadLeadersFirst).
		err := b.loadLeadersFirst()
		if err != nil {
			// As a failed load of the log dir fails a start: the node stops.
			err = fmt.Errorf("broker: log dir: %w", err)
			b.stopFor(err)
		} else {
			err = b.controller.Subscribe(b.replicas.ApplyImage)
		}
		if err != nil {
			for _, bl := range bound {
				bl.ln.Close()
			}
			return err
		}
		b.logger.Info("caught up with the metadata log; serving clients", "metadata_offset", b.controller.Image().Offset,
			"took", time.Since(waiting).Round(time.Millisecond).String())
	}
	return b.serveAll(bound)
}

// catchUpStatus is why this node does not serve clients yet, "" once it
// does not wait any more.
func (b *Broker) catchUpStatus() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return b.controller.CatchUpStatus(ctx)
}
