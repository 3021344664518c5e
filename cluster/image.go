package cluster

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/wren-broker/wren/security/scram"
)

// Image is the metadata image: the result of applying every committed
// metadata record in order. Images are immutable; applying a record makes a
// new one that shares what did not change, so readers hold an Image without
// locks.
type Image struct {
	// Offset is the metadata log index of the last record applied.
	Offset    uint64
	ClusterID string
	topics    map[string]*TopicImage
	byID      map[UUID]*TopicImage
	// brokerConfigs are dynamic broker configs; key "" holds cluster-wide
	// defaults.
	brokerConfigs map[string]map[string]string
	// NextProducerID is the first producer id never handed out.
	NextProducerID int64
	// brokers are the registered brokers by id.
	brokers map[int32]*BrokerImage
	// ledger is the data-loss ledger, oldest first.
	ledger []DataLossEntry
	// scram are the users' SCRAM credentials by user, then mechanism
	// (scram.go).
	scram map[string]map[scram.Mechanism]ScramCredential
	// quotas are the client quotas by entity, then key (quota.go).
	quotas map[QuotaEntity]map[string]float64
	// secret is the cluster secret (secret.go), nil until recorded.
	secret []byte
	// acls are the ACL bindings (acl.go), nil while there are none.
	acls *aclTable
	// batch is set only while applyRecords applies one entry's records:
	// what this entry already copied, so it copies each only once. Nil
	// on every image anyone else sees.
	batch *applyBatch
}

// applyBatch is what the images made while applying one entry's records
// own: they are never published, so the next record of the entry may
// change what an earlier one copied in place, and applying an entry of n
// partition records costs O(n + topics), not O(n * topics).
type applyBatch struct {
	// topicMaps: topics and byID are this entry's copies.
	topicMaps bool
	// topics made or copied by this entry, Partitions included.
	topics map[*TopicImage]bool
	// aclTable: acls is this entry's own table.
	aclTable bool
}

// applyRecords applies recs, one entry of the metadata log at offset, and
// returns the new image; im is left as it was.
func applyRecords(im *Image, offset uint64, recs []Record) (*Image, error) {
	if len(recs) == 0 {
		return im, nil
	}
	b := &applyBatch{topics: map[*TopicImage]bool{}}
	next := *im
	next.batch = b
	cur := &next
	for _, r := range recs {
		var err error
		if cur, err = cur.apply(offset, r); err != nil {
			return nil, err
		}
	}
	cur.batch = nil
	// The entry's topics are its own: partitions its records appended
	// one at a time are cut to their length, so a topic created with 100
	// partitions holds 100, not the 128 the appends grew to.
	for t := range b.topics {
		if cap(t.Partitions) > len(t.Partitions) {
			t.Partitions = slices.Clone(t.Partitions)
		}
	}
	return cur, nil
}

// TopicImage is one topic.
type TopicImage struct {
	Name       string
	ID         UUID
	Partitions []PartitionImage
	// Configs are the topic's dynamic overrides (Kafka topic config names).
	Configs map[string]string
}

