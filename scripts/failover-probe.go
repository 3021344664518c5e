//go:build ignore

// failover-probe.go: the client side of scripts/failover.sh, built with
// `go build -o PROBE scripts/failover-probe.go`. One run on a fresh
// three-node cluster:
//
//  1. wait until the three nodes name the same controller and list three
//     brokers; create TOPIC (3 partitions, RF 3, min.insync.replicas 2) and
//     wait until every node shows each partition led with a full ISR;
//  2. with -slow, send SIGUSR1 to the controller's process (a faultfs build
//     then delays its syncs, broker/servefs_faultfs.go);
//  3. produce with acks=all to the partition the controller leads (another
//     if it leads none) for -warmup, a record every 5 ms;
//  4. SIGKILL the controller's process and poll Metadata on each survivor
//     every -poll until both name the same controller other than the dead
//     one, while the producer goes on; then wait for the first record sent
//     after the kill to be acknowledged.
//
// It prints one line of key=value figures: new_controller_ms (kill to both
// survivors naming the new controller), first_ms and second_ms (kill to the
// first and the second survivor naming it), produce_ms (kill to the first
// acknowledgement of a record sent after the kill), warmup_acks and
// warmup_p50_ms (acknowledgements during the warm-up and their median
// latency: the slow disk shows there), warmup_controller_changes (how
// often a node's answer for the controller changed during the warm-up: a
// controller its slow disk deposes shows there; warmup_first_change_ms says
// when the first came, from the start of the warm-up), controller_at_kill
// (whether every node still named it at the kill) and killed_unix_ms.
//
// Usage:
//
//	failover-probe -nodes 1=PID@ADDR,2=PID@ADDR,3=PID@ADDR [-slow] [-warmup 2s] [-poll 10ms] [-timeout 60s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type node struct {
	id   int32
	pid  int
	addr string
	cl   *kgo.Client // this node only, no retries
}

