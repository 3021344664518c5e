package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// Metadata: v0-12
//
// Behavior:
// * Brokers: every live node, with the advertised host and port of this
//   listener (its own, or the one it registered in the metadata log); the
//   controller is the acting controller (-1 during an election).
// * ISR: the committed ISR of the metadata image (isr.go).
// * All topics when Topics is null (or, in v0, empty), internal ones
//   (__consumer_offsets) included with is_internal set, as Kafka lists
//   them: clients and tools filter on the flag (kafka-topics
//   --exclude-internal, franz-go's and the Java client's regex
//   subscriptions, kadm.ListTopics), so hiding them here made those
//   filters mean nothing.
// * A named topic that does not exist is created when the request allows
//   auto-creation (v4+, always before) and auto.create.topics.enable is
//   on, with the broker's defaults; otherwise UNKNOWN_TOPIC_OR_PARTITION.
//   An illegal name gets INVALID_TOPIC_EXCEPTION.
// * v10+: topic ids, and topics may be named by id.
// * Authorization: all topics lists only those the principal may
//   DESCRIBE; a named topic it may not DESCRIBE (existing or not) gets
//   TOPIC_AUTHORIZATION_FAILED, and so does one to auto-create without
//   CREATE on the cluster or the topic (nothing is created).
// * Authorized operations (v8+): computed when asked
//   (include_cluster_authorized_operations,
//   include_topic_authorized_operations), -2147483648 otherwise, as Kafka.
//
// Not implemented:
// * Racks are null.

func (s *Server) handleMetadata(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	n := s.node()
	c := n.Metadata
	lname, lhost, lport := s.listenerOf(req.Session)
	for _, id := range c.Brokers() {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = id
		if id == c.NodeID() {
			b.Host, b.Port = lhost, lport
		} else if host, port, ok := c.BrokerAddr(id, lname); ok {
			b.Host, b.Port = host, port
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	clusterID := c.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = c.ControllerID()
	az := s.authz(req)
	if r.IncludeClusterAuthorizedOperations && r.Version >= 8 && r.Version <= 10 {
		resp.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeCluster, ClusterResourceName)
	}
	topicOps := func(mt *kmsg.MetadataResponseTopic) {
		if r.IncludeTopicAuthorizedOperations && r.Version >= 8 && mt.Topic != nil {
			mt.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeTopic, *mt.Topic)
		}
	}

	im := c.Image()
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		names := im.TopicNames()
		visible := az.checkAll(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, names)
		for i, name := range names {
			if !visible[i] {
				continue
			}
			mt := metadataTopic(im.Topic(name))
			topicOps(&mt)
			resp.Topics = append(resp.Topics, mt)
		}
		return Respond(resp), nil
	}
	var clusterCreate *bool
	autoCreate := (r.Version < 4 || r.AllowAutoTopicCreation) && n.Config.AutoCreateTopicsEnable
	for _, rt := range r.Topics {
		var t *cluster.TopicImage
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
			t = im.Topic(name)
		} else if r.Version >= 10 {
			t = im.TopicByID(cluster.UUID(rt.TopicID))
		}
		if t != nil {
			name = t.Name
		}
		if az.on() && name != "" && !az.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) {
			// A topic asked for by id is not named to who may not see it.
			resp.Topics = append(resp.Topics, refusedTopic(derefString(rt.Topic), rt.TopicID))
			continue
		}
		if az.on() && t == nil && name == "" {
			// A topic id this principal cannot see or that does not
			// exist: Kafka does not tell the two apart.
			resp.Topics = append(resp.Topics, refusedTopic("", rt.TopicID))
			continue
		}
		if t == nil && name != "" && autoCreate && cluster.ValidateTopicName(name) == nil {
			if clusterCreate == nil {
				ok := az.check(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, ClusterResourceName)
				clusterCreate = &ok
			}
			if !*clusterCreate && !az.allow(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name) {
				resp.Topics = append(resp.Topics, refusedTopic(name, rt.TopicID))
				continue
			}
			t = s.autoCreate(name, &im)
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			if name != "" {
				mt.Topic = &name
			}
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if name != "" {
				if err := cluster.ValidateTopicName(name); err != nil {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				}
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt := metadataTopic(t)
		topicOps(&mt)
		resp.Topics = append(resp.Topics, mt)
	}
	return Respond(resp), nil
}

// refusedTopic is a topic the principal may not see or create.
func refusedTopic(name string, id [16]byte) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	if name != "" {
		mt.Topic = &name
	}
	mt.TopicID = id
	mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
	return mt
}

// autoCreate creates a topic with the broker's defaults; on success it
// refreshes *im and returns the topic.
func (s *Server) autoCreate(name string, im **cluster.Image) *cluster.TopicImage {
	n := s.node()
	res, err := n.Controller.CreateTopics(context.Background(), []cluster.CreateTopic{{Name: name, NumPartitions: -1, ReplicationFactor: -1}}, false)
	if err != nil || (res[0].Err != nil && errorCode(res[0].Err) != kerr.TopicAlreadyExists.Code) {
		return nil
	}
	*im = n.Metadata.Image()
	return (*im).Topic(name)
}

func metadataTopic(t *cluster.TopicImage) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = cluster.IsInternalTopic(t.Name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Partition
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = p.Replicas
		mp.ISR = trueISR(p)
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
