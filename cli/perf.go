package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// maxPerfRecordBytes bounds --record-size.
const maxPerfRecordBytes = 16 << 20

func perfCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "perf",
		Usage: "measure produce and consume throughput and latency (kafka-producer-perf-test, kafka-consumer-perf-test)",
		Subcommands: []*ucli.Command{
			perfProduceCommand(env),
			perfConsumeCommand(env),
			perfMetadataCommand(env),
		},
	}
}

// perfGCPercent is the garbage collector's target that `wren perf
// produce` and `wren perf consume` run with, unless GOGC is set: the
// heap may grow to five times what is live before a collection, instead
// of Go's two. A perf client's live heap is small (a few fetch responses
// or record batches), and Go's smallest heap goal is 4 MiB at GOGC=100,
// so at the default every few 1 MiB fetch responses start a collection:
// measured over TLS on two cores, marking and sweeping took a third of
// the consumer's CPU, which the broker then lacks. Kafka's perf tools run
// likewise with room to spare, a 512 MiB heap. Five times a live heap of
// tens of MiB stays far below that.
const perfGCPercent = 400

// perfGC sets the garbage collector's target to perfGCPercent unless the
// user chose one with GOGC, and returns the function that restores the
// previous target (the commands also run inside tests).
func perfGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(perfGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// perfFlags are the flags both perf commands share.
func perfFlags(extra ...ucli.Flag) []ucli.Flag {
	return clientFlags(append([]ucli.Flag{
		&ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic"},
		&ucli.Int64Flag{Name: "num-records", Aliases: []string{"messages"}, Usage: "records to produce or consume (or use --duration)"},
		&ucli.DurationFlag{Name: "duration", Usage: "run this long instead of --num-records"},
		&ucli.DurationFlag{Name: "reporting-interval", Value: 5 * time.Second, Usage: "time between periodic lines"},
	}, extra...)...)
}

// perfLimit reads --num-records / --duration: exactly one must be given.
func perfLimit(c *ucli.Context) (records int64, d time.Duration, err error) {
	records, d = c.Int64("num-records"), c.Duration("duration")
	if (records > 0) == (d > 0) {
		return 0, 0, fmt.Errorf("%w: give one of --num-records N (> 0) or --duration D (> 0)", ErrUsage)
	}
	if records < 0 || d < 0 {
		return 0, 0, fmt.Errorf("%w: --num-records and --duration must be positive", ErrUsage)
	}
	if c.Duration("reporting-interval") <= 0 {
		return 0, 0, fmt.Errorf("%w: --reporting-interval must be positive", ErrUsage)
	}
	return records, d, nil
}

// ---- perf produce ----

func perfProduceCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "produce",
		Usage: "produce fixed-size records and print kafka-producer-perf-test's lines",
		Flags: perfFlags(timeoutFlag(),
			&ucli.IntFlag{Name: "record-size", Value: 100, Usage: "value size in bytes"},
			&ucli.Float64Flag{Name: "throughput", Value: -1, Usage: "records/s to aim at (-1: unlimited)"},
			&ucli.StringFlag{Name: "acks", Value: "all", Usage: "all, 1 or 0"},
			&ucli.BoolFlag{Name: "idempotence", Value: true, Usage: "idempotent writes, as Kafka's enable.idempotence (needs --acks all; --idempotence=false to turn off)"},
			&ucli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
			&ucli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: -1, Usage: "partitions of the topic if it must be created (-1: broker default)"},
			&ucli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "replication factor of the topic if it must be created (-1: broker default)"},
			&ucli.StringSliceFlag{Name: "producer-props", Usage: "producer settings as kafka-producer-perf-test's: batch.size=BYTES, linger.ms=MS (repeatable or comma-separated)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			records, duration, err := perfLimit(c)
			if err != nil {
				return err
			}
			defer perfGC()()
			size := c.Int("record-size")
			if size < 0 || size > maxPerfRecordBytes {
				return fmt.Errorf("%w: --record-size %d: want 0..%d", ErrUsage, size, maxPerfRecordBytes)
			}
			opts, err := producerOpts(c.String("acks"), c.String("compression"))
			if err != nil {
				return err
			}
			idempotence, err := idempotenceOpts(c.String("acks"), c.Bool("idempotence"), c.IsSet("idempotence"))
			if err != nil {
				return err
			}
			opts = append(opts, idempotence...)
			props, err := parsePerfProducerProps(c.StringSlice("producer-props"))
			if err != nil {
				return err
			}
			opts = append(opts, props.opts()...)
			if d := c.Duration("timeout"); d > 0 {
				opts = append(opts, kgo.RecordDeliveryTimeout(d))
			}
			cl, err := newClient(c, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			topic := c.String("topic")
			if err := ensureTopic(c, cl, topic, c.Int("partitions"), c.Int("replication-factor")); err != nil {
				return err
			}
			run := &perfProducer{
				topic: topic, records: records, duration: duration, throughput: c.Float64("throughput"),
				payloads: newPayloads(size), interval: c.Duration("reporting-interval"),
				out: env.Stdout, quiet: format == formatJSON,
				timeout: c.Duration("timeout"), brokers: c.String("bootstrap-server"),
			}
			if records > 0 {
				run.bar = newProgress(env.Stderr, records, "producing")
			} else {
				run.bar = newProgress(env.Stderr, -1, "producing")
			}
			return run.run(c.Context, cl, format)
		},
	}
}

