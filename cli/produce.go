package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// ErrProduce: some records were not acknowledged.
var ErrProduce = errors.New("cli: produce failed")

// defaultMaxMessageBytes is Kafka's max.message.bytes default (1 MiB plus
// the batch overhead): a longer line could not be stored anyway.
const defaultMaxMessageBytes = 1048588

func produceCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "produce",
		Usage:     "produce one record per line of stdin (kafka-console-producer, rpk topic produce)",
		ArgsUsage: "TOPIC",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "key of every record"},
			&ucli.StringFlag{Name: "key-separator", Aliases: []string{"K"}, Usage: "split each line into key and value at the first SEP"},
			&ucli.StringSliceFlag{Name: "header", Aliases: []string{"H"}, Usage: "record header k=v (repeatable)"},
			&ucli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
			&ucli.StringFlag{Name: "acks", Value: "all", Usage: "all, 1 or 0"},
			&ucli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, Usage: "produce to this partition (-1: partition by key)"},
			&ucli.IntFlag{Name: "max-message-bytes", Value: defaultMaxMessageBytes, Usage: "longest line accepted"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one TOPIC")
			if err != nil {
				return err
			}
			p, err := newLineProducer(c)
			if err != nil {
				return err
			}
			opts, err := producerOpts(c.String("acks"), c.String("compression"))
			if err != nil {
				return err
			}
			if p.partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			}
			if d := c.Duration("timeout"); d > 0 {
				opts = append(opts, kgo.RecordDeliveryTimeout(d))
			}
			cl, err := newClient(c, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			// Lines read while the topic is checked count from when they
			// were read: input that is there at the start must be
			// acknowledged within --timeout of the start.
			readCtx, stopReading := context.WithCancel(c.Context)
			defer stopReading()
			lines, readErr := p.read(readCtx, env.Stdin)
			if err := requireTopics(c, cl, p.topic); err != nil {
				return err
			}
			bar := newProgress(env.Stderr, -1, "producing")
			p.bar = bar
			start := time.Now()
			runErr := p.run(c.Context, cl, lines, readErr, c.Duration("timeout"))
			if errors.Is(runErr, errNotAcknowledged) {
				runErr = fmt.Errorf("%w: no acknowledgement from the broker at %s within --timeout %s for %d records: %w",
					ErrProduce, c.String("bootstrap-server"), c.Duration("timeout"), p.unacknowledged(), context.DeadlineExceeded)
			}
			bar.finish()
			sum := p.summary(time.Since(start))
			// The JSON summary is the command's output (stdout, for
			// scripts); the text line is a note beside the progress
			// bar (stderr), as kafka-console-producer prints nothing.
			out := env.Stderr
			if format == formatJSON {
				out = env.Stdout
			}
			err = printResult(out, format, sum, func(w io.Writer) {
				fmt.Fprintf(w, "Produced %d records (%d bytes) to %s in %s.\n",
					sum.Records, sum.Bytes, sum.Topic, sum.Elapsed)
			})
			if err != nil {
				return err
			}
			if runErr != nil {
				return runErr
			}
			if sum.Failed > 0 {
				return fmt.Errorf("%w: %d of %d records: %w", ErrProduce, sum.Failed, sum.Failed+sum.Records, p.firstErr)
			}
			return nil
		},
	}
}

// producerOpts maps --acks and --compression to kgo options. acks 1 and 0
// cannot be idempotent (Kafka requires acks=all for idempotence).
func producerOpts(acks, compression string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("%w: --acks %q: want all, 1 or 0", ErrUsage, acks)
	}
	codec, err := compressionCodec(compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	codecs := map[string]kgo.CompressionCodec{
		"none":   kgo.NoCompression(),
		"gzip":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"zstd":   kgo.ZstdCompression(),
	}
	codec, ok := codecs[name]
	if !ok {
		return kgo.CompressionCodec{}, fmt.Errorf("%w: compression %q: want none, gzip, snappy, lz4 or zstd", ErrUsage, name)
	}
	return codec, nil
}

// lineProducer turns lines into records and counts what was acknowledged.
type lineProducer struct {
	topic     string
	key       []byte // nil: no fixed key
	separator []byte // nil: no key in the line
	headers   []kgo.RecordHeader
	partition int32
	maxBytes  int
	bar       *progress

	mu sync.Mutex
	// readAt holds when each record not yet acknowledged (nor failed) was
	// read, by its line number; at most kgo's buffer of records.
	readAt   map[int64]time.Time
	acked    int64
	bytes    int64
	failed   int64
	firstErr error
}

