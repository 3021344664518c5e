package uplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/config"
)

// Options are what a Link needs from the node that runs it.
type Options struct {
	// Config is the link's [uplink.NAME] table.
	Config config.Uplink
	// NodeID is this node's id: it forwards the partitions it leads.
	NodeID int32
	// Local is the seed (host:port) of the local client.
	Local string
	// LocalDial, if set, makes the local client's connections (to the
	// seed and to every broker the local Metadata names): the broker
	// passes its internal listener's (kafka.InternalListener), which
	// connects each one to this node. Nil dials Local over the network.
	LocalDial func(ctx context.Context, network, address string) (net.Conn, error)
	// Logger gets the link's start, stop and errors; slog.Default if nil.
	Logger *slog.Logger
	// Refresh is how often the local topics and leaders are read again;
	// 5 s if zero.
	Refresh time.Duration
	// TailTimeout bounds the read of a far partition's last record; 15 s
	// if zero.
	TailTimeout time.Duration
	// Backlog, if set, measures a partition's backlog in the local log
	// from offset next to its high watermark (the broker reads it from
	// its segments, see LocalBacklog); ok is false when this node hosts
	// no replica of it. Without it Status counts records only, up to the
	// high watermark of the last fetch.
	Backlog func(topic string, partition int32, next int64) (b LocalBacklog, ok bool)
	// Paused starts the link paused (SetPaused): no session starts until
	// it is resumed.
	Paused bool
	// CreateTopic, if set, creates a local topic with partitions
	// partitions (the cluster's default replication factor): the pull
	// side's target of a far topic. The broker's answers NOT_CONTROLLER
	// (kerr.NotController) on a node that is not the acting controller;
	// the link on that node creates it. Nil: local topics are not
	// created (the partitions of a missing one are refused).
	CreateTopic func(ctx context.Context, topic string, partitions int32) error
	// Links, if set, are the configs of every link this node runs (this
	// one among them), for the run-time loop checks (config.Uplink's
	// PullLoop and PullTarget); nil: this link alone.
	Links func() []config.Uplink
}

// LocalBacklog is what the local log holds of a partition from a
// forwarding cursor on.
type LocalBacklog struct {
	// Leader: this node leads the partition, so its forwarding is this
	// node's; a follower's figures are another node's business.
	Leader bool
	// HighWatermark is the partition's high watermark now.
	HighWatermark int64
	// Bytes are the log's bytes (batches as stored, compressed or not)
	// from the batch holding the cursor to the high watermark.
	Bytes int64
	// Oldest is the timestamp of the batch holding the cursor (its first
	// record's, or its append time): the oldest record not forwarded.
	// Zero when nothing is waiting.
	Oldest time.Time
}

// Link forwards one [uplink.NAME]'s topics. Start runs it; Close stops it.
type Link struct {
	o      Options
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	// bucket is max.bytes.per.second's, nil without a cap; only the
	// running session uses it, and it outlives sessions so that a new
	// one starts with no fresh allowance.
	bucket *bucket

	// pullBucket is max.bytes.per.second's for the pull side: each
	// direction is capped on its own.
	pullBucket *bucket

	mu    sync.Mutex
	parts map[tp]*partState
	// pulls are the pull side's partitions, by local topic (pull.go).
	pulls   map[tp]*partState
	lastErr string
	errAt   time.Time
	sent    int64
	// sentBytes and rate count the record bytes (key, value, headers)
	// acknowledged.
	sentBytes int64
	rate      rate
	// started is when the link started; inSession is set while a session
	// holds both clients; lastUp is the last time the far side answered
	// (a ping, a produce acknowledged, a session started).
	started   time.Time
	inSession bool
	lastUp    time.Time
	// paused is set by SetPaused; stopSession ends the session running
	// (nil between sessions); wake tells the run loop to look again.
	paused      bool
	stopSession context.CancelCauseFunc
	wake        chan struct{}
	// hold is the retention hold's report (hold.go).
	hold holdState
}

// tp is a local topic partition.
type tp struct {
	topic     string
	partition int32
}

// partState is one partition's progress, for Status.
type partState struct {
	// next is the local offset after the last record the far side
	// acknowledged (or this link skipped); hwm the local high watermark
	// last seen.
	next, hwm int64
	// pending counts records handed to the producer and not yet
	// acknowledged; skipped records move next only when none are.
	pending   int
	sent      int64
	sentBytes int64
	rate      rate
	active    bool
	// settling: waiting for the far end offset to settle (session.go).
	settling bool
	err      string
}

