package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
)

// Manager is Kafka's ReplicaManager: it hosts this node's partitions,
// keeps them in step with the metadata image, and runs the background
// work of their logs (retention, flush.ms, checkpoints).
type Manager struct {
	nodeID int32
	logs   *engine.Manager
	// TopicOptions turns a topic's configs into log options.
	// The image is the one being applied: its broker configs are the
	// dynamic defaults under the topic's own overrides.
	topicOptions func(im *cluster.Image, topic string, configs map[string]string) engine.Options
	logger       *slog.Logger

	mu         sync.RWMutex
	partitions map[engine.TopicPartition]*Partition
	topicIDs   map[string]cluster.UUID
	// leaderDefaults are the broker defaults under the topics' own
	// min.insync.replicas and unclean.leader.election.enable.
	leaderDefaults cluster.LeaderConfig

	hooks *partitionHooks
	repl  ReplicationConfig
	// stopped closes when Run returns: follower fetches held here
	// answer at once.
	stopped  chan struct{}
	stopOnce sync.Once
	fetchers *fetcherManager
	// image is the last image applied (LogsLoaded applies it again).
	image *cluster.Image
	// checkpointed are the high watermarks of replication-offset-checkpoint
	// read at start, for the partitions opened from them. An entry goes
	// once its partition is hosted, and the map once empty: a map never
	// gives back its buckets, and a node of many partitions would keep
	// them all for nothing.
	checkpointed map[engine.TopicPartition]int64
	// leaderThrottle and followerThrottle are the replication throttle's
	// rates (throttle.go).
	leaderThrottle, followerThrottle *Throttle
	// applyAll makes the next ApplyImage go over every topic, not only
	// the ones its image changed (settings it applies changed);
	// applyAgain are topics whose last pass failed somewhere.
	applyAll   bool
	applyAgain map[string]bool
	// sessions are the followers' fetch sessions with this leader
	// (session.go).
	sessions fetchSessions
	// testHookFetchWaits, set by tests only before any fetch, runs where
	// a follower's fetch, having found nothing to send, is about to wait
	// for an append.
	testHookFetchWaits func()
}

// ReplicationConfig connects the Manager to its peers: follower fetching,
// and the controller that commits ISR changes.
type ReplicationConfig struct {
	Fetch FetchConfig
	// LagTimeMaxMs is replica.lag.time.max.ms.
	LagTimeMaxMs int64
	// AlterISR sends an ISR change (Kafka's AlterPartition) to the acting
	// controller and returns the partition's state after it.
	AlterISR func(ctx context.Context, topicID cluster.UUID, partition, leader, leaderEpoch, partitionEpoch int32, isr []int32) (cluster.PartitionImage, error)
	// Now is the clock of the ISR rules; nil is time.Now.
	Now func() time.Time
	// MaxFollowerWait bounds how long this node, as leader, holds a
	// follower's Fetch whatever wait it asks; zero means 5 s.
	MaxFollowerWait time.Duration
}

// maxFollowerWait is how long a follower's Fetch may wait here at most.
func (m *Manager) maxFollowerWait() time.Duration {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.repl.MaxFollowerWait > 0 {
		return m.repl.MaxFollowerWait
	}
	return maxReplicaFetchWait
}

// SetReplication turns on replication between nodes; call it before the
// first image is applied.
func (m *Manager) SetReplication(cfg ReplicationConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LagTimeMaxMs <= 0 {
		cfg.LagTimeMaxMs = 30000
	}
	m.repl = cfg
	m.applyAll = true
	m.hooks.now = cfg.Now
	if cfg.AlterISR != nil {
		m.hooks.alterISR = m.sendAlterISR
	}
	m.fetchers = newFetcherManager(m.nodeID, cfg.Fetch, m.logger)
	m.fetchers.throttle = m.followerThrottle
	m.fetchers.observer = m.hooks.observer
	if m.logs != nil {
		m.fetchers.checkpoint = m.logs.Checkpoint
	}
}

