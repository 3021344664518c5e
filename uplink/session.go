package uplink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
)

// session is one run of a link with its own clients.
type session struct {
	l      *Link
	ctx    context.Context
	cancel context.CancelCauseFunc

	local, remote       *kgo.Client
	localAdm, remoteAdm *kadm.Client
	// far are the far side's client options (seeds, TLS, SASL), for the
	// clients that read its tails.
	far []kgo.Opt
	// localCluster names this cluster in provenance headers;
	// remoteCluster is the far side's, whose records never go back.
	localCluster, remoteCluster string
	// active are the partitions consumed and forwarded now; expect is
	// each one's next local offset (-1 until its first record): a record
	// below it, from a fetch buffered before the partition was removed
	// and added again, is never sent twice.
	active map[tp]bool
	expect map[tp]int64
	// produced are the partitions this session handed records to the
	// producer for: one of them added again is read from the far tail
	// only after a flush.
	produced map[tp]bool
	// queue are records fetched and not yet forwarded, oldest first per
	// partition: under max.bytes.per.second forwarding a poll's records
	// can outlast a refresh, which then comes between two of them.
	queue []queued
	// settled are the partitions whose far end offset held still for
	// tail.settle.ms in this session (settle); a partition that stops
	// being forwarded settles again when it comes back.
	settled map[tp]bool
	// settling are the partitions waiting for their far end offset to
	// hold still (settle): each waits on its own, while the others are
	// forwarded and other partitions start.
	settling map[tp]*settling
	// loops are the local topics not forwarded because a link pulls into
	// them, each logged once a session.
	loops map[string]bool
}

// settling is a partition's wait for its far end offset to settle: the
// end offset last listed, when to list it again, and how many listings
// found it moved.
type settling struct {
	end   int64
	at    time.Time
	moved int
}

// queued is a fetched record of local partition k.
type queued struct {
	k tp
	r *kgo.Record
}

// run refreshes the partitions to forward every Refresh, looks again at
// the far end offsets of partitions settling when each one's wait is
// over, and forwards what the local client fetches meanwhile.
func (s *session) run() error {
	next := time.Now()
	for {
		if !time.Now().Before(next) {
			if err := s.refresh(); err != nil {
				return err
			}
			next = time.Now().Add(s.l.o.Refresh)
		}
		if err := s.settleDue(); err != nil {
			return err
		}
		until := s.wakeAt(next)
		if len(s.queue) == 0 {
			if err := s.poll(until); err != nil {
				return err
			}
		}
		// The queue drains until it is empty, a refresh is due or a
		// partition's settle wait is over.
		for len(s.queue) > 0 && time.Now().Before(until) {
			q := s.queue[0]
			s.queue[0] = queued{}
			s.queue = s.queue[1:]
			if !s.active[q.k] {
				continue
			}
			if e := s.expect[q.k]; e >= 0 && q.r.Offset < e {
				continue
			}
			s.expect[q.k] = q.r.Offset + 1
			s.forward(q.k, q.r)
			if err := context.Cause(s.ctx); err != nil {
				return err
			}
		}
	}
}

// wakeAt is next, or the end of the first settle wait before it.
func (s *session) wakeAt(next time.Time) time.Time {
	for _, w := range s.settling {
		if w.at.Before(next) {
			next = w.at
		}
	}
	return next
}