// idempotenceOpts maps --idempotence to kgo options, as Kafka's producer
// treats enable.idempotence: on by default, but only with acks=all. Left
// at its default, it gives way quietly to --acks 1 or 0 (producerOpts
// already turns it off there); asked for explicitly with them, it is a
// usage error, as Kafka's ConfigException.
func idempotenceOpts(acks string, idempotence, explicit bool) ([]kgo.Opt, error) {
	allAcks := acks == "all" || acks == "-1"
	switch {
	case !idempotence:
		return []kgo.Opt{kgo.DisableIdempotentWrite()}, nil
	case explicit && !allAcks:
		return nil, fmt.Errorf("%w: --idempotence needs --acks all, got --acks %s", ErrUsage, acks)
	}
	return nil, nil
}

// perfProducerProps are the --producer-props perf produce understands:
// the batching settings, so that it and kafka-producer-perf-test can be
// given one load. Zero leaves franz-go's default (a batch of up to
// 1000012 bytes, 10 ms linger; Java's are 16384 bytes and 5 ms).
type perfProducerProps struct {
	batchBytes int32
	linger     time.Duration
	lingerSet  bool
}

// Bounds franz-go accepts for a batch and a linger.
const (
	minPerfBatchBytes = 512
	maxPerfBatchBytes = 1 << 30
	maxPerfLingerMs   = 60_000
)

// parsePerfProducerProps reads repeated --producer-props values, each one
// key=value or several joined by commas (no value of these keys holds a
// comma).
func parsePerfProducerProps(values []string) (perfProducerProps, error) {
	var p perfProducerProps
	var kvs []string
	for _, v := range values {
		kvs = append(kvs, strings.Split(v, ",")...)
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("%w: --producer-props %q: want key=value", ErrUsage, kv)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k = strings.TrimSpace(k); k {
		case "batch.size":
			if err != nil || n < minPerfBatchBytes || n > maxPerfBatchBytes {
				return p, fmt.Errorf("%w: --producer-props batch.size=%s: want bytes in %d..%d", ErrUsage, v, minPerfBatchBytes, maxPerfBatchBytes)
			}
			p.batchBytes = int32(n)
		case "linger.ms":
			if err != nil || n < 0 || n > maxPerfLingerMs {
				return p, fmt.Errorf("%w: --producer-props linger.ms=%s: want milliseconds in 0..%d", ErrUsage, v, maxPerfLingerMs)
			}
			p.linger, p.lingerSet = time.Duration(n)*time.Millisecond, true
		default:
			return p, fmt.Errorf("%w: --producer-props %s: not a setting perf produce takes (batch.size, linger.ms; --acks, --compression and --idempotence are flags)", ErrUsage, k)
		}
	}
	return p, nil
}

func (p perfProducerProps) opts() []kgo.Opt {
	var opts []kgo.Opt
	if p.batchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(p.batchBytes))
	}
	if p.lingerSet {
		opts = append(opts, kgo.ProducerLinger(p.linger))
	}
	return opts
}

// ensureTopic creates topic if it does not exist.
func ensureTopic(c *ucli.Context, cl *kgo.Client, topic string, partitions, rf int) error {
	if partitions == 0 || partitions < -1 || partitions > math.MaxInt32 || rf == 0 || rf < -1 || rf > math.MaxInt16 {
		return fmt.Errorf("%w: --partitions %d --replication-factor %d", ErrUsage, partitions, rf)
	}
	ctx, cancel := withTimeout(c)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return noAnswer(c, cl, kafkaErr("create topic "+topic, err, resp.ErrMessage))
	}
	return nil
}