func newLineProducer(c *ucli.Context) (*lineProducer, error) {
	p := &lineProducer{topic: c.Args().First(), maxBytes: c.Int("max-message-bytes")}
	if c.IsSet("key") {
		p.key = []byte(c.String("key"))
	}
	if c.IsSet("key-separator") {
		if c.String("key-separator") == "" {
			return nil, fmt.Errorf("%w: --key-separator is empty", ErrUsage)
		}
		if p.key != nil {
			return nil, fmt.Errorf("%w: --key and --key-separator exclude each other", ErrUsage)
		}
		p.separator = []byte(c.String("key-separator"))
	}
	for _, kv := range c.StringSlice("header") {
		k, v, err := splitKV(kv, "--header")
		if err != nil {
			return nil, err
		}
		p.headers = append(p.headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	part := c.Int("partition")
	if part < -1 || part > 1<<31-1 {
		return nil, fmt.Errorf("%w: --partition %d", ErrUsage, part)
	}
	p.partition = int32(part)
	if p.maxBytes < 1 {
		return nil, fmt.Errorf("%w: --max-message-bytes %d", ErrUsage, p.maxBytes)
	}
	return p, nil
}

// inputLine is a line of input and when it was read.
type inputLine struct {
	line []byte
	at   time.Time
}

// read reads in on its own goroutine, so that a cancelled ctx (SIGINT)
// ends the command even while stdin blocks. lines closes at the end of
// the input (or on ctx); readErr then holds why it ended, nil at EOF.
func (p *lineProducer) read(ctx context.Context, in io.Reader) (<-chan inputLine, <-chan error) {
	lines := make(chan inputLine, 64)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		// The initial capacity counts toward the limit too: keep it below.
		sc.Buffer(make([]byte, 0, min(64<<10, p.maxBytes+1)), p.maxBytes+1)
		for sc.Scan() {
			line := inputLine{bytes.Clone(sc.Bytes()), time.Now()}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
		if errors.Is(sc.Err(), bufio.ErrTooLong) {
			readErr <- fmt.Errorf("%w: a line is longer than --max-message-bytes (%d)", ErrUsage, p.maxBytes)
			return
		}
		readErr <- sc.Err()
	}()
	return lines, readErr
}

// errNotAcknowledged: a record waited longer than --timeout for its
// acknowledgement.
var errNotAcknowledged = errors.New("cli: record not acknowledged within --timeout")

// run produces every line, then waits for every acknowledgement. With a
// timeout, it gives up (errNotAcknowledged) once a record has waited that
// long since its line was read: kgo's delivery timeout does not end every
// wait (a producer id the broker is slow to give holds records beyond
// it), and a command whose input is all there at the start must end
// within --timeout. Time spent waiting for input with every record
// acknowledged does not count, so a producer fed by hand or by a slow
// pipe keeps running.
func (p *lineProducer) run(parent context.Context, cl *kgo.Client, lines <-chan inputLine, readErr <-chan error, timeout time.Duration) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	p.mu.Lock()
	p.readAt = map[int64]time.Time{}
	p.mu.Unlock()
	if timeout > 0 {
		go p.watch(ctx, cancel, timeout)
	}
	var n int64
	var err error
loop:
	for {
		select {
		case in, ok := <-lines:
			if !ok {
				select {
				case err = <-readErr:
				default:
				}
				break loop
			}
			n++
			r, rerr := p.record(in.line, int(n))
			if rerr != nil {
				err = rerr
				break loop
			}
			seq := n
			p.mu.Lock()
			p.readAt[seq] = in.at
			p.mu.Unlock()
			cl.Produce(ctx, r, func(r *kgo.Record, err error) { p.acknowledged(seq, r, err) })
		case <-ctx.Done():
			break loop
		}
	}
	ferr := cl.Flush(ctx)
	if errors.Is(context.Cause(ctx), errNotAcknowledged) {
		return errNotAcknowledged
	}
	if ferr != nil && err == nil && ctx.Err() == nil {
		err = fmt.Errorf("cli: flush: %w", ferr)
	}
	return err
}

// watch ends ctx with errNotAcknowledged once the oldest record not yet
// acknowledged was read timeout ago.
func (p *lineProducer) watch(ctx context.Context, cancel context.CancelCauseFunc, timeout time.Duration) {
	t := time.NewTicker(min(max(timeout/20, time.Millisecond), 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if at, ok := p.oldestUnacknowledged(); ok && time.Since(at) >= timeout {
			cancel(errNotAcknowledged)
			return
		}
	}
}

// oldestUnacknowledged is when the oldest record still waiting for its
// acknowledgement was read.
func (p *lineProducer) oldestUnacknowledged() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest time.Time
	for _, at := range p.readAt {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return oldest, !oldest.IsZero()
}

// unacknowledged counts the records not acknowledged: failed, or still
// waiting.
func (p *lineProducer) unacknowledged() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed + int64(len(p.readAt))
}

func (p *lineProducer) record(line []byte, n int) (*kgo.Record, error) {
	r := &kgo.Record{Topic: p.topic, Key: p.key, Value: line, Headers: p.headers}
	if p.separator != nil {
		k, v, ok := bytes.Cut(line, p.separator)
		if !ok {
			return nil, fmt.Errorf("%w: line %d has no key separator %q", ErrUsage, n, p.separator)
		}
		r.Key, r.Value = k, v
	}
	if p.partition >= 0 {
		r.Partition = p.partition
	}
	return r, nil
}

func (p *lineProducer) acknowledged(seq int64, r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.readAt, seq)
	if err != nil {
		p.failed++
		if p.firstErr == nil {
			p.firstErr = err
		}
		return
	}
	p.acked++
	p.bytes += int64(len(r.Key) + len(r.Value))
	p.bar.add(1)
}

type produceSummary struct {
	Topic   string        `json:"topic"`
	Records int64         `json:"records"`
	Bytes   int64         `json:"bytes"`
	Failed  int64         `json:"failed"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

func (p *lineProducer) summary(elapsed time.Duration) produceSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	return produceSummary{Topic: p.topic, Records: p.acked, Bytes: p.bytes, Failed: p.failed,
		Elapsed: elapsed.Round(time.Millisecond)}
}