// poll fetches local records until next at the latest and queues those of
// the partitions forwarded.
func (s *session) poll(next time.Time) error {
	pctx, pcancel := context.WithDeadline(s.ctx, next)
	fetches := s.local.PollRecords(pctx, pollRecords)
	pcancel()
	if err := context.Cause(s.ctx); err != nil {
		return err
	}
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("local fetch %s[%d]: %w", t, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	var lost map[string][]int32
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		k := tp{fp.Topic, fp.Partition}
		if !s.active[k] {
			return
		}
		// The local client follows a leader that moved (it fetches by
		// its own metadata, which a NOT_LEADER answer refreshes), so
		// records it holds for a partition whose leader it now knows
		// is another node may come from there: they are dropped and the
		// partition stops at once, not at the next refresh, so that
		// the new leader's forwarder is the only one.
		if leader, _, err := s.local.PartitionLeader(k.topic, k.partition); err == nil && leader >= 0 && leader != s.l.o.NodeID {
			if lost == nil {
				lost = map[string][]int32{}
			}
			lost[k.topic] = append(lost[k.topic], k.partition)
			return
		}
		s.l.mu.Lock()
		if st := s.l.parts[k]; st != nil {
			st.hwm = fp.HighWatermark
		}
		s.l.mu.Unlock()
		for _, r := range fp.Records {
			s.queue = append(s.queue, queued{k, r})
		}
	})
	if lost != nil {
		s.stop(lost)
	}
	return nil
}

// stop ends the forwarding of partitions this node no longer leads: they
// leave the local client before anything else happens.
func (s *session) stop(parts map[string][]int32) {
	s.local.RemoveConsumePartitions(parts)
	// Its queued records go too: added again, the partition starts from
	// the far tail, not from what was fetched before.
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool { return slices.Contains(parts[q.k.topic], q.k.partition) })
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.active, tp{t, p})
			delete(s.settled, tp{t, p})
			delete(s.settling, tp{t, p})
			if st := s.l.parts[tp{t, p}]; st != nil {
				st.active, st.settling = false, false
			}
		}
	}
}

// forward hands one local record to the producer, or skips it when it
// came down from the far side. Under max.bytes.per.second it first waits
// for the record's bytes (RecordBytes) in the link's bucket.
func (s *session) forward(k tp, r *kgo.Record) {
	if s.cameFrom(r) {
		s.l.mu.Lock()
		if st := s.l.parts[k]; st != nil && st.pending == 0 {
			st.next = r.Offset + 1
		}
		s.l.mu.Unlock()
		return
	}
	headers := make([]kgo.RecordHeader, 0, len(r.Headers)+1)
	headers = append(headers, r.Headers...)
	src := Source{Cluster: s.localCluster, Topic: k.topic, Partition: k.partition, Offset: r.Offset}
	headers = append(headers, kgo.RecordHeader{Key: HeaderSource, Value: []byte(src.String())})
	out := &kgo.Record{
		Topic:     s.l.o.Config.RemoteTopicPrefix + k.topic,
		Partition: k.partition,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   headers,
		Timestamp: r.Timestamp,
	}
	if b := s.l.bucket; b != nil {
		if w := b.take(RecordBytes(out)); w > 0 {
			t := time.NewTimer(w)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return // the session ends; the next one resumes from the far tail
			case <-t.C:
			}
		}
	}
	s.l.mu.Lock()
	if st := s.l.parts[k]; st != nil {
		if st.next < 0 {
			st.next = r.Offset // started at start.position: the first record sets it
		}
		st.pending++
	}
	s.l.mu.Unlock()
	offset, size := r.Offset, recordBytes(out)
	s.produced[k] = true
	s.remote.Produce(s.ctx, out, func(_ *kgo.Record, err error) {
		if err != nil {
			// Anything the producer gives up on ends the session: the next
			// one reads the far side's tail again rather than guess.
			s.cancel(fmt.Errorf("produce %s[%d] offset %d: %w", out.Topic, out.Partition, offset, err))
			return
		}
		now := time.Now()
		s.l.mu.Lock()
		if st := s.l.parts[k]; st != nil {
			st.pending--
			st.next = offset + 1
			st.sent++
			st.sentBytes += size
			st.rate.add(now, size)
		}
		s.l.sent++
		s.l.sentBytes += size
		s.l.rate.add(now, size)
		s.l.lastUp = now
		s.l.mu.Unlock()
	})
}

// recordBytes is a record's size as the send rate counts it: key, value
// and headers.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// ping asks the far side for its brokers every refresh until the session
// ends: an idle link learns that it went away (Status.Up) without a
// record to send. A failed ping does not end the session: the producer
// retries on its own, and a session ended for nothing would read every
// far tail again.
func (s *session) ping() {
	t := time.NewTicker(s.l.o.Refresh)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.l.o.Refresh)
		err := s.remote.Ping(ctx)
		cancel()
		if err == nil {
			s.l.markUp()
		}
	}
}

