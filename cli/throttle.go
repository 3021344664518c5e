package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replication throttle of a move, as kafka-reassign-partitions
// --throttle sets it (KIP-73): a rate on every broker of the move, and on
// each moving topic the replicas it applies to: as leaders, the
// partitions' current replicas (any may lead); as followers, the replicas
// being added. move-status (Kafka's --verify) removes them once no move it
// looks at is under way.
const (
	leaderThrottleRate        = "leader.replication.throttled.rate"
	followerThrottleRate      = "follower.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// moveThrottle is the throttle a move sets.
type moveThrottle struct {
	// Leaders and Followers are each topic's throttled replicas lists.
	Leaders, Followers map[string][]string
	// Brokers are every broker that holds or receives a moving replica.
	Brokers []int32
}

// planThrottle works out the throttle of req from the partitions'
// current replicas, as Kafka's calculateLeaderThrottles and
// calculateFollowerThrottles do. A partition the metadata does not know
// is an error: its throttle cannot be worked out.
func planThrottle(req kadm.AlterPartitionAssignmentsReq, md kadm.Metadata) (moveThrottle, error) {
	th := moveThrottle{Leaders: map[string][]string{}, Followers: map[string][]string{}}
	brokers := map[int32]bool{}
	for topic, parts := range req {
		t, ok := md.Topics[topic]
		if !ok || t.Err != nil {
			return moveThrottle{}, fmt.Errorf("%w: --throttle: topic %s is not in the cluster metadata (%v)", ErrUnknownTopic, topic, t.Err)
		}
		ids := make([]int32, 0, len(parts))
		for p := range parts {
			ids = append(ids, p)
		}
		slices.Sort(ids)
		for _, p := range ids {
			cur, ok := t.Partitions[p]
			if !ok {
				return moveThrottle{}, fmt.Errorf("%w: --throttle: %s/%d is not in the cluster metadata", ErrUnknownTopic, topic, p)
			}
			for _, r := range cur.Replicas {
				th.Leaders[topic] = append(th.Leaders[topic], fmt.Sprintf("%d:%d", p, r))
				brokers[r] = true
			}
			for _, r := range parts[p] {
				if !slices.Contains(cur.Replicas, r) {
					th.Followers[topic] = append(th.Followers[topic], fmt.Sprintf("%d:%d", p, r))
					brokers[r] = true
				}
			}
		}
	}
	for b := range brokers {
		th.Brokers = append(th.Brokers, b)
	}
	slices.Sort(th.Brokers)
	return th, nil
}

// setMoveThrottle sets the throttle of req at rate bytes per second
// before the move starts, and says so on w.
func setMoveThrottle(ctx context.Context, adm *kadm.Client, w io.Writer, req kadm.AlterPartitionAssignmentsReq, rate int64) error {
	var topics []string
	for t := range req {
		topics = append(topics, t)
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return fmt.Errorf("cli: metadata: %w", err)
	}
	th, err := planThrottle(req, md)
	if err != nil {
		return err
	}
	sort.Strings(topics)
	for _, t := range topics {
		var set []kadm.AlterConfig
		if l := th.Leaders[t]; len(l) > 0 {
			set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: strPtr(strings.Join(l, ","))})
		}
		if l := th.Followers[t]; len(l) > 0 {
			set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerThrottledReplicas, Value: strPtr(strings.Join(l, ","))})
		}
		if len(set) == 0 {
			continue
		}
		res, err := retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) { return adm.AlterTopicConfigs(ctx, set, t) })
		if err := alterErr("set the throttled replicas of "+t, res, err); err != nil {
			return err
		}
	}
	if len(th.Brokers) == 0 {
		return nil
	}
	v := strconv.FormatInt(rate, 10)
	res, err := retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottleRate, Value: &v},
			{Op: kadm.SetConfig, Name: followerThrottleRate, Value: &v},
		}, th.Brokers...)
	})
	if err := alterErr("set the throttle rate", res, err); err != nil {
		return err
	}
	fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s on brokers %s.\n", rate, joinIDs(th.Brokers))
	fmt.Fprintln(w, "Run `wren partitions move-status` until the moves complete: it removes the throttle then.")
	return nil
}