func main() {
	nodesFlag := flag.String("nodes", "", "ID=PID@ADDR for each node, comma-separated")
	slow := flag.Bool("slow", false, "send SIGUSR1 to the controller before the warm-up (faultfs build: slow syncs)")
	warmup := flag.Duration("warmup", 2*time.Second, "produce this long before the kill")
	poll := flag.Duration("poll", 10*time.Millisecond, "Metadata poll interval on each survivor")
	timeout := flag.Duration("timeout", 60*time.Second, "bound of each wait")
	topic := flag.String("topic", "failover", "topic to create and produce to")
	flag.Parse()
	nodes, err := parseNodes(*nodesFlag)
	if err != nil {
		fail(err)
	}
	for _, n := range nodes {
		if n.cl, err = kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0)); err != nil {
			fail(err)
		}
		defer n.cl.Close()
	}
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.addr)
	}
	ctx := context.Background()

	// 1. A controller all three agree on, and the topic.
	var ctrl int32
	waitUntil("a controller named by every node and three brokers", *timeout, func() bool {
		ctrl = -1
		for _, n := range nodes {
			md, err := metadata(ctx, n, nil)
			if err != nil || md.ControllerID < 0 || len(md.Brokers) != 3 || (ctrl >= 0 && md.ControllerID != ctrl) {
				return false
			}
			ctrl = md.ControllerID
		}
		return true
	})
	admin, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		fail(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	minISR := "2"
	waitUntil("topic creation", *timeout, func() bool {
		resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, *topic)
		return err == nil && resp.Err == nil
	})
	var leaders map[int32]int32
	waitUntil("every partition led with a full ISR on every node", *timeout, func() bool {
		for _, n := range nodes {
			md, err := metadata(ctx, n, []string{*topic})
			if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
				return false
			}
			leaders = map[int32]int32{}
			for _, p := range md.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
					return false
				}
				leaders[p.Partition] = p.Leader
			}
		}
		return true
	})
	var victim *node
	for _, n := range nodes {
		if n.id == ctrl {
			victim = n
		}
	}
	if victim == nil {
		fail(fmt.Errorf("controller %d is none of the nodes given", ctrl))
	}
	partition, ledByCtrl := int32(0), false
	for p := int32(0); p < 3; p++ {
		if leaders[p] == ctrl {
			partition, ledByCtrl = p, true
			break
		}
	}

	// 2. The slow disk.
	if *slow {
		if err := syscall.Kill(victim.pid, syscall.SIGUSR1); err != nil {
			fail(fmt.Errorf("SIGUSR1 to node %d (pid %d): %w", ctrl, victim.pid, err))
		}
	}

	// 3. The producer: a record every 5 ms, acks=all, to one partition;
	// metadata refreshed as often as kgo allows, so that the figure is the
	// broker's, not the client's backoff.
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(*topic),
		kgo.MetadataMinAge(10*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(*timeout), kgo.ProducerLinger(0))
	if err != nil {
		fail(err)
	}
	var (
		mu        sync.Mutex
		killedAt  time.Time
		firstAck  time.Time // first ack of a record sent after the kill
		warmLat   []time.Duration
		prodErr   error
		stop      = make(chan struct{})
		producing sync.WaitGroup
	)
	producing.Add(1)
	go func() {
		defer producing.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			sent := time.Now()
			mu.Lock()
			afterKill := !killedAt.IsZero()
			mu.Unlock()
			prod.Produce(ctx, &kgo.Record{Partition: partition, Value: []byte(sent.Format(time.RFC3339Nano))}, func(_ *kgo.Record, err error) {
				acked := time.Now()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					if prodErr == nil {
						prodErr = err
					}
				case afterKill:
					if firstAck.IsZero() {
						firstAck = acked
					}
				case killedAt.IsZero():
					warmLat = append(warmLat, acked.Sub(sent))
				}
			})
		}
	}()
	// Meanwhile every node is asked for the controller every 20 ms: a
	// controller its slow disk deposes shows as changes before the kill.
	warmChanges, firstChange, stillCtrl := watchController(ctx, nodes, ctrl, *warmup)
	firstChangeMS := "none" // no node's answer changed
	if warmChanges > 0 {
		firstChangeMS = fmt.Sprintf("%.0f", ms(firstChange))
	}
	mu.Lock()
	warmAcks := len(warmLat)
	slices.Sort(warmLat)
	warmP50ms := "none" // no record acknowledged during the warm-up
	if warmAcks > 0 {
		warmP50ms = fmt.Sprintf("%.1f", ms(warmLat[warmAcks/2]))
	}
	mu.Unlock()

	// 4. The kill.
	var survivors []*node
	for _, n := range nodes {
		if n != victim {
			survivors = append(survivors, n)
		}
	}
	mu.Lock()
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		mu.Unlock()
		fail(fmt.Errorf("SIGKILL to node %d (pid %d): %w", ctrl, victim.pid, err))
	}
	killed := time.Now()
	killedAt = killed
	mu.Unlock()

	type answer struct {
		who  int
		ctrl int32
		at   time.Time
	}
	answers := make(chan answer, 64)
	done := make(chan struct{})
	var pollers sync.WaitGroup
	for i, n := range survivors {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			t := time.NewTicker(*poll)
			defer t.Stop()
			for {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				md, err := metadata(rctx, n, nil)
				cancel()
				if err == nil {
					select {
					case answers <- answer{i, md.ControllerID, time.Now()}:
					case <-done:
						return
					}
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	last := []answer{{0, -1, time.Time{}}, {1, -1, time.Time{}}}
	// since[i] is when survivor i began naming its current answer.
	since := []time.Time{{}, {}}
	deadline := time.After(*timeout)
	var newCtrl int32 = -1
	var agreed time.Time
	for agreed.IsZero() {
		select {
		case a := <-answers:
			if a.ctrl != last[a.who].ctrl {
				since[a.who] = a.at
			}
			last[a.who] = a
			if last[0].ctrl >= 0 && last[0].ctrl != ctrl && last[0].ctrl == last[1].ctrl {
				newCtrl, agreed = last[0].ctrl, a.at
			}
		case <-deadline:
			fail(fmt.Errorf("after %v the survivors name controllers %d and %d (dead: %d)", *timeout, last[0].ctrl, last[1].ctrl, ctrl))
		}
	}
	close(done)
	pollers.Wait()
	first, second := since[0], since[1]
	if second.Before(first) {
		first, second = second, first
	}

	waitUntil("an acknowledgement of a record sent after the kill", *timeout, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if prodErr != nil {
			fail(fmt.Errorf("produce: %w", prodErr))
		}
		return !firstAck.IsZero()
	})
	close(stop)
	producing.Wait()
	mu.Lock()
	produceMS := ms(firstAck.Sub(killed))
	mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_ = prod.Flush(fctx)
	cancel()
	prod.Close()
	fmt.Printf("controller=%d new_controller=%d new_controller_ms=%.0f first_ms=%.0f second_ms=%.0f produce_ms=%.0f partition=%d led_by_controller=%t warmup_acks=%d warmup_p50_ms=%s warmup_controller_changes=%d warmup_first_change_ms=%s controller_at_kill=%t slow=%t killed_unix_ms=%d\n",
		ctrl, newCtrl, ms(agreed.Sub(killed)), ms(first.Sub(killed)), ms(second.Sub(killed)), produceMS, partition, ledByCtrl, warmAcks, warmP50ms, warmChanges, firstChangeMS, stillCtrl, *slow, killed.UnixMilli())
}

// watchController asks every node for the controller every 20 ms for span
// and returns how often a node's answer changed (a failed request is no
// answer), when the first change was seen (from the start) and whether
// every node's last answer still named ctrl.
func watchController(ctx context.Context, nodes []*node, ctrl int32, span time.Duration) (changes int, first time.Duration, still bool) {
	last := make([]int32, len(nodes))
	for i := range last {
		last[i] = ctrl
	}
	start := time.Now()
	end := start.Add(span)
	for time.Now().Before(end) {
		for i, n := range nodes {
			rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			md, err := metadata(rctx, n, nil)
			cancel()
			if err == nil && md.ControllerID != last[i] {
				if changes == 0 {
					first = time.Since(start)
				}
				changes++
				last[i] = md.ControllerID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range last {
		if c != ctrl {
			return changes, first, false
		}
	}
	return changes, first, true
}

func parseNodes(s string) ([]*node, error) {
	var nodes []*node
	for _, f := range strings.Split(s, ",") {
		id, rest, ok1 := strings.Cut(f, "=")
		pid, addr, ok2 := strings.Cut(rest, "@")
		i, err1 := strconv.Atoi(id)
		p, err2 := strconv.Atoi(pid)
		if !ok1 || !ok2 || errors.Join(err1, err2) != nil || addr == "" {
			return nil, fmt.Errorf("-nodes: %q is not ID=PID@ADDR", f)
		}
		nodes = append(nodes, &node{id: int32(i), pid: p, addr: addr})
	}
	if len(nodes) != 3 {
		return nil, fmt.Errorf("-nodes: want three nodes, have %d", len(nodes))
	}
	return nodes, nil
}

// metadata asks node n itself (not whichever broker kgo picks).
func metadata(ctx context.Context, n *node, topics []string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := n.cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// waitUntil polls ok every 20 ms until it holds, or fails after timeout.
func waitUntil(what string, timeout time.Duration, ok func() bool) {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			fail(fmt.Errorf("no %s within %v", what, timeout))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "failover-probe:", err)
	os.Exit(1)
}