// payloads hands out record values: slices of one pool of random capital
// letters (seeded as Kafka's perf test, so runs are alike), at a different
// offset each time so that compression sees varied data without a fresh
// random value per record.
type payloads struct {
	pool []byte
	size int
}

func newPayloads(size int) *payloads {
	n := max(1<<20, 2*size)
	rng := rand.New(rand.NewPCG(0, 0))
	pool := make([]byte, n)
	for i := range pool {
		pool[i] = byte('A' + rng.IntN(26))
	}
	return &payloads{pool: pool, size: size}
}

func (p *payloads) next(i int64) []byte {
	span := int64(len(p.pool) - p.size + 1)
	start := (i % span) * 7919 % span
	return p.pool[start : start+int64(p.size)]
}

type perfProducer struct {
	topic      string
	records    int64
	duration   time.Duration
	throughput float64
	payloads   *payloads
	interval   time.Duration
	out        io.Writer
	quiet      bool // JSON: no periodic lines
	bar        *progress

	stats    *perfStats
	mu       sync.Mutex
	failed   int64
	firstErr error

	// timeout is --timeout: the run gives up once records have waited
	// that long with no acknowledgement coming (kgo's delivery timeout
	// does not end a wait for a producer id). brokers names them then.
	timeout time.Duration
	brokers string
	// waiting counts records sent and not yet acknowledged or failed;
	// progressNs is when the last acknowledgement came, or when waiting
	// last rose from 0 (UnixNano). Atomics: the send path takes no lock.
	waiting    atomic.Int64
	progressNs atomic.Int64
}

// watch ends ctx with errNotAcknowledged once records have waited
// p.timeout without an acknowledgement.
func (p *perfProducer) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	t := time.NewTicker(min(max(p.timeout/20, time.Millisecond), 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if p.waiting.Load() > 0 && now.Sub(time.Unix(0, p.progressNs.Load())) >= p.timeout {
				cancel(errNotAcknowledged)
				return
			}
		}
	}
}

func (p *perfProducer) run(parent context.Context, cl *kgo.Client, format outputFormat) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	if p.timeout > 0 {
		go p.watch(ctx, cancel)
	}
	start := time.Now()
	p.stats = newPerfStats(start)
	stopTicker := p.reportPeriodically()
	throttle := newThrottle(p.throughput, start)
	var sent int64
	for p.records == 0 || sent < p.records {
		if ctx.Err() != nil || (p.duration > 0 && time.Since(start) >= p.duration) {
			break
		}
		r := &kgo.Record{Topic: p.topic, Value: p.payloads.next(sent)}
		sendStart := time.Now()
		if p.waiting.Add(1) == 1 {
			p.progressNs.Store(sendStart.UnixNano())
		}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) { p.acknowledged(r, err, sendStart) })
		sent++
		if err := throttle.wait(ctx, sent); err != nil {
			break
		}
	}
	flushErr := cl.Flush(ctx)
	stopTicker()
	p.bar.finish()
	total := p.stats.total(time.Now())
	if format == formatJSON {
		if err := writeJSON(p.out, total); err != nil {
			return err
		}
	} else {
		fmt.Fprint(p.out, total.line())
	}
	if errors.Is(context.Cause(ctx), errNotAcknowledged) {
		return fmt.Errorf("%w: no acknowledgement from the broker at %s within --timeout %s; %d of %d records not acknowledged: %w",
			ErrProduce, p.brokers, p.timeout, sent-total.Records, sent, context.DeadlineExceeded)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.failed > 0:
		return fmt.Errorf("%w: %d of %d records: %w", ErrProduce, p.failed, sent, p.firstErr)
	case flushErr != nil && ctx.Err() == nil:
		return fmt.Errorf("cli: flush: %w", flushErr)
	}
	return nil
}

// acknowledged is the promise of every record: latency is measured from
// just before Produce to the broker's acknowledgement, as Kafka's
// PerfCallback does.
func (p *perfProducer) acknowledged(r *kgo.Record, err error, sendStart time.Time) {
	if err == nil {
		p.progressNs.Store(time.Now().UnixNano())
	}
	p.waiting.Add(-1)
	if err != nil {
		p.mu.Lock()
		p.failed++
		if p.firstErr == nil {
			p.firstErr = err
		}
		p.mu.Unlock()
		return
	}
	p.stats.record(time.Since(sendStart), len(r.Key)+len(r.Value))
	p.bar.add(1)
}

