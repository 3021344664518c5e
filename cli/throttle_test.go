package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// planThrottle is Kafka's: leaders are the current replicas, followers
// the replicas being added, brokers all of them.
func TestPlanThrottle(t *testing.T) {
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("a", 0, []int32{2, 3})
	req.Assign("a", 1, []int32{1, 2})
	md := kadm.Metadata{Topics: kadm.TopicDetails{"a": {Topic: "a", Partitions: kadm.PartitionDetails{
		0: {Partition: 0, Replicas: []int32{1, 2}},
		1: {Partition: 1, Replicas: []int32{1, 2}},
	}}}}
	th, err := planThrottle(req, md)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(th.Leaders["a"], ","); got != "0:1,0:2,1:1,1:2" {
		t.Errorf("leaders %q", got)
	}
	if got := strings.Join(th.Followers["a"], ","); got != "0:3" {
		t.Errorf("followers %q", got)
	}
	if !slices.Equal(th.Brokers, []int32{1, 2, 3}) {
		t.Errorf("brokers %v", th.Brokers)
	}
	req.Assign("gone", 0, []int32{1})
	if _, err := planThrottle(req, md); err == nil {
		t.Error("a throttle planned for an unknown topic")
	}
}

// `partitions move --throttle` sets the throttle as kafka-reassign-partitions
// --execute --throttle does; while the move is held back, neither
// `topic describe --under-replicated-partitions` nor `cluster health`
// report the moving partition (its original replica is in sync); once the
// move completes, move-status removes the throttle and says so, and
// `move --wait --throttle` removes it by itself.
func TestPartitionsMoveThrottleThreeBrokers(t *testing.T) {
	brokers := threeWrenBrokers(t)
	var seeds []string
	for _, x := range brokers {
		seeds = append(seeds, x.Addr().String())
	}
	b := strings.Join(seeds, ",")
	mustRun(t, "", "topic", "create", "th", "-p", "1", "-r", "1", "-b", b)
	var src int32
	pollUntil(t, "th/0 led, on every node", func() bool {
		for _, x := range brokers {
			tp := x.Controller().Image().Topic("th")
			if tp == nil || tp.Partitions[0].Leader < 0 {
				return false
			}
			src = tp.Partitions[0].Leader
		}
		return true
	})
	dst := src%3 + 1

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("th"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rs []*kgo.Record
	for i := 0; i < 64; i++ {
		rs = append(rs, &kgo.Record{Value: []byte(strings.Repeat("0123456789abcdef", 250))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "", "partitions", "move", fmt.Sprintf("th/0:%d", dst), "--throttle", "1024", "-b", b).stdout
	ids := joinIDs(sortedIDs(src, dst))
	if !strings.Contains(out, "The inter-broker throttle limit was set to 1024 B/s on brokers "+ids) || !strings.Contains(out, "started") {
		t.Fatalf("move --throttle printed:\n%s", out)
	}
	// Any node may answer; each has the configs once its metadata does.
	var desc string
	pollUntil(t, "topic describe to show the throttle and the move", func() bool {
		desc = mustRun(t, "", "topic", "describe", "th", "-b", b).stdout
		return strings.Contains(desc, fmt.Sprintf("leader.replication.throttled.replicas=0:%d", src)) &&
			strings.Contains(desc, fmt.Sprintf("follower.replication.throttled.replicas=0:%d", dst)) &&
			strings.Contains(desc, fmt.Sprintf("Adding Replicas: %d\tRemoving Replicas: %d", dst, src))
	})
	// Moving, held back by the throttle: not under-replicated.
	var st []movingPartition
	res := mustRun(t, "", "partitions", "move-status", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || len(st) != 1 {
		t.Fatalf("move-status json %q: %v", res.stdout, err)
	}
	if strings.Contains(res.stderr, "Clearing") {
		t.Fatalf("move-status cleared the throttle of a move under way:\n%s", res.stderr)
	}
	if out := mustRun(t, "", "topic", "describe", "--under-replicated-partitions", "-b", b).stdout; out != "" {
		t.Fatalf("the moving partition is reported under-replicated:\n%s", out)
	}
	hres := run(t, "", "cluster", "health", "--format", "json", "-b", b)
	var h struct {
		UnderReplicated []string `json:"under_replicated_partitions"`
	}
	if err := json.Unmarshal([]byte(hres.stdout), &h); err != nil || len(h.UnderReplicated) != 0 {
		t.Fatalf("cluster health during the move (%v): %s", err, hres.stdout)
	}

	// The operator raises the rate (kafka-configs); the move completes
	// and move-status, as --verify, removes the throttle.
	fast := "1073741824"
	if r, err := retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottleRate, Value: &fast}, {Op: kadm.SetConfig, Name: followerThrottleRate, Value: &fast},
		}, src, dst)
	}); err != nil || alterErr("raise", r, nil) != nil {
		t.Fatalf("raise the rate: %v %v", err, alterErr("raise", r, nil))
	}
	pollUntil(t, "the move to complete", func() bool {
		p := brokers[0].Controller().Image().Topic("th").Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{dst})
	})
	out = mustRun(t, "", "partitions", "move-status", "-b", b).stdout
	if !strings.Contains(out, "No partition is being moved") || !strings.Contains(out, "Clearing broker-level throttles on brokers "+ids) ||
		!strings.Contains(out, "Clearing topic-level throttles on topics th") {
		t.Fatalf("move-status after the move:\n%s", out)
	}
	// Each new view that still shows the throttle is logged, so that a
	// timeout says which node kept it.
	var logged string
	// Every node's image, not only the one that answered: the second
	// move-status may ask a node whose image still shows the throttle, and
	// would (harmlessly) clear it again.
	pollUntil(t, "the throttle gone from the topic on every node", func() bool {
		desc = mustRun(t, "", "topic", "describe", "th", "-b", b).stdout
		var views []string
		kept := strings.Contains(desc, "throttled")
		for _, x := range brokers {
			im := x.Controller().Image()
			cfgs := im.Topic("th").Configs
			for k := range cfgs {
				kept = kept || strings.Contains(k, "throttled")
			}
			for _, id := range []int32{src, dst} {
				for k := range im.BrokerConfigs(fmt.Sprint(id)) {
					kept = kept || strings.Contains(k, "throttled")
				}
			}
			views = append(views, fmt.Sprintf("node %d (acting %v): %v", x.Controller().NodeID(), x.Controller().Acting(), cfgs))
		}
		if !kept {
			return true
		}
		if view := desc + strings.Join(views, "; "); view != logged {
			logged = view
			t.Logf("topic describe still shows a throttle:\n%s\nimages: %s", desc, strings.Join(views, "; "))
		}
		return false
	})
	if out := mustRun(t, "", "partitions", "move-status", "-b", b).stdout; strings.Contains(out, "Clearing") {
		t.Fatalf("a second move-status cleared again:\n%s", out)
	}

	// --wait removes the throttle once its moves complete.
	out = mustRun(t, "", "partitions", "move", fmt.Sprintf("th/0:%d", src), "--throttle", "104857600", "--wait", "-b", b).stdout
	if !strings.Contains(out, "All 1 moves completed") || !strings.Contains(out, "Clearing topic-level throttles on topics th") {
		t.Fatalf("move --throttle --wait printed:\n%s", out)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		if hasDynamicAny(rc.Configs) {
			t.Fatalf("broker %s keeps a throttle rate after move --wait", rc.Name)
		}
	}
	mustFail(t, "", "partitions", "move", "th/0:1", "--throttle", "-5", "-b", b)
}

