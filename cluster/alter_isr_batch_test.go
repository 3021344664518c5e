package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// ISR changes that arrive while the controller's loop is busy commit
// together as one metadata-log entry, each checked against the image as
// the ones before it leave it: a second change of the same partition at
// the epoch the first one replaced is refused, as it would be one by one.
func TestAlterISRBatchesQueuedChanges(t *testing.T) {
	c, err := OpenController(vfs.NewMem(), "/meta", ControllerConfig{NodeID: 1, MinInsyncReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: id}, true); err != nil {
			t.Fatal(err)
		}
	}
	const n = 200
	res, err := c.CreateTopics(ctx, []CreateTopic{{Name: "t", NumPartitions: n, ReplicationFactor: 3}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	ti := c.Image().Topic("t")
	start := c.Image().Offset

	// Hold the loop until every change is queued.
	release := make(chan struct{})
	held := make(chan struct{})
	go c.run(ctx, func() { close(held); <-release })
	<-held
	type answer struct {
		after PartitionImage
		err   error
	}
	answers := make([]answer, n+1)
	var wg sync.WaitGroup
	ask := func(i int, p PartitionImage) {
		defer wg.Done()
		shrunk := slices.DeleteFunc(slices.Clone(p.ISR), func(id int32) bool { return id != p.Leader })
		after, err := c.AlterISR(ctx, ti.ID, p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, shrunk)
		answers[i] = answer{after, err}
	}
	for i, p := range ti.Partitions {
		wg.Add(1)
		go ask(i, p)
	}
	wg.Add(1)
	go ask(n, ti.Partitions[7]) // the same partition again, at the same epoch
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.alterISRs.mu.Lock()
		queued := len(c.alterISRs.pending)
		c.alterISRs.mu.Unlock()
		if queued == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d ISR changes queued after 10 s", queued, n+1)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()

	refused := 0
	for i, a := range answers {
		if a.err != nil {
			refused++
			continue
		}
		if len(a.after.ISR) != 1 {
			t.Errorf("change %d: ISR %v after, want the leader alone", i, a.after.ISR)
		}
	}
	if refused != 1 || (answers[7].err == nil) == (answers[n].err == nil) {
		t.Fatalf("%d changes refused (partition 7: %v and %v), want exactly one of the two of partition 7", refused, answers[7].err, answers[n].err)
	}
	for _, p := range c.Image().Topic("t").Partitions {
		if len(p.ISR) != 1 || p.PartitionEpoch != ti.Partitions[p.Partition].PartitionEpoch+1 {
			t.Fatalf("partition %d: ISR %v, epoch %d", p.Partition, p.ISR, p.PartitionEpoch)
		}
	}
	if sizes := walEntries(t, c, start); len(sizes) != 1 {
		t.Fatalf("%d ISR changes committed in %d entries, want 1", n, len(sizes))
	}
}
