package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// pollingLeader is a leader's side of replica connections that long-polls
// as a real leader does: a Fetch with nothing to return for any of its
// partitions is held for its whole MaxWaitMillis, or until the follower
// closes the connection. records[p] is partition p's log (one batch at
// offset 0 here).
type pollingLeader struct {
	records map[int32][]byte
	// unknown are partitions the leader does not host yet: it answers
	// them UNKNOWN_TOPIC_OR_PARTITION at once, the first time only.
	unknown map[int32]bool
	// polls receives the partitions of each Fetch the leader holds.
	polls chan []int32
	mu    sync.Mutex
	dials int
}

type pollingConn struct {
	l         *pollingLeader
	closeOnce sync.Once
	closed    chan struct{}
}

func (l *pollingLeader) dial(int32) (LeaderConn, error) {
	l.mu.Lock()
	l.dials++
	l.mu.Unlock()
	return &pollingConn{l: l, closed: make(chan struct{})}, nil
}

func (c *pollingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *pollingConn) RoundTrip(r kmsg.Request, _ time.Time) ([]byte, error) {
	select {
	case <-c.closed:
		return nil, errors.New("pollingConn: closed")
	default:
	}
	req, ok := r.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("pollingConn: api key %d", r.Key())
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	var asked []int32
	any := false
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			asked = append(asked, rp.Partition)
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			c.l.mu.Lock()
			unknown := c.l.unknown[rp.Partition]
			delete(c.l.unknown, rp.Partition)
			c.l.mu.Unlock()
			if unknown {
				p.ErrorCode, any = kerr.UnknownTopicOrPartition.Code, true
			} else if recs := c.l.records[rp.Partition]; rp.FetchOffset == 0 && recs != nil {
				p.RecordBatches, any = recs, true
				p.HighWatermark = 1
			} else if recs != nil {
				p.HighWatermark = 1
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if !any {
		c.l.polls <- asked
		t := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		defer t.Stop()
		select {
		case <-c.closed:
			return nil, errors.New("pollingConn: closed under a long poll")
		case <-t.C:
		}
	}
	return resp.AppendTo(nil), nil
}

// A partition followed while the fetcher's long poll to its leader is in
// flight is fetched at once: the follower reaches the leader's log end
// well within replica.fetch.wait.max.ms (30 s here), where it used to
// wait for the poll that lacked it to end, and then for one more. When
// the follower asks before the leader hosts the partition (it applied the
// image first), the partition waits out its backoff (200 ms here), not a
// long poll.
func TestNewPartitionFetchedWithoutWaitingOutLongPoll(t *testing.T) {
	for _, hostedLate := range []bool{false, true} {
		t.Run(fmt.Sprintf("hostedLate=%v", hostedLate), func(t *testing.T) {
			leader := &pollingLeader{records: map[int32][]byte{1: oneRecord(t)}, polls: make(chan []int32, 16),
				unknown: map[int32]bool{1: hostedLate}}
			newPartitionFetched(t, leader)
		})
	}
}

func newPartitionFetched(t *testing.T, leader *pollingLeader) {
	t.Helper()
	fm := newFetcherManager(2, FetchConfig{Dial: leader.dial, WaitMaxMs: 30000, Backoff: 200 * time.Millisecond}, slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	follow := func(i int32) *Partition {
		tp := engine.TopicPartition{Topic: "t", Partition: i}
		l, _, err := engine.Open(vfs.NewMem(), fmt.Sprintf("/d/t-%d", i), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, nil, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		fm.follow(tp, p, 1, 1)
		return p
	}
	follow(0)
	if got := within(t, leader.polls, "a long poll of t-0"); len(got) != 1 || got[0] != 0 {
		t.Fatalf("first long poll of partitions %v, want [0]", got)
	}
	start := time.Now()
	p1 := follow(1)
	// Well under the 30 s wait: the follower appends and takes the high
	// watermark at once.
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		moved := p1.HighWatermarkChanged()
		if p1.Log().LogEndOffset() == 1 && p1.HighWatermark() == 1 {
			break
		}
		select {
		case <-moved:
		case <-timeout.C:
			t.Fatalf("the new partition's log end is %d after %v, want 1: it waited for the long poll that lacked it",
				p1.Log().LogEndOffset(), time.Since(start).Round(time.Millisecond))
		}
	}
	// Then both long-poll together, on one connection.
	for {
		got := within(t, leader.polls, "a long poll of both partitions")
		if len(got) == 2 {
			break
		}
	}
	leader.mu.Lock()
	dials := leader.dials
	leader.mu.Unlock()
	if dials > 2 {
		t.Fatalf("%d connections to the leader, want at most 2 (one interruption)", dials)
	}
	t.Logf("new partition caught up in %v", time.Since(start).Round(time.Millisecond))
}
