package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
)

// CreateTopics: v2-7
//
// Behavior:
// * Each topic succeeds or fails on its own, with Kafka's error codes and
//   messages: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION (Kafka's name
//   rules, which also keep names from escaping the data directory),
//   INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (above the number of
//   nodes), INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG (the config
//   registry's validators, and a key AlterConfigs would refuse on a topic:
//   one wren does not apply yet, with the same message; checkSettable).
// * -1 partitions or replication factor take num.partitions and
//   default.replication.factor.
// * ValidateOnly checks everything and writes nothing.
// * v5+: the topic's configs, partition count and replication factor in
//   the response; v7: the topic id.
// * A topic is created when its records are durable in the metadata log;
//   its partitions are ready when the response leaves.
// * While the log dir is failed or below its free-space floor, every topic
//   gets KAFKA_STORAGE_ERROR with the reason, and nothing is created: its
//   partitions could not be opened, and would answer
//   UNKNOWN_TOPIC_OR_PARTITION.
// * Authorization: CREATE on the cluster, or on each topic
//   (TOPIC_AUTHORIZATION_FAILED, nothing created); a created topic's configs
//   only with DESCRIBE_CONFIGS on it (else its config error code is
//   TOPIC_AUTHORIZATION_FAILED, v5+).
//
// Not implemented:
// * TimeoutMillis is ignored: creation is synchronous.

func (s *Server) handleCreateTopics(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	n := s.node()
	specs := make([]cluster.CreateTopic, len(r.Topics))
	// refused holds a topic's config that no run-time request may set; it
	// is answered without asking the controller.
	refused := make([]error, len(r.Topics))
	az := s.authz(req)
	// As Kafka: CREATE on the cluster allows every topic, else CREATE on
	// each topic (TOPIC_AUTHORIZATION_FAILED); only the latter is logged.
	clusterCreate := az.check(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, ClusterResourceName)
	for i, t := range r.Topics {
		if !clusterCreate && !az.allow(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, t.Topic) {
			refused[i] = kerr.TopicAuthorizationFailed
		}
		spec := cluster.CreateTopic{Name: t.Topic, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]*string{}}
		for _, a := range t.ReplicaAssignment {
			for int(a.Partition) >= len(spec.Assignment) {
				spec.Assignment = append(spec.Assignment, nil)
			}
			spec.Assignment[a.Partition] = a.Replicas
		}
		for _, c := range t.Configs {
			spec.Configs[c.Name] = c.Value
			if c.Value != nil && refused[i] == nil {
				refused[i] = checkSettable(c.Name, config.AlterTopic)
			}
		}
		specs[i] = spec
	}
	if err := logDirWritable(n); err != nil {
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, rt)
		}
		return Respond(resp), nil
	}
	var asked []cluster.CreateTopic
	for i, spec := range specs {
		if refused[i] == nil {
			asked = append(asked, spec)
		}
	}
	var answers []cluster.TopicResult
	if len(asked) > 0 {
		var err error
		if answers, err = n.Controller.CreateTopics(context.Background(), asked, r.ValidateOnly); err != nil {
			return nil, err
		}
	}
	results := make([]cluster.TopicResult, len(specs))
	for i, spec := range specs {
		if refused[i] != nil {
			results[i] = cluster.TopicResult{Name: spec.Name, Err: refused[i]}
			continue
		}
		results[i], answers = answers[0], answers[1:]
	}
	for i, res := range results {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = res.Name
		rt.ErrorCode = errorCode(res.Err)
		rt.ErrorMessage = kafkaMessage(res.Err)
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		if res.Err == nil && !az.check(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, res.Name) {
			// Created, but its configs are not the principal's to see.
			rt.TopicID = res.ID
			rt.NumPartitions, rt.ReplicationFactor = res.NumPartitions, res.ReplicationFactor
			rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if res.Err == nil {
			rt.TopicID = res.ID
			rt.NumPartitions, rt.ReplicationFactor = res.NumPartitions, res.ReplicationFactor
			overrides := map[string]string{}
			for k, v := range specs[i].Configs {
				if v != nil {
					overrides[k] = *v
				}
			}
			if described, err := n.Config.DescribeTopic(overrides, nil); err == nil {
				for _, d := range described {
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name, c.Value, c.ReadOnly, c.Source = d.Name, d.Value, d.ReadOnly, int8(d.Source)
					rt.Configs = append(rt.Configs, c)
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

// logDirWritable is nil when this node's log dir can take new partitions:
// healthy and above its free-space floor.
func logDirWritable(n *Node) error {
	if n.Partitions == nil {
		return nil
	}
	if err := n.Partitions.CheckWritable(); err != nil {
		return fmt.Errorf("cannot create partitions here: %w", err)
	}
	return nil
}