// cameFrom says whether a record came down from the far side, or is one
// of this cluster's own come back: a provenance header names the far
// cluster or this one. Such records are never sent (no loops).
func (s *session) cameFrom(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key != HeaderSource {
			continue
		}
		src, err := ParseSource(h.Value)
		if err != nil {
			continue
		}
		if src.Cluster == s.remoteCluster || src.Cluster == s.localCluster {
			return true
		}
	}
	return false
}

// refresh reads the local topics and leaders: partitions this node no
// longer leads stop, new ones start at the cursor read from the far
// side's tail.
func (s *session) refresh() error {
	cfg := s.l.o.Config
	topics, err := s.localAdm.ListTopics(s.ctx)
	if err != nil {
		return fmt.Errorf("local metadata: %w", err)
	}
	want := map[tp]bool{}
	counts := map[string]int32{}
	links := s.l.links()
	for name, td := range topics {
		if td.Err != nil || td.IsInternal || !cfg.Matches(name) {
			continue
		}
		if puller := pullerOf(name, links); puller != "" {
			// A pull target is never forwarded (no circular sending):
			// config time refuses what names show, this the rest.
			if !s.loops[name] {
				s.l.log.Error("uplink: local topic not forwarded: it is a pull target", "topic", name,
					"err", fmt.Sprintf("local topic %s is pulled into by uplink.%s.pull.topics and matches uplink.%s.topics: a pulled record would be sent back out (no circular sending)",
						name, puller, cfg.Name))
				s.loops[name] = true
			}
			continue
		}
		counts[name] = int32(len(td.Partitions))
		for p, pd := range td.Partitions {
			if pd.Err == nil && pd.Leader == s.l.o.NodeID {
				want[tp{name, p}] = true
			}
		}
	}
	// Stop before start: a partition this node lost is removed from the
	// local client before anything else happens.
	removed := map[string][]int32{}
	for k := range s.active {
		if !want[k] {
			removed[k.topic] = append(removed[k.topic], k.partition)
		}
	}
	for k := range s.settling {
		if !want[k] {
			removed[k.topic] = append(removed[k.topic], k.partition)
		}
	}
	if len(removed) > 0 {
		s.stop(removed)
	}
	var added []tp
	for k := range want {
		if !s.active[k] && s.settling[k] == nil {
			added = append(added, k)
		}
	}
	if len(added) == 0 {
		return nil
	}
	// What this session sent is on the far side before its tail is read
	// (a partition it never produced to needs no wait: a refused one
	// retried every refresh does not stall the others).
	if slices.ContainsFunc(added, func(k tp) bool { return s.produced[k] }) {
		if err := s.remote.Flush(s.ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	if err := context.Cause(s.ctx); err != nil {
		return err
	}
	refused, created := s.ensureRemoteTopics(added, counts)
	var tails []tp
	for _, k := range added {
		if refused[k] == "" && !created[k.topic] {
			tails = append(tails, k)
		}
	}
	ends, err := s.farEnds(tails)
	if err != nil {
		return err
	}
	// Those not settled in this session wait (settleDue); the others
	// start now.
	var now []tp
	for _, k := range added {
		if refused[k] == "" && !created[k.topic] && s.l.o.Config.TailSettle > 0 && !s.settled[k] {
			if e, ok := ends[k]; ok && e.Err == nil {
				s.settling[k] = &settling{end: e.Offset, at: time.Now().Add(s.l.o.Config.TailSettle)}
				s.l.mu.Lock()
				st := s.l.parts[k]
				if st == nil {
					st = &partState{next: -1}
					s.l.parts[k] = st
				}
				st.settling = true
				s.l.mu.Unlock()
				continue
			}
			// Not listed: readTails refuses it with the listing's error.
		}
		now = append(now, k)
	}
	return s.start(now, refused, created, ends)
}

// pullerOf names the link of links that pulls into local topic topic,
// "" if none does.
func pullerOf(topic string, links []config.Uplink) string {
	for i := range links {
		if links[i].PullTarget(topic) {
			return links[i].Name
		}
	}
	return ""
}

// settleDue lists again the far end offsets of the partitions whose
// settle wait is over: one that held still is settled and starts; one
// that moved waits again, and after settleRounds waits that found it
// moving is refused until a later refresh.
func (s *session) settleDue() error {
	now := time.Now()
	var due []tp
	for k, w := range s.settling {
		if !now.Before(w.at) {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return nil
	}
	ends, err := s.farEnds(due)
	if err != nil {
		return err
	}
	prefix := s.l.o.Config.RemoteTopicPrefix
	refused := map[tp]string{}
	var ready []tp
	for _, k := range due {
		w := s.settling[k]
		e, ok := ends[k]
		switch {
		case !ok || e.Err != nil:
			// readTails refuses it with the listing's error.
		case e.Offset == w.end:
			s.settled[k] = true
		default:
			if w.moved++; w.moved < settleRounds {
				w.end, w.at = e.Offset, time.Now().Add(s.l.o.Config.TailSettle)
				continue
			}
			s.l.log.Warn("uplink: far partition still growing; its last record is not trusted yet", "topic", prefix+k.topic, "partition", k.partition)
			refused[k] = fmt.Sprintf("far partition %s%s[%d]: its end offset did not hold still for %v (%d times): "+
				"another writer may still be appending, so its last record is not trusted yet", prefix, k.topic, k.partition, s.l.o.Config.TailSettle, settleRounds)
		}
		delete(s.settling, k)
		ready = append(ready, k)
	}
	return s.start(ready, refused, nil, ends)
}

// farEnds lists the far end offsets of parts.
func (s *session) farEnds(parts []tp) (map[tp]listed, error) {
	ends, err := s.listFar(parts, -1)
	if err != nil {
		return nil, fmt.Errorf("far end offsets: %w", err)
	}
	return ends, nil
}

// start starts forwarding parts, each from the cursor its far tail gives
// (ends are the far end offsets listed for them), or records why it is
// not forwarded: refused[k], or the tail's or the local log's refusal.
// A partition of a topic in created starts at start.position.
func (s *session) start(parts []tp, refused map[tp]string, created map[string]bool, ends map[tp]listed) error {
	if len(parts) == 0 {
		return nil
	}
	cfg := s.l.o.Config
	var ok []tp
	for _, k := range parts {
		if refused[k] == "" && !created[k.topic] {
			ok = append(ok, k)
		}
	}
	cursors, tailErrs, err := s.readTails(ok, ends)
	if err != nil {
		return err
	}
	for _, k := range parts {
		if created[k.topic] {
			cursors[k] = -1 // a far topic this link just created holds nothing
		}
	}
	if err := s.checkLocal(cursors, tailErrs); err != nil {
		return err
	}
	if err := context.Cause(s.ctx); err != nil {
		return err // stopping: the refusals above are only the stop's
	}
	offsets := map[string]map[int32]kgo.Offset{}
	s.l.mu.Lock()
	for _, k := range parts {
		st := s.l.parts[k]
		if st == nil {
			st = &partState{next: -1}
			s.l.parts[k] = st
		}
		st.settling = false
		before := st.err
		st.err = refused[k]
		if st.err == "" {
			st.err = tailErrs[k]
		}
		if st.err != "" {
			if st.active || st.err != before {
				s.l.log.Warn("uplink: partition not forwarded", "topic", k.topic, "partition", k.partition, "err", st.err)
			}
			st.active = false
			continue
		}
		c := cursors[k]
		s.expect[k] = c
		st.active, st.pending = true, 0
		if offsets[k.topic] == nil {
			offsets[k.topic] = map[int32]kgo.Offset{}
		}
		switch {
		case c >= 0:
			st.next = c
			offsets[k.topic][k.partition] = kgo.NewOffset().At(c)
		case cfg.StartPosition == "latest":
			st.next = -1
			offsets[k.topic][k.partition] = kgo.NewOffset().AtEnd()
		default:
			st.next = -1
			offsets[k.topic][k.partition] = kgo.NewOffset().AtStart()
		}
		s.active[k] = true
	}
	s.l.mu.Unlock()
	s.local.AddConsumePartitions(offsets)
	return nil
}

// ensureRemoteTopics creates the far topics missing, with the local
// partition count, and refuses partitions the far topic does not have
// (one-to-one mapping: local partition p is far partition p).
func (s *session) ensureRemoteTopics(added []tp, counts map[string]int32) (refused map[tp]string, created map[string]bool) {
	refused, created = map[tp]string{}, map[string]bool{}
	prefix := s.l.o.Config.RemoteTopicPrefix
	seen := map[string]bool{}
	for _, k := range added {
		if seen[k.topic] {
			continue
		}
		seen[k.topic] = true
		far := prefix + k.topic
		have, err := s.remoteCount(far)
		if err == nil && have == 0 {
			_, err = s.remoteAdm.CreateTopic(s.ctx, counts[k.topic], -1, nil, far)
			if errors.Is(err, kerr.TopicAlreadyExists) {
				// Made by someone else meanwhile: its tail is read as any.
				have, err = s.remoteCount(far)
			} else if err == nil {
				created[k.topic] = true
				s.l.log.Info("uplink: created far topic", "topic", far, "partitions", counts[k.topic])
				have = counts[k.topic]
			}
		}
		for _, a := range added {
			if a.topic != k.topic {
				continue
			}
			switch {
			case err != nil:
				refused[a] = fmt.Sprintf("far topic %s: %v", far, err)
			case a.partition >= have:
				refused[a] = fmt.Sprintf("far topic %s has %d partitions; local partition %d has no counterpart (add partitions there)", far, have, a.partition)
			}
		}
	}
	return refused, created
}

// remoteCount is the far topic's partition count, 0 if it does not exist.
func (s *session) remoteCount(topic string) (int32, error) {
	tds, err := s.remoteAdm.ListTopics(s.ctx, topic)
	if err != nil {
		return 0, err
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if td.Err != nil {
		return 0, td.Err
	}
	return int32(len(td.Partitions)), nil
}

// readTails recovers each partition's cursor from the far side: the
// provenance header of the far partition's last record names the last
// local offset it holds, and forwarding resumes after it. An empty far
// partition that never held a record gives -1 (the start position). A
// partition whose far tail cannot be read, or was not written by this
// link, is refused (tailErrs) rather than guessed at.
func (s *session) readTails(parts []tp, ends map[tp]listed) (cursors map[tp]int64, tailErrs map[tp]string, err error) {
	cursors, tailErrs = map[tp]int64{}, map[tp]string{}
	if len(parts) == 0 {
		return cursors, tailErrs, nil
	}
	prefix := s.l.o.Config.RemoteTopicPrefix
	starts, err := s.listFar(parts, -2)
	if err != nil {
		return nil, nil, fmt.Errorf("far start offsets: %w", err)
	}
	read := map[string]map[int32]kgo.Offset{}
	want := map[tp]int64{} // far last offset, by local partition
	for _, k := range parts {
		far := prefix + k.topic
		end, ok1 := ends[k]
		start, ok2 := starts[k]
		switch {
		case !ok1 || !ok2:
			tailErrs[k] = fmt.Sprintf("far partition %s[%d]: no offsets listed", far, k.partition)
		case end.Err != nil || start.Err != nil:
			tailErrs[k] = fmt.Sprintf("far partition %s[%d]: %v", far, k.partition, errors.Join(end.Err, start.Err))
		case end.Offset == 0:
			cursors[k] = -1
		case start.Offset >= end.Offset:
			// It held records, none is left: the resume point is lost.
			tailErrs[k] = fmt.Sprintf("far partition %s[%d] is empty at offset %d (its retention deleted every record): "+
				"the resume point cannot be read, so nothing is forwarded rather than risk duplicates", far, k.partition, end.Offset)
		default:
			want[k] = end.Offset - 1
			if read[far] == nil {
				read[far] = map[int32]kgo.Offset{}
			}
			read[far][k.partition] = kgo.NewOffset().At(end.Offset - 1)
		}
	}
	if len(want) == 0 {
		return cursors, tailErrs, nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(s.far), kgo.ConsumePartitions(read))...)
	if err != nil {
		return nil, nil, fmt.Errorf("far tail client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(s.ctx, s.l.o.TailTimeout)
	defer cancel()
	last := map[tp]*kgo.Record{}
	for len(last) < len(want) && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic[len(prefix):], r.Partition}
			if end, ok := want[k]; ok && r.Offset == end {
				last[k] = r
			}
		})
	}
	if err := context.Cause(s.ctx); err != nil {
		return nil, nil, err
	}
	for k, end := range want {
		r := last[k]
		if r == nil {
			tailErrs[k] = fmt.Sprintf("far partition %s%s[%d]: its last record (offset %d) could not be read within %v",
				prefix, k.topic, k.partition, end, s.l.o.TailTimeout)
			continue
		}
		src, ok := s.ownSource(r, k)
		if !ok {
			tailErrs[k] = fmt.Sprintf("far partition %s%s[%d]: its last record (offset %d) was not forwarded by this link from %s[%d] of cluster %s: "+
				"the resume point cannot be read, so nothing is forwarded rather than risk duplicates", prefix, k.topic, k.partition, end, k.topic, k.partition, s.localCluster)
			continue
		}
		cursors[k] = src.Offset + 1
	}
	return cursors, tailErrs, nil
}

// settleRounds bounds a partition's settle waits: a far partition
// still growing after that many is refused until a later refresh.
//
// Settling: the first time a session reads a far partition's tail (at
// its start, and when the partition comes back after leadership left),
// its end offset must hold still for tail.settle.ms first: produce
// requests written before this session (by a crashed process, by a
// session whose requests outlived its 30 s bound, by the former leader
// of a partition) that the far side has not yet appended would otherwise
// land after the tail is read, and be forwarded again by this session.
// It narrows that gap to requests delayed longer than tail.settle.ms; it
// cannot close it (uplink/doc.go, "Fencing"). Each partition waits on
// its own (refresh, settleDue): the session forwards the others
// meanwhile.
const settleRounds = 3

// ownSource is the newest provenance header of a far record, if it names
// this cluster and local partition k.
func (s *session) ownSource(r *kgo.Record, k tp) (Source, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		h := r.Headers[i]
		if h.Key != HeaderSource {
			continue
		}
		src, err := ParseSource(h.Value)
		if err != nil {
			return Source{}, false
		}
		return src, src.Cluster == s.localCluster && src.Topic == k.topic && src.Partition == k.partition
	}
	return Source{}, false
}