// sendAlterISR asks the controller for an ISR change, off the caller's
// goroutine.
func (m *Manager) sendAlterISR(tp engine.TopicPartition, topicID cluster.UUID, ch ISRChange, done func(partitionEpoch int32, err error)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		after, err := m.repl.AlterISR(ctx, topicID, tp.Partition, m.nodeID, ch.LeaderEpoch, ch.PartitionEpoch, ch.ISR)
		if err != nil {
			m.logger.Info("ISR change not committed", "partition", tp.String(), "isr", fmt.Sprint(ch.ISR), "err", err)
		} else {
			m.logger.Info("ISR change committed", "partition", tp.String(), "isr", fmt.Sprint(after.ISR), "partition_epoch", after.PartitionEpoch)
		}
		done(after.PartitionEpoch, err)
	}()
}

// NewManager returns a manager over the data directory's logs.
func NewManager(nodeID int32, logs *engine.Manager, topicOptions func(im *cluster.Image, topic string, configs map[string]string) engine.Options, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	hws, err := logs.ReadHighWatermarks()
	if err != nil {
		logger.Warn("replication-offset-checkpoint unreadable; high watermarks start at the log start", "err", err)
	}
	return &Manager{nodeID: nodeID, logs: logs, topicOptions: topicOptions, logger: logger,
		partitions: map[engine.TopicPartition]*Partition{}, topicIDs: map[string]cluster.UUID{},
		hooks: &partitionHooks{nodeID: nodeID, now: time.Now}, checkpointed: hws,
		repl: ReplicationConfig{LagTimeMaxMs: 30000}, leaderThrottle: NewThrottle(nil), followerThrottle: NewThrottle(nil),
		stopped: make(chan struct{})}
}

// Logs is the data directory.
func (m *Manager) Logs() *engine.Manager { return m.logs }

// Partition returns a hosted partition, or nil.
func (m *Manager) Partition(tp engine.TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.partitions[tp]
}

// partitionsUnordered lists the hosted partitions in no order.
func (m *Manager) partitionsUnordered() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		out = append(out, p)
	}
	return out
}

// Partitions lists the hosted partitions, sorted.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	out := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		out = append(out, p)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].tp.Less(out[j].tp) })
	return out
}

// SetLeaderDefaults sets the broker defaults of min.insync.replicas and
// unclean.leader.election.enable, from the next image applied on.
func (m *Manager) SetLeaderDefaults(cfg cluster.LeaderConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaderDefaults = cfg
	m.applyAll = true
}

// ApplyImage brings the hosted partitions in line with a new metadata
// image: removed topics' logs, and those of replicas reassigned away from
// this node, are deleted; new partitions get logs, leaders
// take their epochs, changed configs reach the logs. It runs on the
// controller's loop, in image order.
//
// Only the topics that differ from old's are gone over (images share the
// topics a change did not touch), and those whose last pass failed: one
// ISR change must not cost a pass over ten thousand partitions on every
// node. Every topic is gone over for the first image, when the dynamic
// broker configs under the topics' own change, and after the settings
// ApplyImage uses changed.
func (m *Manager) ApplyImage(old, im *cluster.Image) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.image = im
	m.applyImageLocked(old, im, nil)
}