// clearMoveThrottles removes the throttle once no move is under way:
// the rates on every broker that has one of its own, and the throttled
// replicas lists of topics (nil: every topic). It says on w what it
// removed; where nothing is set it does nothing.
func clearMoveThrottles(ctx context.Context, adm *kadm.Client, w io.Writer, topics []string) error {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return fmt.Errorf("cli: metadata: %w", err)
	}
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	var throttledBrokers []int32
	if len(brokers) > 0 {
		described, err := adm.DescribeBrokerConfigs(ctx, brokers...)
		if err != nil {
			return fmt.Errorf("cli: describe broker configs: %w", err)
		}
		for _, rc := range described {
			id, err := strconv.ParseInt(rc.Name, 10, 32)
			if err != nil || rc.Err != nil {
				continue
			}
			if hasDynamic(rc.Configs, kmsg.ConfigSourceDynamicBrokerConfig, leaderThrottleRate, followerThrottleRate) {
				throttledBrokers = append(throttledBrokers, int32(id))
			}
		}
	}
	slices.Sort(throttledBrokers)
	if len(throttledBrokers) > 0 {
		fmt.Fprintf(w, "Clearing broker-level throttles on brokers %s\n", joinIDs(throttledBrokers))
		res, err := retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.DeleteConfig, Name: leaderThrottleRate},
				{Op: kadm.DeleteConfig, Name: followerThrottleRate},
			}, throttledBrokers...)
		})
		if err := alterErr("clear the throttle rates", res, err); err != nil {
			return err
		}
	}
	if topics == nil {
		topics = md.Topics.Names()
	}
	if len(topics) == 0 {
		return nil
	}
	described, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("cli: describe topic configs: %w", err)
	}
	var throttledTopics []string
	for _, rc := range described {
		if rc.Err == nil && hasDynamic(rc.Configs, kmsg.ConfigSourceDynamicTopicConfig, leaderThrottledReplicas, followerThrottledReplicas) {
			throttledTopics = append(throttledTopics, rc.Name)
		}
	}
	sort.Strings(throttledTopics)
	if len(throttledTopics) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Clearing topic-level throttles on topics %s\n", strings.Join(throttledTopics, ","))
	res, err := retryNotController(ctx, func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
			{Op: kadm.DeleteConfig, Name: followerThrottledReplicas},
		}, throttledTopics...)
	})
	return alterErr("clear the throttled replicas", res, err)
}

// hasDynamic reports whether configs hold one of keys set at source.
func hasDynamic(configs []kadm.Config, source kmsg.ConfigSource, keys ...string) bool {
	for _, c := range configs {
		if slices.Contains(keys, c.Key) && c.Source == source {
			return true
		}
	}
	return false
}

// notControllerRetries and notControllerBackoff bound retryNotController:
// about ten seconds, longer than a controller election takes.
const (
	notControllerRetries = 50
	notControllerBackoff = 200 * time.Millisecond
)

// retryNotController runs an alter-configs call again while a resource's
// answer is NOT_CONTROLLER. Kafka's clients retry that code only on
// requests sent to the controller, not per resource of AlterConfigs;
// wren answers it there while a controller election is under way (the
// broker that took the request was, or forwarded it to, a controller
// that just stepped down). SET and DELETE are idempotent, so running the
// whole call again is safe.
func retryNotController(ctx context.Context, alter func() (kadm.AlterConfigsResponses, error)) (kadm.AlterConfigsResponses, error) {
	for attempt := 1; ; attempt++ {
		res, err := alter()
		if err != nil || attempt == notControllerRetries || !slices.ContainsFunc(res, func(r kadm.AlterConfigsResponse) bool {
			return errors.Is(r.Err, kerr.NotController)
		}) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(notControllerBackoff):
		}
	}
}

func alterErr(what string, res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("cli: %s: %w", what, err)
	}
	for _, r := range res {
		if r.Err != nil {
			return kafkaErr(what+" ("+r.Name+")", r.Err, r.ErrMessage)
		}
	}
	return nil
}

func strPtr(s string) *string { return &s }
