//go:build ignore

// create-probe.go: the client side of scripts/create-topics.sh, run with
// `go run scripts/create-probe.go -b ADDRS [-topics N] [-partitions N] [-rf N]`.
// It sends one CreateTopics request of N new topics and prints one line of
// `key=value` figures:
//
//	create_ms     the wall time of the request, from send to answer
//	commits       metadata-log entries the request caused: the metadata
//	              quorum's high watermark (DescribeQuorum, which any node
//	              forwards to the controller; a one-voter node answers its
//	              image's offset) just after the answer minus just before
//	              the request
//	drift         how far the high watermark moved in the second after the
//	              answer, with no request: entries the cluster writes on
//	              its own (producer id blocks, __consumer_offsets, ISR
//	              changes), which commits may hold too; before the request
//	              the probe waits (up to 30 s) until the high watermark
//	              stays put for -settle, so that the entries of a fresh
//	              cluster's start are not counted
//	errors        topics answered with an error code (the figures of a
//	              run with errors are not comparable)
//
// The probe needs nothing newer than DescribeQuorum v0, so it measures
// older builds of wren too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	brokers := flag.String("b", "", "bootstrap addresses, comma-separated")
	topics := flag.Int("topics", 100, "topics in the one CreateTopics request")
	partitions := flag.Int("partitions", 1, "partitions of each topic")
	rf := flag.Int("rf", 1, "replication factor of each topic")
	prefix := flag.String("prefix", "probe", "topic names are PREFIX-0, PREFIX-1, ...")
	settle := flag.Duration("settle", time.Second, "before the request, wait until the high watermark stays put this long")
	flag.Parse()
	if *brokers == "" || *topics < 1 || *topics > 10000 {
		fmt.Fprintln(os.Stderr, "usage: create-probe -b ADDRS [-topics 1..10000] [-partitions N] [-rf N] [-prefix P]")
		os.Exit(2)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.RetryTimeout(time.Minute))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	ctx := context.Background()

	before := highWatermark(ctx, cl)
	for settleBy := time.Now().Add(30 * time.Second); ; {
		time.Sleep(*settle) // a fixed window to see the log still, not a wait for a condition
		now := highWatermark(ctx, cl)
		if now == before {
			break
		}
		if time.Now().After(settleBy) {
			fail(fmt.Errorf("the metadata log did not settle in 30 s (high watermark %d, then %d)", before, now))
		}
		before = now
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60000
	for i := range *topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = fmt.Sprintf("%s-%d", *prefix, i)
		t.NumPartitions, t.ReplicationFactor = int32(*partitions), int16(*rf)
		req.Topics = append(req.Topics, t)
	}
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	took := time.Since(start)
	if err != nil {
		fail(fmt.Errorf("CreateTopics: %w", err))
	}
	after := highWatermark(ctx, cl)
	errs, first := 0, ""
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			errs++
			if first == "" {
				first = fmt.Sprintf(" first_error=%q", t.Topic+": "+kerr.ErrorForCode(t.ErrorCode).Error())
			}
		}
	}
	time.Sleep(time.Second) // a fixed window for the drift figure, not a wait for a condition
	later := highWatermark(ctx, cl)
	fmt.Printf("create_ms=%.1f commits=%d drift=%d hw_before=%d hw_after=%d topics=%d errors=%d%s\n",
		float64(took.Microseconds())/1000, after-before, later-after, before, after, *topics, errs, first)
}

// highWatermark asks for the metadata quorum's high watermark, retrying
// for up to 30 seconds while no controller answers.
func highWatermark(ctx context.Context, cl *kgo.Client) int64 {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
			err = fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
		}
		if err == nil {
			p := resp.Topics[0].Partitions[0]
			if err = kerr.ErrorForCode(p.ErrorCode); err == nil && p.LeaderID >= 0 {
				return p.HighWatermark
			}
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("DescribeQuorum: no high watermark after 30 s (last error %v)", err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "create-probe:", err)
	os.Exit(1)
}
