//go:build ignore

// scale-probe.go: the client side of scripts/scale-cluster.sh, run with
// `go run scripts/scale-probe.go -b ADDRS COMMAND [ARGS]`. Every command
// prints one line of `key=value` figures for the script to show.
//
//	create TOPICS PARTITIONS RF BATCH   create TOPICS topics (scale-0..) of PARTITIONS
//	                                    partitions in CreateTopics requests of BATCH topics
//	metadata                            one Metadata request for all topics: time, bytes, counts
//	listoffsets                         ListOffsets (latest) for every partition, one request
//	                                    per leader, sent at once: time and bytes
//	wait-isr RF TIMEOUT                 wait until every partition has RF replicas in its ISR
//	wait-moved NODE SINCE_NS TIMEOUT    wait until Metadata shows a controller other than NODE
//	                                    and no partition led by NODE or leaderless; times from
//	                                    SINCE_NS (unix nanoseconds, the kill)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	brokers := flag.String("b", "", "bootstrap addresses, comma-separated")
	flag.Parse()
	args := flag.Args()
	if *brokers == "" || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: scale-probe -b ADDRS COMMAND [ARGS]")
		os.Exit(2)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.RequestTimeoutOverhead(2*time.Minute),
		kgo.RetryTimeout(2*time.Minute))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	ctx := context.Background()
	switch args[0] {
	case "create":
		create(ctx, cl, atoi(args[1]), atoi(args[2]), atoi(args[3]), atoi(args[4]))
	case "metadata":
		start := time.Now()
		md := metadata(ctx, cl)
		took := time.Since(start)
		parts := 0
		for _, t := range md.Topics {
			parts += len(t.Partitions)
		}
		fmt.Printf("metadata_ms=%.1f metadata_bytes=%d topics=%d partitions=%d\n", ms(took), len(md.AppendTo(nil)), len(md.Topics), parts)
	case "listoffsets":
		listOffsets(ctx, cl)
	case "wait-isr":
		rf, timeout := atoi(args[1]), seconds(args[2])
		start := time.Now()
		for {
			md := metadata(ctx, cl)
			short, total := 0, 0
			for _, t := range md.Topics {
				for _, p := range t.Partitions {
					total++
					if len(p.ISR) < rf {
						short++
					}
				}
			}
			if short == 0 && total > 0 {
				fmt.Printf("isr_full_ms=%.0f partitions=%d\n", ms(time.Since(start)), total)
				return
			}
			if time.Since(start) > timeout {
				fail(fmt.Errorf("%d of %d partitions still have fewer than %d replicas in their ISR after %v", short, total, rf, timeout))
			}
			time.Sleep(200 * time.Millisecond)
		}
	case "wait-moved":
		node, since, timeout := int32(atoi(args[1])), time.Unix(0, int64(atoi(args[2]))), seconds(args[3])
		var controllerAt time.Duration
		for {
			md, err := metadataOnce(ctx, cl)
			if err == nil {
				if controllerAt == 0 && md.ControllerID >= 0 && md.ControllerID != node {
					controllerAt = time.Since(since)
				}
				led, leaderless := 0, 0
				for _, t := range md.Topics {
					for _, p := range t.Partitions {
						switch p.Leader {
						case node:
							led++
						case -1:
							leaderless++
						}
					}
				}
				if controllerAt > 0 && led == 0 && leaderless == 0 && len(md.Topics) > 0 {
					fmt.Printf("new_controller_ms=%.0f leaders_moved_ms=%.0f controller=%d\n", ms(controllerAt), ms(time.Since(since)), md.ControllerID)
					return
				}
			}
			if time.Since(since) > timeout {
				fail(fmt.Errorf("after %v: metadata still shows node %d as controller or leader (last error %v)", timeout, node, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
	default:
		fail(fmt.Errorf("unknown command %q", args[0]))
	}
}

// create sends the topics in requests of batch; a topic answered with a
// retriable error (NOT_CONTROLLER while an election is under way, a
// timeout) is asked again, and TOPIC_ALREADY_EXISTS then counts as made.
func create(ctx context.Context, cl *kgo.Client, topics, partitions, rf, batch int) {
	start := time.Now()
	requests, retried := 0, 0
	var todo []string
	for i := range topics {
		todo = append(todo, fmt.Sprintf("scale-%d", i))
	}
	asked := map[string]bool{}
	why := map[string]int{}
	for len(todo) > 0 {
		if time.Since(start) > 10*time.Minute {
			fail(fmt.Errorf("CreateTopics: %d topics not created after 10 minutes", len(todo)))
		}
		n := min(batch, len(todo))
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 120000
		for _, name := range todo[:n] {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic = name
			t.NumPartitions, t.ReplicationFactor = int32(partitions), int16(rf)
			req.Topics = append(req.Topics, t)
		}
		todo = todo[n:]
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			fail(fmt.Errorf("CreateTopics: %w", err))
		}
		requests++
		for _, t := range resp.Topics {
			err := kerr.ErrorForCode(t.ErrorCode)
			switch {
			case err == nil:
			case errors.Is(err, kerr.TopicAlreadyExists) && asked[t.Topic]:
			case kerr.IsRetriable(err) || errors.Is(err, kerr.NotController) || errors.Is(err, kerr.RequestTimedOut):
				retried++
				why[err.Error()]++
				asked[t.Topic] = true
				todo = append(todo, t.Topic)
			default:
				fail(fmt.Errorf("CreateTopics %s: %w", t.Topic, err))
			}
		}
		if retried > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	fmt.Printf("create_ms=%.0f topics=%d partitions=%d requests=%d retried_topics=%d", ms(time.Since(start)), topics, topics*partitions, requests, retried)
	for err, n := range why {
		fmt.Printf(" (%d: %s)", n, strings.SplitN(err, ":", 2)[0])
	}
	fmt.Println()
}

func metadataOnce(ctx context.Context, cl *kgo.Client) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return req.RequestWith(ctx, cl)
}

func metadata(ctx context.Context, cl *kgo.Client) *kmsg.MetadataResponse {
	md, err := metadataOnce(ctx, cl)
	if err != nil {
		fail(fmt.Errorf("Metadata: %w", err))
	}
	return md
}

func listOffsets(ctx context.Context, cl *kgo.Client) {
	md := metadata(ctx, cl)
	reqs := map[int32]*kmsg.ListOffsetsRequest{}
	for _, t := range md.Topics {
		byLeader := map[int32]*kmsg.ListOffsetsRequestTopic{}
		for _, p := range t.Partitions {
			req := reqs[p.Leader]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				reqs[p.Leader] = req
			}
			rt := byLeader[p.Leader]
			if rt == nil {
				req.Topics = append(req.Topics, kmsg.NewListOffsetsRequestTopic())
				rt = &req.Topics[len(req.Topics)-1]
				rt.Topic = *t.Topic
				byLeader[p.Leader] = rt
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.Partition, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			// A topic's entry may have moved when req.Topics grew.
			byLeader[p.Leader] = &req.Topics[len(req.Topics)-1]
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var bytes, parts, errs int
	start := time.Now()
	for leader, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail(fmt.Errorf("ListOffsets to node %d: %w", leader, err))
			}
			bytes += len(resp.AppendTo(nil))
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					parts++
					if p.ErrorCode != 0 {
						errs++
					}
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("listoffsets_ms=%.1f listoffsets_bytes=%d partitions=%d errors=%d requests=%d\n", ms(time.Since(start)), bytes, parts, errs, len(reqs))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail(err)
	}
	return n
}

func seconds(s string) time.Duration { return time.Duration(atoi(s)) * time.Second }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale-probe:", err)
	os.Exit(1)
}
