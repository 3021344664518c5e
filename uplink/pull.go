package uplink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The pull side (pull.topics: central to edge): far topics written into
// local topics, far partition p into local partition p of
// pull.local.topic.prefix + the far name. doc.go ("Pulling from the far
// side") has the reasons; this is the mirror of session.go with the
// sides swapped: the resume point is read from the local log's last
// record (its newest HeaderSource names the far offset it came from),
// the local writes go through this node's internal listener with an
// idempotent producer (acks=all), and each local partition is pulled by
// the node that leads it.

// puller is one session's pull side, with its own clients: a consumer of
// the far side and a producer to this node. Partitions are keyed by
// their local topic.
type puller struct {
	l      *Link
	ctx    context.Context
	cancel context.CancelCauseFunc

	far, local       *kgo.Client
	farAdm, localAdm *kadm.Client
	// localOpts are the local client's seed and dialer, for the client
	// that reads a local partition's last record.
	localOpts []kgo.Opt
	// localCluster and remoteCluster as session's.
	localCluster, remoteCluster string

	active   map[tp]bool
	expect   map[tp]int64
	produced map[tp]bool
	settled  map[tp]bool
	settling map[tp]*settling
	queue    []queued
	bucket   *bucket
	// refused are the local topics refused whole (a loop), with why, so
	// each is logged once a session.
	refused map[string]string
}

// farTopic is the far topic local topic local is pulled from.
func (p *puller) farTopic(local string) string {
	return strings.TrimPrefix(local, p.l.o.Config.PullLocalTopicPrefix)
}

// pull runs the link's pull side until the session ends: its clients are
// its own, and closed (every local produce request in flight answered)
// before it returns.
func (l *Link) pull(ctx context.Context, cancel context.CancelCauseFunc, localCluster, remoteCluster string) (err error) {
	cfg := l.o.Config
	age := kgo.MetadataMinAge(min(l.o.Refresh, 5*time.Second))
	localOpts := []kgo.Opt{kgo.SeedBrokers(l.o.Local), kgo.ClientID("wren-uplink-pull-" + cfg.Name), age}
	if l.o.LocalDial != nil {
		localOpts = append(localOpts, kgo.Dialer(l.o.LocalDial))
	}
	local, err := kgo.NewClient(append(slices.Clone(localOpts),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(maxBufferedRecords),
		// No RecordDeliveryTimeout: kgo counts it from a record's
		// timestamp, which is the far record's (a backlog would time out
		// at once). A record is retried until the local cluster takes it
		// or the session ends (refresh ends it when a partition with
		// records in flight leaves this node).
		kgo.StopProducerOnDataLossDetected())...)
	if err != nil {
		return fmt.Errorf("pull: local client: %w", err)
	}
	defer func() {
		// The session ends with this side's error, not with the
		// aborted records' errors that follow it.
		cancel(err)
		actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
		if aerr := local.AbortBufferedRecords(actx); aerr != nil {
			l.log.Warn("uplink: local produce requests still unanswered at session end", "err", aerr)
		}
		acancel()
		local.Close()
	}()
	farOpts, err := remoteOpts(cfg)
	if err != nil {
		return err
	}
	far, err := kgo.NewClient(append(farOpts, age,
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(localFetchMaxBytes))...)
	if err != nil {
		return fmt.Errorf("pull: far client: %w", err)
	}
	defer far.Close()
	p := &puller{l: l, ctx: ctx, cancel: cancel, far: far, local: local, farAdm: kadm.NewClient(far), localAdm: kadm.NewClient(local),
		localOpts: localOpts, localCluster: localCluster, remoteCluster: remoteCluster,
		active: map[tp]bool{}, expect: map[tp]int64{}, produced: map[tp]bool{}, settled: map[tp]bool{}, settling: map[tp]*settling{},
		refused: map[string]string{}}
	if cfg.MaxBytesPerSecond > 0 {
		p.bucket = l.pullBucket
	}
	return p.run()
}

