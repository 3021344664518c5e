package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsAfterRestart: after every node of a three-node cluster
// is SIGKILLed and restarted, ListOffsets answers each partition's true
// end offset or a retriable error, never the 0 (or other stale high
// watermark) of a leader whose high watermark has not caught up with its
// log yet. Seen before: latest answered 0 for about 1.5 s while /readyz
// passed, and consumers started with "-o end" in that window re-read whole
// partitions. It asks through kadm, as a consumer's start does, and every
// node directly with no client retries, so a retry inside the client
// cannot hide a wrong answer.
func TestListOffsetsAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	const (
		topic      = "listoffsets-restart"
		partitions = 6
		perPart    = 20
	)
	pc := startProcessCluster(t)
	pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := []string{pc.nodes[0].addr, pc.nodes[1].addr, pc.nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	createTopicRetrying(ctx, t, cl, topic, partitions, 3)
	var recs []*kgo.Record
	for p := range partitions {
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	// Every record was acknowledged by all of the ISR, under flush policy
	// ack: each partition ends at perPart after any restart. Kill at once,
	// before the high watermark checkpoint catches up.
	for _, n := range pc.nodes {
		n.kill()
	}
	restarted := time.Now()
	for _, n := range pc.nodes {
		n.start(t, pc.bin)
	}

	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	direct := make([]*kgo.Client, len(pc.nodes))
	for i, n := range pc.nodes {
		if direct[i], err = kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0)); err != nil {
			t.Fatal(err)
		}
		defer direct[i].Close()
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p), -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	// check takes one answer for a partition: the true end offset, or a
	// retriable error.
	var answers, trueAnswers, retriable int
	var firstAnswer, lastRetriable time.Duration
	firstTrue := map[int32]time.Duration{}
	check := func(via string, p int32, offset int64, err error) {
		t.Helper()
		answers++
		if answers == 1 {
			firstAnswer = time.Since(restarted)
		}
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) || !ke.Retriable {
				t.Fatalf("%s: partition %d: %v, want the end offset %d or a retriable error", via, p, err, perPart)
			}
			retriable++
			lastRetriable = time.Since(restarted)
			return
		}
		if offset != perPart {
			t.Fatalf("%s: partition %d: latest offset %d %v after the restart, want %d (or a retriable error)",
				via, p, offset, time.Since(restarted).Round(time.Millisecond), perPart)
		}
		trueAnswers++
		if _, ok := firstTrue[p]; !ok {
			firstTrue[p] = time.Since(restarted)
		}
	}
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i, dc := range direct {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			resp, err := dc.SeedBrokers()[0].Request(rctx, req)
			rcancel()
			if err != nil {
				continue // not accepting clients yet (catching up), or restarting
			}
			for _, tp := range resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode == kerr.NotLeaderForPartition.Code {
						continue // the leader answers for it
					}
					check(fmt.Sprintf("node %d directly", pc.nodes[i].id), p.Partition, p.Offset, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		listed, err := kadm.NewClient(adm).ListEndOffsets(rctx, topic)
		rcancel()
		if err == nil {
			listed.Each(func(o kadm.ListedOffset) { check("kadm", o.Partition, o.Offset, o.Err) })
		}
		if len(firstTrue) == partitions && time.Since(restarted) > 5*time.Second {
			break
		}
		time.Sleep(10 * time.Millisecond) // pace the rounds; each one asks every node
	}
	if len(firstTrue) != partitions {
		t.Fatalf("only partitions %v answered their end offset within 45 s of the restart (%d answers, %d retriable errors)",
			firstTrue, answers, retriable)
	}
	var slowest time.Duration
	for _, d := range firstTrue {
		slowest = max(slowest, d)
	}
	t.Logf("%d answers after the restart: %d true end offsets, %d retriable errors; first answer after %v, last retriable error after %v, every partition's end offset answered within %v",
		answers, trueAnswers, retriable, firstAnswer.Round(time.Millisecond), lastRetriable.Round(time.Millisecond), slowest.Round(time.Millisecond))
}
