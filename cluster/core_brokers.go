package cluster

// The broker rules: registration, fencing, unfencing, controlled
// shutdown, the log dir's state, and the cluster id of a new cluster
// (testdata/rules/register.txt, fence.txt, log_dir.txt, cluster_id.txt).
// Each commits the broker's own record with the partition changes it
// brings as one entry, so a crash never leaves a broker fenced with its
// partitions still led by it.

// RegisterBrokerRequest is a broker's registration (a start, or a new rack
// or listener). CleanShutdown says whether the broker shut down cleanly
// last time.
type RegisterBrokerRequest struct {
	Registration  BrokerRegistrationRecord
	CleanShutdown bool
}

// DecideRegisterBroker records the registration. After an unclean
// shutdown the broker's log may lack records it acknowledged, so it leaves
// every ISR and ELR in the same entry (KIP-966); after a clean one, a
// registration that did not change writes nothing.
func DecideRegisterBroker(im *Image, cfg RuleConfig, req RegisterBrokerRequest) Result[struct{}] {
	reg := req.Registration
	var changes []PartitionChange
	if !req.CleanShutdown {
		changes = UncleanShutdownChanges(im, reg.BrokerID, cfg.Leader)
	} else if b, ok := im.Broker(reg.BrokerID); ok && sameRegistration(b, &reg) {
		return Result[struct{}]{}
	}
	return Result[struct{}]{Records: changeRecords([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: &reg}}, changes)}
}

// DecideFenceBroker fences a broker whose session expired (or that
// crashed): it gets no new replicas, leaves every ISR, and the partitions
// it led elect a new leader.
func DecideFenceBroker(im *Image, cfg RuleConfig, broker int32) Result[struct{}] {
	return decideFenced(im, cfg, broker, true, BrokerFencedChanges)
}

// DecideUnfenceBroker unfences a broker that is back and caught up;
// partitions without a leader that it may lead elect one.
func DecideUnfenceBroker(im *Image, cfg RuleConfig, broker int32) Result[struct{}] {
	return decideFenced(im, cfg, broker, false, BrokerUnfencedChanges)
}

// DecideControlledShutdown moves leadership off a broker before it exits
// (SIGTERM): it leaves every ISR, its partitions elect new leaders, and it
// is fenced, so it gets no new replicas while it is gone.
func DecideControlledShutdown(im *Image, cfg RuleConfig, broker int32) Result[struct{}] {
	return decideFenced(im, cfg, broker, true, ControlledShutdownChanges)
}

func decideFenced(im *Image, cfg RuleConfig, broker int32, fenced bool, rule func(*Image, int32, LeaderConfig) []PartitionChange) Result[struct{}] {
	b, ok := im.Broker(broker)
	if !ok {
		return Result[struct{}]{Err: unknownBroker(broker)}
	}
	var recs []Record
	if b.Fenced != fenced {
		recs = append(recs, Record{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: broker, Fenced: fenced}})
	}
	return Result[struct{}]{Records: changeRecords(recs, rule(im, broker, cfg.Leader))}
}

// BrokerLogDirRequest is what a broker's heartbeats say of its log dir.
type BrokerLogDirRequest struct {
	Broker int32
	LogDir BrokerLogDir
}

// DecideBrokerLogDir records the log dir's state with the partition
// changes it brings (LogDirRecords): while it takes no writes the broker
// leaves every ISR and hands its leaderships to in-sync replicas that can
// write; when it takes writes again, partitions left without a leader
// that it could lead elect one. The response is the partition changes.
func DecideBrokerLogDir(im *Image, cfg RuleConfig, req BrokerLogDirRequest) Result[[]PartitionChange] {
	recs, changes, err := LogDirRecords(im, req.Broker, req.LogDir, cfg.Leader)
	if err != nil {
		return Result[[]PartitionChange]{Err: err}
	}
	return Result[[]PartitionChange]{Records: changeRecords(recs, changes), Response: changes}
}

// DecideClusterID records id as the cluster's id, the first record of a
// new cluster; a cluster that has one keeps it.
func DecideClusterID(im *Image, id string) Result[struct{}] {
	if im.ClusterID != "" {
		return Result[struct{}]{}
	}
	return Result[struct{}]{Records: []Record{{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: id}}}}
}
