package cluster

import (
	"encoding/json"
	"fmt"
)

// RecordKind names a metadata record. Part of the on-disk format of the
// metadata log; never change a kind's name or meaning.
type RecordKind string

const (
	KindCluster     RecordKind = "cluster"
	KindTopic       RecordKind = "topic"
	KindPartition   RecordKind = "partition"
	KindRemoveTopic RecordKind = "remove_topic"
	KindConfig      RecordKind = "config"
	KindProducerIDs RecordKind = "producer_ids"
	// KindBrokerRegistration registers a broker or replaces its
	// registration (rack, listeners, fencing).
	KindBrokerRegistration RecordKind = "broker_registration"
	// KindBrokerFence fences or unfences a registered broker.
	KindBrokerFence RecordKind = "broker_fence"
	// KindBrokerLogDir says whether a broker's log dir takes writes.
	KindBrokerLogDir RecordKind = "broker_log_dir"
	// KindDataLoss is an entry of the data-loss ledger: an election that
	// may have lost acknowledged records.
	KindDataLoss RecordKind = "data_loss"
	// KindScramCredential sets or deletes one user's SCRAM credential for
	// one mechanism (Kafka's UserScramCredentialRecord and
	// RemoveUserScramCredentialRecord).
	KindScramCredential RecordKind = "scram_credential"
	// KindClusterSecret records the cluster secret (secret.go).
	KindClusterSecret RecordKind = "cluster_secret"
	// KindClientQuota sets or removes one quota (producer_byte_rate,
	// consumer_byte_rate, request_percentage) of one client quota entity
	// (Kafka's QuotaRecord; quota.go).
	KindClientQuota RecordKind = "client_quota"
	// KindACL creates or deletes one ACL binding (Kafka's
	// AccessControlEntryRecord and RemoveAccessControlEntryRecord; acl.go).
	KindACL RecordKind = "acl"
)

// Record is one entry of the metadata log: a change to the cluster's
// metadata. Exactly one of the pointers is set, as Kind says. The encoding
// is JSON: the metadata log is small and a human reading it in an incident
// matters more than its size.
type Record struct {
	Kind        RecordKind         `json:"kind"`
	Cluster     *ClusterRecord     `json:"cluster,omitempty"`
	Topic       *TopicRecord       `json:"topic,omitempty"`
	Partition   *PartitionRecord   `json:"partition,omitempty"`
	RemoveTopic *RemoveTopicRecord `json:"remove_topic,omitempty"`
	Config      *ConfigRecord      `json:"config,omitempty"`
	ProducerIDs *ProducerIDsRecord `json:"producer_ids,omitempty"`

	BrokerRegistration *BrokerRegistrationRecord `json:"broker_registration,omitempty"`
	BrokerFence        *BrokerFenceRecord        `json:"broker_fence,omitempty"`
	BrokerLogDir       *BrokerLogDirRecord       `json:"broker_log_dir,omitempty"`
	DataLoss           *DataLossRecord           `json:"data_loss,omitempty"`
	ScramCredential    *ScramCredentialRecord    `json:"scram_credential,omitempty"`
	ClusterSecret      *ClusterSecretRecord      `json:"cluster_secret,omitempty"`
	ClientQuota        *ClientQuotaRecord        `json:"client_quota,omitempty"`
	ACL                *ACLRecord                `json:"acl,omitempty"`
}

// ProducerIDsRecord hands a block of producer ids to a broker: ids
// [NextBlockStart-BlockSize, NextBlockStart) are its, and no id below
// NextBlockStart is ever handed out again.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"broker_id"`
	NextBlockStart int64 `json:"next_block_start"`
	BlockSize      int64 `json:"block_size"`
}

// ClusterRecord is the first record of a new cluster's log.
type ClusterRecord struct {
	ClusterID string `json:"cluster_id"`
}

// TopicRecord creates a topic.
type TopicRecord struct {
	Name string `json:"name"`
	ID   UUID   `json:"id"`
}

// PartitionRecord creates a partition or replaces its assignment, leader
// and ISR.
type PartitionRecord struct {
	TopicID     UUID    `json:"topic_id"`
	Partition   int32   `json:"partition"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	// PartitionEpoch bumps on every change of the record (ISR included);
	// LeaderEpoch only when the leader changes.
	PartitionEpoch int32 `json:"partition_epoch"`
	// ELR are the eligible leader replicas of KIP-966: replicas out of
	// the ISR that still hold every committed record. Absent in records
	// written before ELR existed, which reads as empty.
	ELR []int32 `json:"elr,omitempty"`
	// LastKnownELR holds the last leader (at most one id) once the ISR
	// became empty, as Kafka's PartitionRecord.LastKnownElr does.
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// AddingReplicas and RemovingReplicas describe a reassignment under
	// way, as Kafka's PartitionRecord: Replicas is then the target
	// followed by the replicas being removed. Absent when none.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// RemoveTopicRecord deletes a topic and its partitions.
type RemoveTopicRecord struct {
	ID UUID `json:"id"`
}

// ResourceType of a ConfigRecord, with Kafka's ConfigResource type ids.
type ResourceType int8

const (
	ResourceTopic  ResourceType = 2
	ResourceBroker ResourceType = 4
)

// ConfigRecord sets (Value non-nil) or deletes (Value nil) one dynamic
// config of a topic or of the brokers (Name "" = cluster-wide default).
type ConfigRecord struct {
	ResourceType ResourceType `json:"resource_type"`
	Name         string       `json:"name"`
	Key          string       `json:"key"`
	Value        *string      `json:"value"`
}

func encodeRecord(r Record) ([]byte, error) { return json.Marshal(r) }

func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("cluster: bad metadata record: %w", err)
	}
	set := 0
	for _, p := range []bool{r.Cluster != nil, r.Topic != nil, r.Partition != nil, r.RemoveTopic != nil, r.Config != nil, r.ProducerIDs != nil,
		r.BrokerRegistration != nil, r.BrokerFence != nil, r.BrokerLogDir != nil, r.DataLoss != nil, r.ScramCredential != nil,
		r.ClusterSecret != nil, r.ClientQuota != nil, r.ACL != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return r, fmt.Errorf("cluster: metadata record of kind %q has %d bodies", r.Kind, set)
	}
	// The one body is the one its kind names.
	var ok bool
	switch r.Kind {
	case KindCluster:
		ok = r.Cluster != nil
	case KindTopic:
		ok = r.Topic != nil
	case KindPartition:
		ok = r.Partition != nil
	case KindRemoveTopic:
		ok = r.RemoveTopic != nil
	case KindConfig:
		ok = r.Config != nil
	case KindProducerIDs:
		ok = r.ProducerIDs != nil
	case KindBrokerRegistration:
		ok = r.BrokerRegistration != nil
	case KindBrokerFence:
		ok = r.BrokerFence != nil
	case KindBrokerLogDir:
		ok = r.BrokerLogDir != nil
	case KindDataLoss:
		ok = r.DataLoss != nil
	case KindScramCredential:
		ok = r.ScramCredential != nil
	case KindClusterSecret:
		ok = r.ClusterSecret != nil
	case KindClientQuota:
		ok = r.ClientQuota != nil
	case KindACL:
		ok = r.ACL != nil
	default:
		return r, fmt.Errorf("cluster: metadata record of unknown kind %q", r.Kind)
	}
	if !ok {
		return r, fmt.Errorf("cluster: metadata record of kind %q carries another kind's body", r.Kind)
	}
	return r, nil
}