// reportPeriodically prints a window line every interval until the
// returned stop is called.
func (p *perfProducer) reportPeriodically() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if line, ok := p.stats.window(now); ok && !p.quiet {
					p.bar.clear()
					fmt.Fprint(p.out, line)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// throttle paces sends to a target rate, as Kafka's ThroughputThrottler:
// after n sends it waits until n/rate seconds have passed since start.
type throttle struct {
	rate  float64 // records per second; <= 0: unlimited
	start time.Time
}

func newThrottle(rate float64, start time.Time) *throttle {
	return &throttle{rate: rate, start: start}
}

func (t *throttle) wait(ctx context.Context, sent int64) error {
	if t.rate <= 0 {
		return nil
	}
	due := t.start.Add(time.Duration(float64(sent) / t.rate * float64(time.Second)))
	d := time.Until(due)
	if d < time.Millisecond {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// perfStats accumulates acknowledged records, for the whole run and for
// the current reporting window.
type perfStats struct {
	mu           sync.Mutex
	start        time.Time
	count, bytes int64
	latencySumUs uint64
	hist         histogram
	windowStart  time.Time
	windowCount  int64
	windowBytes  int64
	windowSumUs  uint64
	windowMaxUs  uint64
}

func newPerfStats(start time.Time) *perfStats {
	return &perfStats{start: start, windowStart: start}
}

func (s *perfStats) record(latency time.Duration, bytes int) {
	us := uint64(max(latency.Microseconds(), 0))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.bytes += int64(bytes)
	s.latencySumUs += us
	s.hist.record(us)
	s.windowCount++
	s.windowBytes += int64(bytes)
	s.windowSumUs += us
	s.windowMaxUs = max(s.windowMaxUs, us)
}

// window returns kafka-producer-perf-test's periodic line for the window
// that ends now, and starts a new window. An empty window prints nothing.
func (s *perfStats) window(now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		s.windowStart, s.windowCount, s.windowBytes, s.windowSumUs, s.windowMaxUs = now, 0, 0, 0, 0
	}()
	if s.windowCount == 0 {
		return "", false
	}
	elapsed := now.Sub(s.windowStart).Seconds()
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
		s.windowCount, float64(s.windowCount)/elapsed, float64(s.windowBytes)/elapsed/(1024*1024),
		float64(s.windowSumUs)/float64(s.windowCount)/1000, float64(s.windowMaxUs)/1000), true
}

// perfTotal is the final result of perf produce.
type perfTotal struct {
	Records      int64   `json:"records"`
	RecordsPerS  float64 `json:"records_per_sec"`
	MBPerS       float64 `json:"mb_per_sec"`
	AvgLatencyMs float64 `json:"avg_latency_ms"`
	MaxLatencyMs float64 `json:"max_latency_ms"`
	P50Ms        float64 `json:"p50_ms"`
	P95Ms        float64 `json:"p95_ms"`
	P99Ms        float64 `json:"p99_ms"`
	P999Ms       float64 `json:"p999_ms"`
}

func (s *perfStats) total(now time.Time) perfTotal {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := now.Sub(s.start).Seconds()
	t := perfTotal{Records: s.count}
	if elapsed > 0 {
		t.RecordsPerS = float64(s.count) / elapsed
		t.MBPerS = float64(s.bytes) / elapsed / (1024 * 1024)
	}
	if s.count > 0 {
		t.AvgLatencyMs = float64(s.latencySumUs) / float64(s.count) / 1000
	}
	t.MaxLatencyMs = float64(s.hist.max) / 1000
	ms := func(q float64) float64 { return float64(s.hist.quantile(q)) / 1000 }
	t.P50Ms, t.P95Ms, t.P99Ms, t.P999Ms = ms(0.5), ms(0.95), ms(0.99), ms(0.999)
	return t
}

// line is kafka-producer-perf-test's final line, printf for printf:
// records/sec with %f, latencies with %.2f, percentiles in whole
// milliseconds (Kafka measures with a millisecond clock and so truncates;
// so do we, from microseconds).
func (t perfTotal) line() string {
	return fmt.Sprintf("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "+
		"%d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		t.Records, t.RecordsPerS, t.MBPerS, t.AvgLatencyMs, t.MaxLatencyMs,
		int64(t.P50Ms), int64(t.P95Ms), int64(t.P99Ms), int64(t.P999Ms))
}

// ---- perf consume ----

// consumerPerfTime formats t as Kafka's default --date-format,
// yyyy-MM-dd HH:mm:ss:SSS, in local time. Go's layouts know fractional
// seconds only after '.' or ',', so the milliseconds are added by hand.
func consumerPerfTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}

func perfConsumeCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "consume",
		Usage: "consume records and print kafka-consumer-perf-test's lines",
		Flags: perfFlags(
			&ucli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up after this long without a record"},
			&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "consume in this group (default: no group, all partitions)"},
			&ucli.BoolFlag{Name: "from-latest", Usage: "start at the end of the log instead of the start"},
			&ucli.BoolFlag{Name: "show-detailed-stats", Usage: "print a line every reporting interval instead of one at the end"},
			&ucli.BoolFlag{Name: "hide-header", Usage: "do not print the header line"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			records, duration, err := perfLimit(c)
			if err != nil {
				return err
			}
			if c.Duration("timeout") <= 0 {
				return fmt.Errorf("%w: --timeout must be positive", ErrUsage)
			}
			defer perfGC()()
			pc := &perfConsumer{
				records: records, duration: duration, timeout: c.Duration("timeout"),
				interval: c.Duration("reporting-interval"), detailed: c.Bool("show-detailed-stats"),
				out: env.Stdout, format: format,
			}
			offset := kgo.NewOffset().AtStart()
			if c.Bool("from-latest") {
				offset = kgo.NewOffset().AtEnd()
			}
			opts := []kgo.Opt{kgo.ConsumeTopics(c.String("topic")), kgo.ConsumeResetOffset(offset)}
			if g := c.String("group"); g != "" {
				opts = append(opts, kgo.ConsumerGroup(g),
					kgo.OnPartitionsAssigned(pc.assigned), kgo.OnPartitionsRevoked(pc.revoked))
			}
			cl, err := newClient(c, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			if format == formatText && !c.Bool("hide-header") {
				printConsumerPerfHeader(env.Stdout, pc.detailed)
			}
			max := records
			if max == 0 {
				max = -1
			}
			pc.bar = newProgress(env.Stderr, max, "consuming")
			return pc.run(c.Context, cl)
		},
	}
}

func printConsumerPerfHeader(w io.Writer, detailed bool) {
	const rest = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	if detailed {
		fmt.Fprintf(w, "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", rest)
	} else {
		fmt.Fprintf(w, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", rest)
	}
}

type perfConsumer struct {
	records  int64
	duration time.Duration
	timeout  time.Duration
	interval time.Duration
	detailed bool
	out      io.Writer
	format   outputFormat
	bar      *progress

	// Group join time, as Kafka's ConsumerPerfRebListener measures it:
	// from start (or from losing every partition) to being assigned some.
	mu              sync.Mutex
	owned           int
	joinStart       time.Time
	joinTotal       time.Duration
	joinSinceReport time.Duration
}

func (pc *perfConsumer) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.owned == 0 {
		d := time.Since(pc.joinStart)
		pc.joinTotal += d
		pc.joinSinceReport += d
	}
	for _, ps := range assigned {
		pc.owned += len(ps)
	}
}

func (pc *perfConsumer) revoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, ps := range revoked {
		pc.owned -= len(ps)
	}
	if pc.owned <= 0 {
		pc.owned = 0
		pc.joinStart = time.Now()
	}
}

type consumerPerfTotal struct {
	StartTime     string  `json:"start_time"`
	EndTime       string  `json:"end_time"`
	MB            float64 `json:"data_consumed_mb"`
	MBPerS        float64 `json:"mb_per_sec"`
	Records       int64   `json:"data_consumed_records"`
	RecordsPerS   float64 `json:"records_per_sec"`
	RebalanceMs   int64   `json:"rebalance_time_ms"`
	FetchMs       int64   `json:"fetch_time_ms"`
	FetchMBPerS   float64 `json:"fetch_mb_per_sec"`
	FetchRecPerS  float64 `json:"fetch_records_per_sec"`
	TimedOut      bool    `json:"timed_out"`
	ExpectRecords int64   `json:"expected_records,omitempty"`
}