// PartitionStatus is one local partition's forwarding state.
type PartitionStatus struct {
	Topic     string
	Partition int32
	// Direction is DirectionPush (a local partition forwarded to the far
	// side) or DirectionPull (a far partition pulled into local partition
	// Topic[Partition]); FarTopic is the far side's topic. A pulled
	// partition's Next, Backlog and rates count far offsets and records
	// (Backlog up to the far high watermark last fetched); its
	// BacklogBytes and BacklogSeconds are 0 (the local log does not hold
	// them yet) and Leader says whether this node leads the local
	// partition it writes.
	Direction string
	FarTopic  string
	// Active: this node leads the partition and forwards it now.
	Active bool
	// Next is the next local offset to forward, -1 before the cursor is
	// known; Backlog the records between it and the local high
	// watermark.
	Next, Backlog int64
	// Sent counts the records the far side acknowledged since start,
	// SentBytes their bytes (key, value and headers as produced).
	Sent, SentBytes int64
	// Leader: this node leads the partition (from the local log's view;
	// false when Options.Backlog is not set). Of several nodes' rows for
	// one partition, the leader's counts.
	Leader bool
	// BacklogBytes are the local log's bytes from the cursor to the high
	// watermark (LocalBacklog.Bytes); BacklogSeconds the age of the
	// oldest record not forwarded, from its timestamp, 0 when caught up.
	// Both are 0 without Options.Backlog.
	BacklogBytes   int64
	BacklogSeconds float64
	// RecordsPerSec and BytesPerSec are the send rate over the last
	// rateWindow (records the far side acknowledged).
	RecordsPerSec, BytesPerSec float64
	// Settling: the partition waits for its far end offset to hold still
	// for tail.settle.ms before its far tail is read and forwarding
	// starts; the link's other partitions are forwarded meanwhile.
	Settling bool
	// Err says why the partition is not forwarded, if it is refused.
	Err string
}

// The directions of PartitionStatus.
const (
	DirectionPush = "push"
	DirectionPull = "pull"
)

// Status is a link's state.
type Status struct {
	Name string
	// Sent counts every record the far side acknowledged since start,
	// SentBytes their bytes; RecordsPerSec and BytesPerSec are the send
	// rate over the last rateWindow.
	Sent, SentBytes            int64
	RecordsPerSec, BytesPerSec float64
	// Up: a session holds its clients and the far side answered within
	// DownAfter. LastUp is the last time it answered (zero: never since
	// start); Started when the link started or was last resumed, so a
	// link not up since then has been down since then.
	Up      bool
	LastUp  time.Time
	Started time.Time
	// Paused: stopped by SetPaused (`wren uplink pause`); a paused link
	// is not up, and not down either.
	Paused bool
	// LastError is the last error that stopped a session ("" if none),
	// at LastErrorAt.
	LastError   string
	LastErrorAt time.Time
	// BacklogFull: the link's backlog on this node passed its
	// max.backlog.bytes at the broker's last look. Dropped counts the
	// records (offsets) retention deleted before they were forwarded,
	// DroppedBytes their segments' bytes, LastDrop the last time
	// (drop-oldest); RefusedWrites the produce partitions refused
	// (refuse-writes). Since start.
	BacklogFull           bool
	Dropped, DroppedBytes int64
	LastDrop              time.Time
	RefusedWrites         int64
	Partitions            []PartitionStatus
}

// DownFor is how long the link has been down at now: 0 when up or
// paused, else since the far side last answered or the link started
// (or resumed), whichever is later.
func (s Status) DownFor(now time.Time) time.Duration {
	if s.Up || s.Paused {
		return 0
	}
	since := s.LastUp
	if since.Before(s.Started) {
		since = s.Started
	}
	return max(now.Sub(since), 0)
}