// checkLocal holds each cursor against the local log, and sets the
// cursors of start.position latest to the local end and those of a
// start.position time to the first local record stamped at or after it
// (ListOffsets by timestamp): one below the log
// start (retention deleted records the far side never got) moves to the
// start, with a warning saying how many are lost; one past the log end
// (the local log lost records the far side holds: an unclean election) is
// refused, since forwarding what is now at those offsets would put records
// on the far side under offsets it already holds.
func (s *session) checkLocal(cursors map[tp]int64, tailErrs map[tp]string) error {
	cfg := s.l.o.Config
	latest := cfg.StartPosition == "latest"
	at := !cfg.StartTime.IsZero()
	// Only the partitions asked about are listed: each is led by this
	// node, which answers for it (the local client connects every
	// broker address to this node).
	var parts []tp
	for k, c := range cursors {
		if c >= 0 || latest || at {
			parts = append(parts, k)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	starts, err := s.listLocal(parts, -2)
	if err != nil {
		return fmt.Errorf("local start offsets: %w", err)
	}
	ends, err := s.listLocal(parts, -1)
	if err != nil {
		return fmt.Errorf("local end offsets: %w", err)
	}
	var afters map[tp]listed
	if at {
		// The first record stamped at or after the time, the local end
		// where there is none (as kadm answers).
		if afters, err = s.listLocal(parts, cfg.StartTime.UnixMilli()); err != nil {
			return fmt.Errorf("local offsets at %s: %w", cfg.StartPosition, err)
		}
		for k, a := range afters {
			if e, ok := ends[k]; ok && a.Err == nil && a.Offset == -1 {
				afters[k] = e
			}
		}
	}
	for k, c := range cursors {
		if c < 0 && !latest && !at {
			continue
		}
		start, ok1 := starts[k]
		end, ok2 := ends[k]
		switch {
		case !ok1 || !ok2 || start.Err != nil || end.Err != nil:
			tailErrs[k] = fmt.Sprintf("local offsets of %s[%d]: not listed (%v)", k.topic, k.partition, errors.Join(start.Err, end.Err))
			delete(cursors, k)
		case c < 0 && at:
			// start.position a time: fixed here, as latest is.
			after, ok := afters[k]
			if !ok || after.Err != nil || after.Offset < 0 {
				tailErrs[k] = fmt.Sprintf("local offset of %s[%d] at %s: not listed (%v)", k.topic, k.partition, cfg.StartPosition, after.Err)
				delete(cursors, k)
				continue
			}
			cursors[k] = max(after.Offset, start.Offset)
		case c < 0:
			// start.position latest: the local end now, fixed here so
			// that what is written from now on is forwarded.
			cursors[k] = end.Offset
		case c > end.Offset:
			tailErrs[k] = fmt.Sprintf("the far side holds %s[%d] up to offset %d, past the local log end %d: "+
				"the local log lost records it had forwarded; nothing is forwarded rather than put other records under those offsets",
				k.topic, k.partition, c-1, end.Offset)
			delete(cursors, k)
		case c < start.Offset:
			s.l.log.Warn("uplink: records deleted by local retention before they were forwarded", "topic", k.topic,
				"partition", k.partition, "from", c, "to", start.Offset, "lost", start.Offset-c)
			cursors[k] = start.Offset
		}
	}
	return nil
}

// listed is one partition's offset as ListOffsets gave it.
type listed struct {
	Offset int64
	Err    error
}

// listLocal lists the local offsets of parts at timestamp (listOffsets).
func (s *session) listLocal(parts []tp, timestamp int64) (map[tp]listed, error) {
	return listOffsets(s.ctx, s.local, "", parts, timestamp)
}

// listFar lists the far offsets of parts (far partition p of prefix +
// topic for local partition p) at timestamp (listOffsets).
func (s *session) listFar(parts []tp, timestamp int64) (map[tp]listed, error) {
	return listOffsets(s.ctx, s.remote, s.l.o.Config.RemoteTopicPrefix, parts, timestamp)
}

// listOffsets lists through cl the offsets of the partitions prefix +
// topic of parts at timestamp (-2 the log start, -1 the end, else the
// first record stamped at or after it, -1 when none is), read
// uncommitted as kadm lists them, keyed by the partitions of parts: only
// they are asked about (kadm would list every partition of the topics,
// from every leader). A partition left out of the answer (its leader's
// request failed) is left out of the map; an error only when none was
// answered.
func listOffsets(ctx context.Context, cl *kgo.Client, prefix string, parts []tp, timestamp int64) (map[tp]listed, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	byTopic := map[string]int{}
	for _, k := range parts {
		i, ok := byTopic[prefix+k.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[prefix+k.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = prefix + k.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = k.partition, timestamp, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	out := map[tp]listed{}
	if len(parts) == 0 {
		return out, nil
	}
	var firstErr error
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			if firstErr == nil {
				firstErr = shard.Err
			}
			continue
		}
		for _, t := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			if _, asked := byTopic[t.Topic]; !asked || len(t.Topic) < len(prefix) {
				continue
			}
			for _, p := range t.Partitions {
				out[tp{t.Topic[len(prefix):], p.Partition}] = listed{Offset: p.Offset, Err: kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