// retryNotController runs the call again while a resource answers
// NOT_CONTROLLER, and returns any other answer at once: a refusal for
// another reason, a request error, or success.
func TestRetryNotController(t *testing.T) {
	answers := []kadm.AlterConfigsResponses{
		{{Name: "1", Err: kerr.NotController}, {Name: "2"}},
		{{Name: "1"}, {Name: "2", Err: kerr.NotController}},
		{{Name: "1"}, {Name: "2"}},
	}
	calls := 0
	res, err := retryNotController(context.Background(), func() (kadm.AlterConfigsResponses, error) {
		calls++
		return answers[min(calls, len(answers))-1], nil
	})
	if err != nil || calls != 3 || alterErr("alter", res, err) != nil {
		t.Fatalf("after %d calls: %+v %v, want success on the third", calls, res, err)
	}
	for _, c := range []struct {
		res kadm.AlterConfigsResponses
		err error
	}{
		{kadm.AlterConfigsResponses{{Name: "1", Err: kerr.InvalidConfig}}, nil},
		{nil, errors.New("connection refused")},
	} {
		calls = 0
		res, err := retryNotController(context.Background(), func() (kadm.AlterConfigsResponses, error) {
			calls++
			return c.res, c.err
		})
		if calls != 1 || err != c.err || len(res) != len(c.res) {
			t.Fatalf("answer %+v %v: %d calls, returned %+v %v; want one call, the answer as it is", c.res, c.err, calls, res, err)
		}
	}
	// A context that ends stops the retries with the last answer.
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	res, err = retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) {
		calls++
		cancel()
		return answers[0], nil
	})
	if calls != 1 || err != nil || !errors.Is(alterErr("alter", res, err), kerr.NotController) {
		t.Fatalf("with the context ended: %d calls, %+v %v; want one call and NOT_CONTROLLER", calls, res, err)
	}
}

func hasDynamicAny(cs []kadm.Config) bool {
	for _, c := range cs {
		if (c.Key == leaderThrottleRate || c.Key == followerThrottleRate) && c.MaybeValue() != "9223372036854775807" {
			return true
		}
	}
	return false
}

func sortedIDs(ids ...int32) []int32 {
	slices.Sort(ids)
	return ids
}