func (pc *perfConsumer) run(ctx context.Context, cl *kgo.Client) error {
	start := time.Now()
	pc.mu.Lock()
	pc.joinStart = start
	pc.mu.Unlock()
	var msgs, bytes, lastMsgs, lastBytes int64
	lastReport, lastConsumed := start, start
	for (pc.records == 0 || msgs < pc.records) && ctx.Err() == nil {
		now := time.Now()
		if now.Sub(lastConsumed) > pc.timeout || (pc.duration > 0 && now.Sub(start) >= pc.duration) {
			break
		}
		pollCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		max := 0
		if pc.records > 0 {
			max = int(min(pc.records-msgs, math.MaxInt32))
		}
		fetches := cl.PollRecords(pollCtx, max)
		cancel()
		if fetches.IsClientClosed() {
			break
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("cli: fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		now = time.Now()
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			msgs++
			bytes += int64(len(r.Key) + len(r.Value))
		})
		if n == 0 {
			continue
		}
		lastConsumed = now
		pc.bar.set(msgs)
		if now.Sub(lastReport) >= pc.interval {
			if pc.detailed && pc.format == formatText {
				pc.bar.clear()
				pc.printProgress(bytes, lastBytes, msgs, lastMsgs, lastReport, now)
			}
			lastReport, lastMsgs, lastBytes = now, msgs, bytes
		}
	}
	end := time.Now()
	pc.bar.finish()
	timedOut := pc.records > 0 && msgs < pc.records && ctx.Err() == nil
	if timedOut && pc.format == formatText {
		fmt.Fprintf(pc.out, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. "+
			"You can use the --timeout option to increase the timeout.\n", pc.timeout.Milliseconds())
	}
	total := pc.total(start, end, msgs, bytes)
	total.TimedOut, total.ExpectRecords = timedOut, pc.records
	if pc.format == formatJSON {
		return writeJSON(pc.out, total)
	}
	if !pc.detailed {
		// Kafka's final line, printf for printf.
		fmt.Fprintf(pc.out, "%s, %s, %s, %s, %d, %s, %d, %d, %s, %s\n",
			total.StartTime, total.EndTime, javaFloat(total.MB, 4), javaFloat(total.MBPerS, 4),
			total.Records, javaFloat(total.RecordsPerS, 4), total.RebalanceMs, total.FetchMs,
			javaFloat(total.FetchMBPerS, 4), javaFloat(total.FetchRecPerS, 4))
	}
	return nil
}

func (pc *perfConsumer) total(start, end time.Time, msgs, bytes int64) consumerPerfTotal {
	pc.mu.Lock()
	join := pc.joinTotal
	pc.mu.Unlock()
	elapsedMs := end.Sub(start).Milliseconds()
	elapsedS := float64(elapsedMs) / 1000
	fetchMs := elapsedMs - join.Milliseconds()
	mb := float64(bytes) / (1024 * 1024)
	return consumerPerfTotal{
		StartTime: consumerPerfTime(start), EndTime: consumerPerfTime(end),
		MB: mb, MBPerS: mb / elapsedS, Records: msgs, RecordsPerS: float64(msgs) / elapsedS,
		RebalanceMs: join.Milliseconds(), FetchMs: fetchMs,
		FetchMBPerS: mb / (float64(fetchMs) / 1000), FetchRecPerS: float64(msgs) / (float64(fetchMs) / 1000),
	}
}

// printProgress is Kafka's printConsumerProgress line (threadId 0).
func (pc *perfConsumer) printProgress(bytes, lastBytes, msgs, lastMsgs int64, startT, endT time.Time) {
	pc.mu.Lock()
	join := pc.joinSinceReport
	pc.joinSinceReport = 0
	pc.mu.Unlock()
	elapsedMs := float64(endT.Sub(startT).Milliseconds())
	mb := float64(bytes) / (1024 * 1024)
	intervalMB := float64(bytes-lastBytes) / (1024 * 1024)
	fetchMs := endT.Sub(startT).Milliseconds() - join.Milliseconds()
	fetchMBPerS, fetchRecPerS := 0.0, 0.0
	if fetchMs > 0 {
		fetchMBPerS = 1000 * intervalMB / float64(fetchMs)
		fetchRecPerS = 1000 * float64(msgs-lastMsgs) / float64(fetchMs)
	}
	fmt.Fprintf(pc.out, "%s, %d, %s, %s, %d, %s, %d, %d, %s, %s\n",
		consumerPerfTime(endT), 0, javaFloat(mb, 4), javaFloat(1000*intervalMB/elapsedMs, 4),
		msgs, javaFloat(float64(msgs-lastMsgs)/elapsedMs*1000, 4),
		join.Milliseconds(), fetchMs, javaFloat(fetchMBPerS, 4), javaFloat(fetchRecPerS, 4))
}

// javaFloat formats f as Java's %.Nf does, whose words for the
// non-finite values differ from Go's.
func javaFloat(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}