// LogsLoaded applies the last image again to partitions whose logs were
// not loaded when it came (engine.ErrLogLoading: their load ran out of
// file descriptors and was retried), so they are served from now on.
// The image is the newest one applied, under the same lock, so this never
// takes a partition back to an older state.
func (m *Manager) LogsLoaded(tps []engine.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.image == nil {
		return // the first image will find them loaded
	}
	only := make(map[engine.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		only[tp] = true
	}
	m.applyImageLocked(m.image, m.image, only)
}

// createLaterMin is how many new replicas an image must bring for their
// logs to be created in the background (engine.Manager.CreateLogsLater)
// rather than one by one on the metadata quorum's goroutine, which runs
// ApplyImage: a CreateTopics of thousands of partitions held the quorum
// up for tens of seconds creating logs, and the controller was lost.
// Below it the replicas are hosted before ApplyImage returns.
const createLaterMin = 64

// createManyLater hands the logs of the replicas new in im to the engine
// to create in the background when there are at least createLaterMin of
// them; LogsLoaded hosts them as they are created.
func (m *Manager) createManyLater(old, im *cluster.Image, all bool, again map[string]bool) {
	var tps []engine.TopicPartition
	for _, name := range im.TopicNames() {
		t := im.Topic(name)
		if !all && !again[name] && old.Topic(name) == t {
			continue
		}
		for _, pi := range t.Partitions {
			tp := engine.TopicPartition{Topic: name, Partition: pi.Partition}
			if m.partitions[tp] == nil && contains(pi.Replicas, m.nodeID) {
				tps = append(tps, tp)
			}
		}
	}
	if len(tps) < createLaterMin {
		return
	}
	if _, err := m.logs.CreateLogsLater(tps); err != nil && !errors.Is(err, engine.ErrNoLoadReports) {
		m.logger.Warn("cannot create partition logs in the background; creating them now", "partitions", len(tps), "err", err)
	}
}

// applyImageLocked is ApplyImage; with only set, it touches no partition
// but those.
func (m *Manager) applyImageLocked(old, im *cluster.Image, only map[engine.TopicPartition]bool) {
	// LogsLoaded (only set) goes over its partitions whatever changed, and
	// leaves the passes owed to later images as they are.
	all := only != nil || old == nil || m.applyAll || !sameBrokerConfigs(old, im, m.nodeID)
	again := m.applyAgain
	if only == nil {
		m.applyAll, m.applyAgain = false, map[string]bool{}
	}
	// Removed topics, or a name now used by a new topic id.
	for name, id := range m.topicIDs {
		if t := im.Topic(name); only == nil && (t == nil || t.ID != id) {
			m.removeTopicLocked(name)
		}
	}
	if only == nil {
		m.createManyLater(old, im, all, again)
	}
	for _, name := range im.TopicNames() {
		t := im.Topic(name)
		if !all && !again[name] && old.Topic(name) == t {
			continue
		}
		m.topicIDs[name] = t.ID
		opts := m.topicOptions(im, name, t.Configs)
		leaderThrottled, followerThrottled := m.throttledReplicas(name, t.Configs)
		for _, pi := range t.Partitions {
			tp := engine.TopicPartition{Topic: name, Partition: pi.Partition}
			if only != nil && !only[tp] {
				continue
			}
			if !contains(pi.Replicas, m.nodeID) {
				if m.partitions[tp] != nil {
					// Reassigned away: the replica is no longer this
					// node's, so its log goes (Kafka's StopReplica with
					// delete).
					m.removePartitionLocked(tp)
				}
				continue
			}
			p := m.partitions[tp]
			if p == nil {
				l, err := m.logs.GetOrCreateLog(tp)
				if errors.Is(err, engine.ErrLogLoading) {
					continue // created or loaded in the background; LogsLoaded applies this
				}
				if err != nil {
					m.logger.Error("cannot open partition log", "partition", tp.String(), "err", err)
					m.applyAgain[name] = true
					continue
				}
				p = newPartition(tp, l, m.hooks, m.checkpointed[tp])
				m.partitions[tp] = p
				m.forgetCheckpointed(tp)
			}
			p.mu.Lock()
			p.topicID = t.ID
			p.mu.Unlock()
			p.throttled.leader.Store(leaderThrottled.Has(pi.Partition))
			p.throttled.follower.Store(followerThrottled.Has(pi.Partition))
			if err := p.log.UpdateOptions(opts); err != nil {
				m.logger.Error("invalid topic config for log", "partition", tp.String(), "err", err)
				m.applyAgain[name] = true
			}
			// A replica that stops leading does so before it takes the
			// image's ISR: that ISR is the new leader's, and counted
			// over this replica's followers it could move the high
			// watermark over records the new leader does not hold.
			lead := pi.Leader == m.nodeID
			var err error
			if !lead {
				err = p.becomeLeaderOrFollower(false, pi.LeaderEpoch)
			}
			p.setMetadata(pi.PartitionEpoch, pi.Replicas, pi.ISR, im.ElectionContext(t, pi.Partition, m.leaderDefaults, nil).MinISR, m.repl.LagTimeMaxMs)
			if lead {
				err = p.becomeLeaderOrFollower(true, pi.LeaderEpoch)
			}
			if m.fetchers != nil && err == nil {
				m.fetchers.follow(tp, p, pi.Leader, pi.LeaderEpoch)
			}
			switch {
			case errors.Is(err, ErrStaleLeaderEpoch):
				// BecomeLeaderOrFollower moved the replica past this
				// image; the image catches up when its epoch does.
			case err != nil:
				m.logger.Error("cannot record the leader epoch", "partition", tp.String(), "err", err)
				m.applyAgain[name] = true
			}
		}
	}
	if old == nil && only == nil {
		// Logs on disk that the metadata does not know: keep them, unserved.
		for _, l := range m.logs.Logs() {
			if m.partitions[l.TopicPartition()] == nil {
				m.logger.Warn("partition log on disk is not in the cluster metadata; leaving it untouched", "partition", l.TopicPartition().String(), "dir", l.Dir())
			}
		}
	}
}

// BecomeLeaderOrFollower applies one partition's leadership as an image
// does (Kafka's ReplicaManager.becomeLeaderOrFollower): this node leads at
// leaderEpoch when leader is its node id, and follows otherwise. A change
// at an epoch older than the replica's returns ErrStaleLeaderEpoch and
// changes nothing.
//
// ApplyImage does this for every hosted partition. Called directly, it
// moves one partition's leadership without a metadata record: tests use
// it to move a group coordinator in-process, since a one-node controller
// never elects another leader. Later images leave the partition as it is
// until their leader epoch reaches the one given here.
func (m *Manager) BecomeLeaderOrFollower(tp engine.TopicPartition, leader, leaderEpoch int32) error {
	p := m.Partition(tp)
	if p == nil {
		return fmt.Errorf("%w: %s is not hosted here", engine.ErrInvalidTopicPartition, tp)
	}
	return p.becomeLeaderOrFollower(leader == m.nodeID, leaderEpoch)
}

func (m *Manager) removeTopicLocked(name string) {
	delete(m.topicIDs, name)
	for tp := range m.partitions {
		if tp.Topic == name {
			m.removePartitionLocked(tp)
		}
	}
}

// forgetCheckpointed drops tp's checkpointed high watermark: its
// partition is hosted, or gone.
func (m *Manager) forgetCheckpointed(tp engine.TopicPartition) {
	delete(m.checkpointed, tp)
	if len(m.checkpointed) == 0 {
		m.checkpointed = nil
	}
}

// removePartitionLocked stops following tp and deletes its log.
func (m *Manager) removePartitionLocked(tp engine.TopicPartition) {
	delete(m.partitions, tp)
	m.forgetCheckpointed(tp)
	if m.fetchers != nil {
		m.fetchers.follow(tp, nil, -1, 0)
	}
	if err := m.logs.DeleteLog(tp); err != nil {
		m.logger.Error("cannot delete partition log", "partition", tp.String(), "err", err)
	}
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// DeleteRecords advances a partition's log start offset, at most to its
// high watermark, durably.
func (m *Manager) DeleteRecords(tp engine.TopicPartition, offset int64) (int64, error) {
	p := m.Partition(tp)
	if p == nil {
		return 0, fmt.Errorf("%w: %s", engine.ErrInvalidTopicPartition, tp)
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: %d is above the high watermark %d", engine.ErrOffsetOutOfRange, offset, hw)
	}
	return m.logs.DeleteRecords(tp, offset)
}

// BackgroundIntervals are how often Run does each job.
type BackgroundIntervals struct {
	Retention  time.Duration // log.retention.check.interval.ms
	Flush      time.Duration // log.flush.scheduler.interval.ms
	Checkpoint time.Duration // log.flush.offset.checkpoint.interval.ms
	// ProducerExpirationCheck is producer.id.expiration.check.interval.ms;
	// producers idle for ProducerIDExpirationMs are forgotten.
	ProducerExpirationCheck time.Duration
	ProducerIDExpirationMs  int64
	// Cleaner is log.cleaner.backoff.ms between log cleaner passes; zero
	// turns the cleaner off (log.cleaner.enable = false).
	Cleaner       time.Duration
	CleanerConfig engine.CleanerConfig
}

// Run does the logs' background work until ctx ends.
func (m *Manager) Run(ctx context.Context, iv BackgroundIntervals) {
	retention := time.NewTicker(iv.Retention)
	flush := time.NewTicker(iv.Flush)
	checkpoint := time.NewTicker(iv.Checkpoint)
	expiration := time.NewTicker(iv.ProducerExpirationCheck)
	defer expiration.Stop()
	var cleaner <-chan time.Time
	if iv.Cleaner > 0 {
		t := time.NewTicker(iv.Cleaner)
		defer t.Stop()
		cleaner = t.C
	}
	defer retention.Stop()
	defer flush.Stop()
	defer checkpoint.Stop()
	lag := time.Duration(m.repl.LagTimeMaxMs) * time.Millisecond
	isrCheck := time.NewTicker(min(max(lag/4, 10*time.Millisecond), 500*time.Millisecond))
	defer isrCheck.Stop()
	defer m.checkpointHighWatermarks()
	if m.fetchers != nil {
		defer m.fetchers.stopAll()
	}
	// Held follower fetches end with Run, so the CONTROLLER listener
	// closing after it does not wait out their long polls.
	defer m.stopOnce.Do(func() { close(m.stopped) })
	for {
		select {
		case <-ctx.Done():
			return
		case <-isrCheck.C:
			// Every replica.lag.time.max.ms/4 (at most 500 ms), over
			// every partition: in no order, as sorting thousands of
			// partitions each time cost more than the check.
			for _, p := range m.partitionsUnordered() {
				p.tick()
			}
		case <-retention.C:
			// The engine logs each partition's deletions with its figures.
			_, err := m.logs.RunRetention(m.highWatermark)
			m.logIfErr("retention", err)
		case <-flush.C:
			m.logIfErr("flush", m.logs.FlushDirty())
			for _, p := range m.partitionsUnordered() {
				p.maybeAdvanceHighWatermark()
			}
		case <-checkpoint.C:
			m.logIfErr("checkpoint", m.logs.Checkpoint())
			m.checkpointHighWatermarks()
		case <-cleaner:
			// The pass stops when ctx ends, before the logs close.
			started := time.Now()
			st, err := m.logs.RunCleaner(ctx, iv.CleanerConfig, m.highWatermark)
			if ctx.Err() == nil {
				m.logIfErr("log cleaner", err)
			}
			if st.LogsCleaned > 0 || st.LogsAborted > 0 {
				m.logger.Info("log cleaner pass", "logs_cleaned", st.LogsCleaned, "logs_aborted", st.LogsAborted,
					"segments_cleaned", st.SegmentsCleaned, "segments_written", st.SegmentsWritten,
					"bytes_read", st.BytesRead, "bytes_written", st.BytesWritten,
					"records_read", st.RecordsRead, "records_retained", st.RecordsRetained,
					"took", time.Since(started).Round(time.Millisecond).String())
			}
		case <-expiration.C:
			for _, p := range m.Partitions() {
				p.Log().RemoveExpiredProducers(iv.ProducerIDExpirationMs)
			}
		}
	}
}

// ClampHighWatermarks keeps every partition's high watermark inside its
// log after logs were cut back: a log dir that failed for lack of space
// and recovered in place cut its logs to their durable offsets, below a
// high watermark that flush policy interval let run ahead.
func (m *Manager) ClampHighWatermarks() {
	for _, p := range m.Partitions() {
		p.clampHighWatermark()
	}
}

// highWatermark bounds retention and cleaning: nothing at or above a
// partition's high watermark is deleted or rewritten.
func (m *Manager) highWatermark(l *engine.Log) int64 {
	if p := m.Partition(l.TopicPartition()); p != nil {
		return p.HighWatermark()
	}
	return l.LogStartOffset()
}

func (m *Manager) logIfErr(job string, err error) {
	if err != nil && !errors.Is(err, engine.ErrClosed) {
		m.logger.Error("background "+job+" failed", "err", err)
	}
}

// checkpointHighWatermarks writes replication-offset-checkpoint.
func (m *Manager) checkpointHighWatermarks() {
	hws := map[engine.TopicPartition]int64{}
	for _, p := range m.Partitions() {
		hws[p.tp] = p.HighWatermark()
	}
	// A partition whose log still loads (the followers, after a start)
	// keeps the entry it had: dropped, its high watermark would start at
	// the log start after the next restart.
	if pending := m.logs.Pending(); len(pending) > 0 {
		m.mu.RLock()
		for _, tp := range pending {
			if hw, ok := m.checkpointed[tp]; ok {
				if _, hosted := hws[tp]; !hosted {
					hws[tp] = hw
				}
			}
		}
		m.mu.RUnlock()
	}
	m.logIfErr("high watermark checkpoint", m.logs.WriteHighWatermarks(hws))
}

// sameBrokerConfigs reports whether the dynamic broker configs under the
// topics' own (this node's and the cluster-wide defaults) are the same in
// both images.
func sameBrokerConfigs(old, im *cluster.Image, nodeID int32) bool {
	id := strconv.Itoa(int(nodeID))
	return maps.Equal(old.BrokerConfigs(""), im.BrokerConfigs("")) && maps.Equal(old.BrokerConfigs(id), im.BrokerConfigs(id))
}
