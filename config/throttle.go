package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ThrottledReplicas is a *.replication.throttled.replicas topic config
// (KIP-73) as it concerns one broker: every partition ("*"), or the
// partitions listed with the broker's id.
type ThrottledReplicas struct {
	All        bool
	Partitions map[int32]bool
}

// Has reports whether partition is throttled.
func (r ThrottledReplicas) Has(partition int32) bool {
	return r.All || r.Partitions[partition]
}

// ParseThrottledReplicas reads a throttled replicas list as a topic's
// configs hold it (the text of a list: "0:1,0:2", "*" or "") and keeps
// what concerns broker, as Kafka's TopicConfigHandler does.
func ParseThrottledReplicas(value string, broker int32) (ThrottledReplicas, error) {
	var items []string
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	pairs, err := parseThrottledReplicas(items)
	if err != nil {
		return ThrottledReplicas{}, err
	}
	if pairs == nil {
		return ThrottledReplicas{All: true}, nil
	}
	out := ThrottledReplicas{Partitions: map[int32]bool{}}
	for _, p := range pairs {
		if p[1] == broker {
			out.Partitions[p[0]] = true
		}
	}
	return out, nil
}

// parseThrottledReplicas checks a list as Kafka's
// ThrottledReplicaListValidator does: "*" alone, or partition:broker
// pairs of non-negative ids. nil pairs with no error mean "*".
func parseThrottledReplicas(items []string) ([][2]int32, error) {
	if len(items) == 1 && strings.TrimSpace(items[0]) == "*" {
		return nil, nil
	}
	pairs := make([][2]int32, 0, len(items))
	for _, item := range items {
		item = strings.TrimSpace(item)
		p, b, ok := strings.Cut(item, ":")
		pid, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bid, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil || pid < 0 || bid < 0 || pid > math.MaxInt32 {
			return nil, fmt.Errorf("%q must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", strings.Join(items, ","))
		}
		pairs = append(pairs, [2]int32{int32(pid), int32(bid)})
	}
	return pairs, nil
}