// Start runs the link until Close.
func Start(o Options) *Link {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Refresh <= 0 {
		o.Refresh = 5 * time.Second
	}
	if o.TailTimeout <= 0 {
		o.TailTimeout = 15 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Link{o: o, log: o.Logger.With("uplink", o.Config.Name), cancel: cancel, done: make(chan struct{}), parts: map[tp]*partState{},
		pulls: map[tp]*partState{}, started: time.Now(), wake: make(chan struct{}, 1), paused: o.Paused}
	if o.Config.MaxBytesPerSecond > 0 {
		l.bucket = newBucket(o.Config.MaxBytesPerSecond, time.Now)
		l.pullBucket = newBucket(o.Config.MaxBytesPerSecond, time.Now)
	}
	go l.run(ctx)
	return l
}

// Name is the link's name, NAME of [uplink.NAME].
func (l *Link) Name() string { return l.o.Config.Name }

// Config is the link's config.
func (l *Link) Config() config.Uplink { return l.o.Config }

// links are the configs of the links this node runs, for the loop
// checks (Options.Links).
func (l *Link) links() []config.Uplink {
	if l.o.Links == nil {
		return []config.Uplink{l.o.Config}
	}
	links := l.o.Links()
	if !slices.ContainsFunc(links, func(u config.Uplink) bool { return u.Name == l.o.Config.Name }) {
		links = append(links, l.o.Config) // not listed yet: starting
	}
	return links
}

// Close stops the link: it waits for the producer's requests in flight
// to be answered (bounded), so nothing it sent lands after Close returns
// unless the far side's answer never came.
func (l *Link) Close() error {
	l.cancel()
	<-l.done
	return nil
}

// downAfter is how long the far side may stay silent before the link
// counts as down: three refreshes (the session pings it every refresh).
func (l *Link) downAfter() time.Duration { return max(3*l.o.Refresh, time.Second) }

// markUp notes that the far side answered.
func (l *Link) markUp() {
	l.mu.Lock()
	l.lastUp = time.Now()
	l.mu.Unlock()
}

// Status is a snapshot of the link's state, partitions in name order.
// With Options.Backlog, each partition's backlog is measured in the
// local log now (so it grows while the far side is away, whatever the
// last fetch saw), outside the link's lock.
func (l *Link) Status() Status {
	now := time.Now()
	l.mu.Lock()
	s := Status{Name: l.o.Config.Name, Sent: l.sent, SentBytes: l.sentBytes, LastError: l.lastErr, LastErrorAt: l.errAt,
		LastUp: l.lastUp, Started: l.started, Paused: l.paused}
	s.Up = !l.paused && l.inSession && !l.lastUp.IsZero() && now.Sub(l.lastUp) < l.downAfter()
	s.RecordsPerSec, s.BytesPerSec = l.rate.perSecond(now)
	l.holdStatus(&s)
	hwms := make([]int64, 0, len(l.parts)+len(l.pulls))
	for k, p := range l.parts {
		ps := PartitionStatus{Topic: k.topic, Partition: k.partition, Direction: DirectionPush, FarTopic: l.o.Config.RemoteTopicPrefix + k.topic,
			Active: p.active, Next: p.next, Sent: p.sent, SentBytes: p.sentBytes, Settling: p.settling, Err: p.err}
		ps.RecordsPerSec, ps.BytesPerSec = p.rate.perSecond(now)
		s.Partitions = append(s.Partitions, ps)
		hwms = append(hwms, p.hwm)
	}
	for k, p := range l.pulls {
		ps := PartitionStatus{Topic: k.topic, Partition: k.partition, Direction: DirectionPull,
			FarTopic: strings.TrimPrefix(k.topic, l.o.Config.PullLocalTopicPrefix),
			Active:   p.active, Next: p.next, Sent: p.sent, SentBytes: p.sentBytes, Settling: p.settling, Err: p.err}
		ps.RecordsPerSec, ps.BytesPerSec = p.rate.perSecond(now)
		s.Partitions = append(s.Partitions, ps)
		hwms = append(hwms, p.hwm)
	}
	l.mu.Unlock()
	for i := range s.Partitions {
		ps := &s.Partitions[i]
		hwm := hwms[i]
		if ps.Direction == DirectionPull {
			// Far offsets: the local log holds none of the backlog yet.
			if l.o.Backlog != nil {
				if b, ok := l.o.Backlog(ps.Topic, ps.Partition, -1); ok {
					ps.Leader = b.Leader
				}
			}
			if ps.Next >= 0 && hwm > ps.Next {
				ps.Backlog = hwm - ps.Next
			}
			continue
		}
		if l.o.Backlog != nil && ps.Next >= 0 {
			b, ok := l.o.Backlog(ps.Topic, ps.Partition, ps.Next)
			if !ok || !b.Leader {
				continue // not this node's to forward: no backlog here
			}
			ps.Leader, hwm, ps.BacklogBytes = true, b.HighWatermark, b.Bytes
			if !b.Oldest.IsZero() && b.HighWatermark > ps.Next {
				ps.BacklogSeconds = max(now.Sub(b.Oldest).Seconds(), 0)
			}
		}
		if ps.Next >= 0 && hwm > ps.Next {
			ps.Backlog = hwm - ps.Next
		} else {
			ps.BacklogBytes, ps.BacklogSeconds = 0, 0
		}
	}
	sort.Slice(s.Partitions, func(i, j int) bool {
		a, b := s.Partitions[i], s.Partitions[j]
		if a.Direction != b.Direction {
			return a.Direction == DirectionPush
		}
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return s
}

// errPaused is the cause that ends a session when the link is paused.
var errPaused = errors.New("uplink paused")

// SetPaused pauses or resumes the link. Pausing ends the session as any
// stop does (every produce request in flight answered, the clients
// closed); resuming starts a new one, which reads each far tail again.
// A paused link is neither up nor in error.
func (l *Link) SetPaused(paused bool) {
	l.mu.Lock()
	changed := l.paused != paused
	l.paused = paused
	if changed && !paused {
		l.started = time.Now()
	}
	stop := l.stopSession
	l.mu.Unlock()
	if !changed {
		return
	}
	if paused {
		l.log.Info("uplink paused")
		if stop != nil {
			stop(errPaused)
		}
	} else {
		l.log.Info("uplink resumed")
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// waitUnpaused returns once the link is not paused, false if ctx ends
// first.
func (l *Link) waitUnpaused(ctx context.Context) bool {
	for {
		l.mu.Lock()
		paused := l.paused
		l.mu.Unlock()
		if !paused {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-l.wake:
		}
	}
}

// run runs sessions until ctx ends, backing off after a failed one, and
// none while the link is paused.
func (l *Link) run(ctx context.Context) {
	defer close(l.done)
	c := l.o.Config
	l.log.Info("uplink started", "bootstrap.servers", c.BootstrapServers, "topics", c.Topics, "pull.topics", c.PullTopics, "security.protocol", c.SecurityProtocol,
		"compression", c.Compression, "max.bytes.per.second", c.MaxBytesPerSecond)
	backoff := time.Second
	for {
		if !l.waitUnpaused(ctx) {
			l.log.Info("uplink stopped")
			return
		}
		sctx, scancel := context.WithCancelCause(ctx)
		l.mu.Lock()
		if l.paused {
			l.mu.Unlock()
			scancel(nil)
			continue
		}
		l.stopSession = scancel
		l.mu.Unlock()
		began := time.Now()
		err := l.session(sctx)
		paused := errors.Is(context.Cause(sctx), errPaused)
		scancel(nil)
		if ctx.Err() != nil {
			l.log.Info("uplink stopped")
			return
		}
		l.mu.Lock()
		l.stopSession = nil
		l.inSession = false
		if !paused {
			l.lastErr, l.errAt = err.Error(), time.Now()
		}
		for _, p := range l.parts {
			p.active, p.pending, p.settling = false, 0, false
		}
		for _, p := range l.pulls {
			p.active, p.pending, p.settling = false, 0, false
		}
		l.mu.Unlock()
		if paused {
			backoff = time.Second
			continue
		}
		if time.Since(began) > time.Minute {
			backoff = time.Second
		}
		l.log.Warn("uplink session ended; retrying", "err", err, "retry.in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			l.log.Info("uplink stopped")
			return
		case <-l.wake: // paused (or resumed) meanwhile: look again
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// The link's client buffers, bounded for a small host: the bytes of one
// local fetch, the records fetched in one poll, and the records the far
// side's producer holds. With 1 KiB records a link holds about 10 MiB of
// them; kgo's defaults (50 MiB fetches, 50,000 records buffered) took an
// edge node from 40 to about 200 MiB resident in a catch-up.
const (
	localFetchMaxBytes = 4 << 20
	pollRecords        = 1000
	maxBufferedRecords = 4096
)

// session is one run with fresh clients: it recovers each partition's
// cursor from the far side's tail and forwards until an error. Any
// error ends the session; the next one starts from the far side's tail
// again, which is what keeps every record there exactly once.
func (l *Link) session(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cfg := l.o.Config
	// Metadata answers are cached for at most a refresh: topics and
	// leaders are read that often, and a far topic just created is seen.
	age := kgo.MetadataMinAge(min(l.o.Refresh, 5*time.Second))
	localOpts := []kgo.Opt{kgo.SeedBrokers(l.o.Local), kgo.ClientID("wren-uplink-" + cfg.Name), age}
	if l.o.LocalDial != nil {
		localOpts = append(localOpts, kgo.Dialer(l.o.LocalDial))
	}
	local, err := kgo.NewClient(append(localOpts,
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// An offset out of range ends the session rather than jump
		// anywhere: the next one holds the cursor against the local log
		// (checkLocal).
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// Closing the client waits out a fetch in flight: a short long
		// poll keeps the broker's close prompt.
		kgo.FetchMaxWait(500*time.Millisecond),
		// An edge host is small: a fetch holds at most 4 MiB (kgo's
		// default is 50), one partition's share 1 MiB as Kafka's.
		kgo.FetchMaxBytes(localFetchMaxBytes))...)
	if err != nil {
		return fmt.Errorf("local client: %w", err)
	}
	defer local.Close()
	far, err := remoteOpts(cfg)
	if err != nil {
		return err
	}
	remote, err := kgo.NewClient(append(far, age,
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		// The producer buffers at most this many records (kgo's default
		// is 50,000): past it forward waits, and the local log stays the
		// buffer. A byte bound is not used: kgo fails a record larger
		// than it outright, which would stop the link on that record.
		kgo.MaxBufferedRecords(maxBufferedRecords),
		kgo.ProducerBatchCompression(codec(cfg.Compression)),
		// Where kgo would reset its producer id and carry on (the far side
		// lost its sequence state), the session ends instead and the next
		// one reads the far tail again: a reset could resend a record the
		// far side already holds.
		kgo.StopProducerOnDataLossDetected())...)
	if err != nil {
		return fmt.Errorf("remote client: %w", err)
	}
	defer func() {
		// Stop before the next start: every request in flight gets its
		// answer before the next session reads the far side's tail.
		actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
		if aerr := remote.AbortBufferedRecords(actx); aerr != nil {
			l.log.Warn("uplink: produce requests still unanswered at session end", "err", aerr)
		}
		acancel()
		remote.Close()
	}()
	s := &session{l: l, ctx: ctx, cancel: cancel, local: local, remote: remote, far: far,
		localAdm: kadm.NewClient(local), remoteAdm: kadm.NewClient(remote), active: map[tp]bool{}, expect: map[tp]int64{}, produced: map[tp]bool{}, settled: map[tp]bool{}, settling: map[tp]*settling{}, loops: map[string]bool{}}
	if s.localCluster, err = clusterID(ctx, s.localAdm); err != nil {
		return fmt.Errorf("local metadata: %w", err)
	}
	if s.remoteCluster, err = clusterID(ctx, s.remoteAdm); err != nil {
		return fmt.Errorf("remote metadata: %w", err)
	}
	// The far side answered: the session is up while it keeps answering
	// (a ping every refresh, or a produce acknowledged).
	l.mu.Lock()
	l.inSession, l.lastUp = true, time.Now()
	l.mu.Unlock()
	var pings sync.WaitGroup
	pings.Add(1)
	go func() {
		defer pings.Done()
		s.ping()
	}()
	if len(cfg.PullTopics) > 0 {
		// The pull side runs beside the push side with its own clients;
		// an error of either ends the session, and both stop (their
		// requests in flight answered) before the next one starts.
		pings.Add(1)
		go func() {
			defer pings.Done()
			cancel(l.pull(ctx, cancel, s.localCluster, s.remoteCluster))
		}()
	}
	defer func() { cancel(nil); pings.Wait() }()
	if len(cfg.Topics) == 0 {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return s.run()
}

// remoteOpts are the far side's seeds, client id and security: TLS and
// SASL as the link's config gives them, the files and password read
// again for each session (a renewed certificate or password is used from
// the next one).
func remoteOpts(cfg config.Uplink) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.BootstrapServers...), kgo.ClientID("wren-uplink-" + cfg.Name)}
	tc, err := cfg.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("far side TLS: %w", err)
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if cfg.SASL() {
		password, err := cfg.Password()
		if err != nil {
			return nil, err
		}
		var m sasl.Mechanism
		switch cfg.SASLMechanism {
		case "PLAIN":
			m = plain.Auth{User: cfg.SASLUsername, Pass: password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: cfg.SASLUsername, Pass: password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: cfg.SASLUsername, Pass: password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("sasl.mechanism %q is not known", cfg.SASLMechanism)
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// codec is compression's kgo codec.
func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func clusterID(ctx context.Context, adm *kadm.Client) (string, error) {
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", err
	}
	if m.Cluster == "" {
		return "", errors.New("the cluster has no id")
	}
	return m.Cluster, nil
}