// PartitionImage is one partition's assignment, leader and ISR.
//
// Invariants (kept by the rules of leader.go): Leader is -1 or a member of
// ISR; ISR and ELR are disjoint subsets of Replicas; ELR is empty while
// |ISR| >= min.insync.replicas; LastKnownELR is empty while there is a
// leader.
type PartitionImage struct {
	Partition int32
	// Replicas in assignment order; the first is the preferred leader.
	Replicas []int32
	ISR      []int32
	// ELR are the eligible leader replicas (KIP-966): out of the ISR, but
	// holding every committed record, since the high watermark stopped
	// when the ISR shrank below min.insync.replicas.
	ELR []int32
	// LastKnownELR holds the last leader once the ISR became empty.
	LastKnownELR []int32
	Leader       int32
	// LeaderEpoch bumps on every leader change; PartitionEpoch on every
	// change of this partition's state.
	LeaderEpoch    int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are set while a reassignment is
	// under way (reassign.go). Invariant: both are subsets of Replicas and
	// disjoint; Replicas is the target (the replicas not being removed, in
	// the order asked) followed by RemovingReplicas.
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Reassigning reports whether a reassignment of p is under way.
func (p PartitionImage) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas are the replicas p will have once its reassignment
// completes (Replicas when none is under way).
func (p PartitionImage) TargetReplicas() []int32 {
	return p.Replicas[:len(p.Replicas)-len(p.RemovingReplicas)]
}

func emptyImage() *Image {
	return &Image{topics: map[string]*TopicImage{}, byID: map[UUID]*TopicImage{}, brokerConfigs: map[string]map[string]string{},
		brokers: map[int32]*BrokerImage{}}
}

// Topic returns a topic by name, or nil.
func (im *Image) Topic(name string) *TopicImage { return im.topics[name] }

// TopicByID returns a topic by id, or nil.
func (im *Image) TopicByID(id UUID) *TopicImage { return im.byID[id] }

// TopicNames lists the topics, sorted.
func (im *Image) TopicNames() []string {
	names := slices.Collect(maps.Keys(im.topics))
	sort.Strings(names)
	return names
}

// BrokerConfigs returns the dynamic configs of a broker (name "" for the
// cluster-wide defaults). The map must not be modified.
func (im *Image) BrokerConfigs(name string) map[string]string { return im.brokerConfigs[name] }

// apply returns the image with r applied. Records were validated by the
// controller before they were written; a record that does not fit the image
// is a broken invariant of the metadata log.
func (im *Image) apply(offset uint64, r Record) (*Image, error) {
	next := *im
	next.Offset = offset
	switch r.Kind {
	case KindCluster:
		next.ClusterID = r.Cluster.ClusterID
	case KindTopic:
		if im.topics[r.Topic.Name] != nil || im.byID[r.Topic.ID] != nil {
			return nil, fmt.Errorf("cluster: metadata record %d creates topic %q that exists", offset, r.Topic.Name)
		}
		t := &TopicImage{Name: r.Topic.Name, ID: r.Topic.ID, Configs: map[string]string{}}
		next.ownTopicMaps(im)
		next.topics[t.Name], next.byID[t.ID] = t, t
		if next.batch != nil {
			next.batch.topics[t] = true
		}
	case KindPartition:
		p := r.Partition
		old := im.byID[p.TopicID]
		if old == nil {
			return nil, fmt.Errorf("cluster: metadata record %d: partition of unknown topic %s", offset, p.TopicID)
		}
		t := old
		if next.batch == nil || !next.batch.topics[old] {
			cp := *old
			cp.Partitions = slices.Clone(old.Partitions)
			t = &cp
			if next.batch != nil {
				next.batch.topics[t] = true
			}
		}
		pi := PartitionImage{Partition: p.Partition, Replicas: p.Replicas, ISR: p.ISR, ELR: p.ELR, LastKnownELR: p.LastKnownELR,
			Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas}
		switch {
		case int(p.Partition) < len(t.Partitions):
			t.Partitions[p.Partition] = pi
		case int(p.Partition) == len(t.Partitions):
			t.Partitions = append(t.Partitions, pi)
		default:
			return nil, fmt.Errorf("cluster: metadata record %d: partition %d of %s leaves a gap", offset, p.Partition, t.Name)
		}
		next.replaceTopic(im, t)
	case KindRemoveTopic:
		old := im.byID[r.RemoveTopic.ID]
		if old == nil {
			return nil, fmt.Errorf("cluster: metadata record %d removes unknown topic %s", offset, r.RemoveTopic.ID)
		}
		next.ownTopicMaps(im)
		delete(next.topics, old.Name)
		delete(next.byID, old.ID)
	case KindConfig:
		c := r.Config
		switch c.ResourceType {
		case ResourceTopic:
			old := im.topics[c.Name]
			if old == nil {
				return nil, fmt.Errorf("cluster: metadata record %d: config of unknown topic %q", offset, c.Name)
			}
			t := *old
			t.Configs = setConfig(old.Configs, c)
			next.replaceTopic(im, &t)
		case ResourceBroker:
			next.brokerConfigs = maps.Clone(im.brokerConfigs)
			next.brokerConfigs[c.Name] = setConfig(im.brokerConfigs[c.Name], c)
		default:
			return nil, fmt.Errorf("cluster: metadata record %d: config of resource type %d", offset, c.ResourceType)
		}
	case KindProducerIDs:
		if r.ProducerIDs.NextBlockStart <= im.NextProducerID {
			return nil, fmt.Errorf("cluster: metadata record %d moves the next producer id back to %d", offset, r.ProducerIDs.NextBlockStart)
		}
		next.NextProducerID = r.ProducerIDs.NextBlockStart
	case KindBrokerRegistration:
		next.applyBrokerRegistration(im, offset, r.BrokerRegistration)
	case KindBrokerFence:
		if err := next.applyBrokerFence(im, offset, r.BrokerFence); err != nil {
			return nil, err
		}
	case KindBrokerLogDir:
		if err := next.applyBrokerLogDir(im, offset, r.BrokerLogDir); err != nil {
			return nil, err
		}
	case KindDataLoss:
		next.applyDataLoss(im, offset, r.DataLoss)
	case KindScramCredential:
		if err := next.applyScramCredential(im, offset, r.ScramCredential); err != nil {
			return nil, err
		}
	case KindClusterSecret:
		if err := next.applyClusterSecret(offset, r.ClusterSecret); err != nil {
			return nil, err
		}
	case KindClientQuota:
		if err := next.applyClientQuota(im, offset, r.ClientQuota); err != nil {
			return nil, err
		}
	case KindACL:
		if err := next.applyACL(im, offset, r.ACL); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("cluster: metadata record %d of unknown kind %q", offset, r.Kind)
	}
	return &next, nil
}

func (next *Image) replaceTopic(im *Image, t *TopicImage) {
	next.ownTopicMaps(im)
	next.topics[t.Name], next.byID[t.ID] = t, t
}

// ownTopicMaps gives next its own topics and byID maps, copies of im's,
// unless the entry being applied already made them.
func (next *Image) ownTopicMaps(im *Image) {
	if next.batch != nil && next.batch.topicMaps {
		return
	}
	next.topics = maps.Clone(im.topics)
	next.byID = maps.Clone(im.byID)
	if next.batch != nil {
		next.batch.topicMaps = true
	}
}

func setConfig(old map[string]string, c *ConfigRecord) map[string]string {
	m := maps.Clone(old)
	if m == nil {
		m = map[string]string{}
	}
	if c.Value == nil {
		delete(m, c.Key)
	} else {
		m[c.Key] = *c.Value
	}
	return m
}