// run refreshes the partitions to pull every Refresh, starts those whose
// local end offset settled, and writes what the far client fetches.
func (p *puller) run() error {
	next := time.Now()
	for {
		if !time.Now().Before(next) {
			if err := p.refresh(); err != nil {
				return err
			}
			next = time.Now().Add(p.l.o.Refresh)
		}
		if err := p.settleDue(); err != nil {
			return err
		}
		until := next
		for _, w := range p.settling {
			if w.at.Before(until) {
				until = w.at
			}
		}
		if len(p.queue) == 0 {
			if err := p.poll(until); err != nil {
				return err
			}
		}
		for len(p.queue) > 0 && time.Now().Before(until) {
			q := p.queue[0]
			p.queue[0] = queued{}
			p.queue = p.queue[1:]
			if !p.active[q.k] {
				continue
			}
			if e := p.expect[q.k]; e >= 0 && q.r.Offset < e {
				continue
			}
			p.expect[q.k] = q.r.Offset + 1
			p.write(q.k, q.r)
			if err := context.Cause(p.ctx); err != nil {
				return err
			}
		}
	}
}

// poll fetches far records until next at the latest and queues those of
// the partitions pulled.
func (p *puller) poll(next time.Time) error {
	if len(p.active) == 0 {
		// Nothing assigned: kgo would not wait.
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		select {
		case <-p.ctx.Done():
			return context.Cause(p.ctx)
		case <-t.C:
			return nil
		}
	}
	pctx, pcancel := context.WithDeadline(p.ctx, next)
	fetches := p.far.PollRecords(pctx, pollRecords)
	pcancel()
	if err := context.Cause(p.ctx); err != nil {
		return err
	}
	var ferr error
	fetches.EachError(func(t string, part int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("far fetch %s[%d]: %w", t, part, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	prefix := p.l.o.Config.PullLocalTopicPrefix
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		k := tp{prefix + fp.Topic, fp.Partition}
		if !p.active[k] {
			return
		}
		p.l.mu.Lock()
		if st := p.l.pulls[k]; st != nil {
			st.hwm = fp.HighWatermark
		}
		p.l.mu.Unlock()
		for _, r := range fp.Records {
			p.queue = append(p.queue, queued{k, r})
		}
	})
	return nil
}

// write hands one far record to the local producer, or skips it when it
// is one of this cluster's own come back (a HeaderSource names this
// cluster). Under max.bytes.per.second it first waits for its bytes.
func (p *puller) write(k tp, r *kgo.Record) {
	for _, h := range r.Headers {
		if h.Key != HeaderSource {
			continue
		}
		if src, err := ParseSource(h.Value); err == nil && src.Cluster == p.localCluster {
			p.l.mu.Lock()
			if st := p.l.pulls[k]; st != nil && st.pending == 0 {
				st.next = r.Offset + 1
			}
			p.l.mu.Unlock()
			return
		}
	}
	headers := make([]kgo.RecordHeader, 0, len(r.Headers)+1)
	headers = append(headers, r.Headers...)
	src := Source{Cluster: p.remoteCluster, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	headers = append(headers, kgo.RecordHeader{Key: HeaderSource, Value: []byte(src.String())})
	out := &kgo.Record{Topic: k.topic, Partition: k.partition, Key: r.Key, Value: r.Value, Headers: headers, Timestamp: r.Timestamp}
	if b := p.bucket; b != nil {
		if w := b.take(RecordBytes(out)); w > 0 {
			t := time.NewTimer(w)
			select {
			case <-p.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
	p.l.mu.Lock()
	if st := p.l.pulls[k]; st != nil {
		if st.next < 0 {
			st.next = r.Offset
		}
		st.pending++
	}
	p.l.mu.Unlock()
	offset, size := r.Offset, recordBytes(out)
	p.produced[k] = true
	p.local.Produce(p.ctx, out, func(_ *kgo.Record, err error) {
		if err != nil {
			p.cancel(fmt.Errorf("pull: local produce %s[%d] (far offset %d): %w", out.Topic, out.Partition, offset, err))
			return
		}
		now := time.Now()
		p.l.mu.Lock()
		if st := p.l.pulls[k]; st != nil {
			st.pending--
			st.next = offset + 1
			st.sent++
			st.sentBytes += size
			st.rate.add(now, size)
		}
		p.l.sent++
		p.l.sentBytes += size
		p.l.rate.add(now, size)
		p.l.lastUp = now
		p.l.mu.Unlock()
	})
}

// pullState is partition k's state, made if missing. With l.mu held.
func (l *Link) pullState(k tp) *partState {
	st := l.pulls[k]
	if st == nil {
		st = &partState{next: -1}
		l.pulls[k] = st
	}
	return st
}

// refuse records why partition k is not pulled, logging a change.
// With l.mu held.
func (l *Link) refusePull(k tp, why string) {
	st := l.pullState(k)
	if st.err != why || st.active {
		l.log.Warn("uplink: partition not pulled", "topic", k.topic, "partition", k.partition, "err", why)
	}
	st.err, st.active, st.settling = why, false, false
}

// refresh reads the far topics and the local ones they are pulled into:
// a local topic missing is created with the far partition count, local
// partitions this node no longer leads stop, new ones start at the
// cursor read from the local log's tail.
func (p *puller) refresh() error {
	cfg := p.l.o.Config
	farTopics, err := p.farAdm.ListTopics(p.ctx)
	if err != nil {
		return fmt.Errorf("pull: far metadata: %w", err)
	}
	farCounts := map[string]int32{} // by local topic
	var locals []string
	links := p.l.links()
	for name, td := range farTopics {
		if td.Err != nil || td.IsInternal || !cfg.PullMatches(name) {
			continue
		}
		local := cfg.PullLocal(name)
		if why := cfg.PullLoop(name, links); why != "" {
			if p.refused[local] != why {
				p.l.log.Error("uplink: far topic not pulled", "topic", name, "err", why)
				p.refused[local] = why
			}
			p.l.mu.Lock()
			for part := range td.Partitions {
				st := p.l.pullState(tp{local, part})
				st.err, st.active = why, false
			}
			p.l.mu.Unlock()
			continue
		}
		delete(p.refused, local)
		farCounts[local] = int32(len(td.Partitions))
		locals = append(locals, local)
	}
	want := map[tp]bool{}
	if len(locals) > 0 {
		localTopics, err := p.localAdm.ListTopics(p.ctx, locals...)
		if err != nil {
			return fmt.Errorf("pull: local metadata: %w", err)
		}
		for _, local := range locals {
			td, ok := localTopics[local]
			if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				p.create(local, farCounts[local])
				continue
			}
			if td.Err != nil {
				continue
			}
			have := int32(len(td.Partitions))
			if have < farCounts[local] {
				why := fmt.Sprintf("local topic %s has %d partitions, far topic %s has %d: far partitions from %d have no local counterpart (add partitions here)",
					local, have, p.farTopic(local), farCounts[local], have)
				p.l.mu.Lock()
				for part := have; part < farCounts[local]; part++ {
					p.l.refusePull(tp{local, part}, why)
				}
				p.l.mu.Unlock()
			}
			for part, pd := range td.Partitions {
				if part < farCounts[local] && pd.Err == nil && pd.Leader == p.l.o.NodeID {
					want[tp{local, part}] = true
				}
			}
		}
	}
	// Stop before start. A partition stopped with records in flight ends
	// the session: they would be retried against a node that no longer
	// leads it, and could land after its new leader read the tail.
	var removed []tp
	for k := range p.active {
		if !want[k] {
			removed = append(removed, k)
		}
	}
	for k := range p.settling {
		if !want[k] {
			removed = append(removed, k)
		}
	}
	if len(removed) > 0 {
		p.l.mu.Lock()
		inFlight := slices.ContainsFunc(removed, func(k tp) bool { st := p.l.pulls[k]; return st != nil && st.pending > 0 })
		p.l.mu.Unlock()
		if inFlight {
			return errors.New("pull: a local partition's leadership left this node with records in flight")
		}
		p.stop(removed)
	}
	var added []tp
	for k := range want {
		if !p.active[k] && p.settling[k] == nil {
			added = append(added, k)
		}
	}
	if len(added) == 0 {
		return nil
	}
	if slices.ContainsFunc(added, func(k tp) bool { return p.produced[k] }) {
		if err := p.local.Flush(p.ctx); err != nil {
			return fmt.Errorf("pull: flush: %w", err)
		}
	}
	ends, err := listOffsets(p.ctx, p.local, "", added, -1)
	if err != nil {
		return fmt.Errorf("pull: local end offsets: %w", err)
	}
	var now []tp
	for _, k := range added {
		if cfg.TailSettle > 0 && !p.settled[k] {
			if e, ok := ends[k]; ok && e.Err == nil {
				p.settling[k] = &settling{end: e.Offset, at: time.Now().Add(cfg.TailSettle)}
				p.l.mu.Lock()
				p.l.pullState(k).settling = true
				p.l.mu.Unlock()
				continue
			}
		}
		now = append(now, k)
	}
	return p.start(now, ends)
}

// create creates local topic local with the far partition count. Only
// the node that is the acting controller can (Options.CreateTopic); the
// others find the topic at a later refresh.
func (p *puller) create(local string, partitions int32) {
	var err error
	if p.l.o.CreateTopic == nil {
		err = errors.New("this node cannot create topics")
	} else {
		err = p.l.o.CreateTopic(p.ctx, local, partitions)
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		if err == nil {
			p.l.log.Info("uplink: created local topic for a pulled far topic", "topic", local, "far.topic", p.farTopic(local), "partitions", partitions)
		}
		return
	}
	why := fmt.Sprintf("local topic %s does not exist: %v", local, err)
	if errors.Is(err, kerr.NotController) {
		// The link on the acting controller node creates it: no row
		// here until it exists (a refused one would make the cluster
		// degraded for a refresh or two).
		return
	}
	for part := int32(0); part < partitions; part++ {
		p.l.refusePull(tp{local, part}, why)
	}
}

// settleDue starts the partitions whose local end offset held still for
// tail.settle.ms; one still moving waits again, and after settleRounds
// is refused until a later refresh.
func (p *puller) settleDue() error {
	now := time.Now()
	var due []tp
	for k, w := range p.settling {
		if !now.Before(w.at) {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return nil
	}
	ends, err := listOffsets(p.ctx, p.local, "", due, -1)
	if err != nil {
		return fmt.Errorf("pull: local end offsets: %w", err)
	}
	settle := p.l.o.Config.TailSettle
	var ready []tp
	for _, k := range due {
		w := p.settling[k]
		e, ok := ends[k]
		switch {
		case !ok || e.Err != nil:
		case e.Offset == w.end:
			p.settled[k] = true
		default:
			if w.moved++; w.moved < settleRounds {
				w.end, w.at = e.Offset, time.Now().Add(settle)
				continue
			}
			delete(p.settling, k)
			p.l.mu.Lock()
			p.l.refusePull(k, fmt.Sprintf("local partition %s[%d]: its end offset did not hold still for %v (%d times): "+
				"another writer may still be appending, so its last record is not trusted yet", k.topic, k.partition, settle, settleRounds))
			p.l.mu.Unlock()
			continue
		}
		delete(p.settling, k)
		ready = append(ready, k)
	}
	return p.start(ready, ends)
}

// stop ends the pulling of parts.
func (p *puller) stop(parts []tp) {
	byFar := map[string][]int32{}
	for _, k := range parts {
		byFar[p.farTopic(k.topic)] = append(byFar[p.farTopic(k.topic)], k.partition)
	}
	p.far.RemoveConsumePartitions(byFar)
	p.queue = slices.DeleteFunc(p.queue, func(q queued) bool { return slices.Contains(parts, q.k) })
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	for _, k := range parts {
		delete(p.active, k)
		delete(p.settled, k)
		delete(p.settling, k)
		if st := p.l.pulls[k]; st != nil {
			st.active, st.settling = false, false
		}
	}
}

// start starts pulling parts, each from the cursor its local tail gives
// (ends are the local end offsets listed for them), or records why not.
func (p *puller) start(parts []tp, ends map[tp]listed) error {
	if len(parts) == 0 {
		return nil
	}
	cursors, errs, err := p.readTails(parts, ends)
	if err != nil {
		return err
	}
	offsets, err := p.checkFar(cursors, errs)
	if err != nil {
		return err
	}
	if err := context.Cause(p.ctx); err != nil {
		return err
	}
	add := map[string]map[int32]kgo.Offset{}
	p.l.mu.Lock()
	for _, k := range parts {
		if why := errs[k]; why != "" {
			p.l.refusePull(k, why)
			continue
		}
		st := p.l.pullState(k)
		st.err, st.settling, st.active, st.pending = "", false, true, 0
		st.next = offsets[k]
		p.expect[k] = offsets[k]
		far := p.farTopic(k.topic)
		if add[far] == nil {
			add[far] = map[int32]kgo.Offset{}
		}
		add[far][k.partition] = kgo.NewOffset().At(offsets[k])
		p.active[k] = true
	}
	p.l.mu.Unlock()
	p.far.AddConsumePartitions(add)
	return nil
}

// readTails recovers each local partition's cursor (the next far offset)
// from the local log: the newest HeaderSource of its last record names
// the far offset it came from. An empty local partition that never held
// a record gives -1 (start.position). A last record that is not this
// link's (another writer shares the local partition), a partition whose
// retention deleted every record, or a tail that cannot be read in time
// is refused rather than guessed at.
func (p *puller) readTails(parts []tp, ends map[tp]listed) (map[tp]int64, map[tp]string, error) {
	cursors, errs := map[tp]int64{}, map[tp]string{}
	starts, err := listOffsets(p.ctx, p.local, "", parts, -2)
	if err != nil {
		return nil, nil, fmt.Errorf("pull: local start offsets: %w", err)
	}
	read := map[string]map[int32]kgo.Offset{}
	want := map[tp]int64{}
	for _, k := range parts {
		end, ok1 := ends[k]
		start, ok2 := starts[k]
		switch {
		case !ok1 || !ok2:
			errs[k] = fmt.Sprintf("local partition %s[%d]: no offsets listed", k.topic, k.partition)
		case end.Err != nil || start.Err != nil:
			errs[k] = fmt.Sprintf("local partition %s[%d]: %v", k.topic, k.partition, errors.Join(end.Err, start.Err))
		case end.Offset == 0:
			cursors[k] = -1
		case start.Offset >= end.Offset:
			errs[k] = fmt.Sprintf("local partition %s[%d] is empty at offset %d (its retention deleted every record): "+
				"the resume point cannot be read, so nothing is pulled rather than risk duplicates", k.topic, k.partition, end.Offset)
		default:
			want[k] = end.Offset - 1
			if read[k.topic] == nil {
				read[k.topic] = map[int32]kgo.Offset{}
			}
			read[k.topic][k.partition] = kgo.NewOffset().At(end.Offset - 1)
		}
	}
	if len(want) == 0 {
		return cursors, errs, nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(p.localOpts), kgo.ConsumePartitions(read))...)
	if err != nil {
		return nil, nil, fmt.Errorf("pull: local tail client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(p.ctx, p.l.o.TailTimeout)
	defer cancel()
	last := map[tp]*kgo.Record{}
	for len(last) < len(want) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			if end, ok := want[k]; ok && r.Offset == end {
				last[k] = r
			}
		})
	}
	if err := context.Cause(p.ctx); err != nil {
		return nil, nil, err
	}
	for k, end := range want {
		r := last[k]
		if r == nil {
			errs[k] = fmt.Sprintf("local partition %s[%d]: its last record (offset %d) could not be read within %v", k.topic, k.partition, end, p.l.o.TailTimeout)
			continue
		}
		far := p.farTopic(k.topic)
		src, ok := newestSource(r)
		if !ok || src.Cluster != p.remoteCluster || src.Topic != far || src.Partition != k.partition {
			errs[k] = fmt.Sprintf("local partition %s[%d]: its last record (offset %d) was not pulled by this link from %s[%d] of cluster %s: "+
				"the resume point cannot be read, so nothing is pulled rather than risk duplicates", k.topic, k.partition, end, far, k.partition, p.remoteCluster)
			continue
		}
		cursors[k] = src.Offset + 1
	}
	return cursors, errs, nil
}

// newestSource is a record's newest provenance header.
func newestSource(r *kgo.Record) (Source, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == HeaderSource {
			src, err := ParseSource(r.Headers[i].Value)
			return src, err == nil
		}
	}
	return Source{}, false
}

// checkFar holds each cursor against the far log and fixes the start of
// partitions never pulled (-1) at start.position: one past the far end
// (the far partition lost records the local one holds) is refused; one
// below the far start (far retention deleted records never pulled) moves
// to the start, with a warning saying how many are lost.
func (p *puller) checkFar(cursors map[tp]int64, errs map[tp]string) (map[tp]int64, error) {
	cfg := p.l.o.Config
	var parts []tp
	byFar := map[tp]tp{}
	for k := range cursors {
		f := tp{p.farTopic(k.topic), k.partition}
		parts = append(parts, f)
		byFar[f] = k
	}
	out := map[tp]int64{}
	if len(parts) == 0 {
		return out, nil
	}
	starts, err := listOffsets(p.ctx, p.far, "", parts, -2)
	if err != nil {
		return nil, fmt.Errorf("pull: far start offsets: %w", err)
	}
	ends, err := listOffsets(p.ctx, p.far, "", parts, -1)
	if err != nil {
		return nil, fmt.Errorf("pull: far end offsets: %w", err)
	}
	var at map[tp]listed
	if !cfg.StartTime.IsZero() {
		if at, err = listOffsets(p.ctx, p.far, "", parts, cfg.StartTime.UnixMilli()); err != nil {
			return nil, fmt.Errorf("pull: far offsets at %s: %w", cfg.StartPosition, err)
		}
	}
	for _, f := range parts {
		k := byFar[f]
		c := cursors[k]
		start, ok1 := starts[f]
		end, ok2 := ends[f]
		switch {
		case !ok1 || !ok2 || start.Err != nil || end.Err != nil:
			errs[k] = fmt.Sprintf("far partition %s[%d]: offsets not listed (%v)", f.topic, f.partition, errors.Join(start.Err, end.Err))
		case c > end.Offset:
			errs[k] = fmt.Sprintf("the local partition %s[%d] holds far offsets up to %d, past the far end %d of %s[%d]: "+
				"the far partition lost records; nothing is pulled rather than put other records under those offsets",
				k.topic, k.partition, c-1, end.Offset, f.topic, f.partition)
		case c >= 0 && c < start.Offset:
			p.l.log.Warn("uplink: far records deleted by far retention before they were pulled", "topic", f.topic,
				"partition", f.partition, "from", c, "to", start.Offset, "lost", start.Offset-c)
			out[k] = start.Offset
		case c >= 0:
			out[k] = c
		case cfg.StartPosition == "latest":
			out[k] = end.Offset
		case at != nil:
			a, ok := at[f]
			if !ok || a.Err != nil {
				errs[k] = fmt.Sprintf("far offset of %s[%d] at %s: not listed (%v)", f.topic, f.partition, cfg.StartPosition, a.Err)
				continue
			}
			if a.Offset < 0 {
				a.Offset = end.Offset
			}
			out[k] = max(a.Offset, start.Offset)
		default:
			out[k] = start.Offset
		}
	}
	return out, nil
}
