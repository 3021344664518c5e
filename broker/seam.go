package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/replication"
)

// The adapters from the concrete replication and coordinator types to the
// kafka package's seam (kafka/seam.go), where their method shapes differ.
// cluster.Controller and cluster.ProducerIDManager fit it as they are.

// kafkaPartitions is this node's replication.Manager as kafka.Partitions.
// refuse, if set, refuses a produce to a topic (the uplinks' backlog
// budget under refuse-writes, uplinkRefuse).
type kafkaPartitions struct {
	m      *replication.Manager
	refuse func(topic string) error
}

func (p kafkaPartitions) Partition(tp engine.TopicPartition) kafka.Replica {
	part := p.m.Partition(tp)
	if part == nil {
		return nil // a nil interface, not a typed nil
	}
	return kafkaReplica{Partition: part, refuse: p.refuse}
}

func (p kafkaPartitions) DeleteRecords(tp engine.TopicPartition, offset int64) (int64, error) {
	return p.m.DeleteRecords(tp, offset)
}

func (p kafkaPartitions) CheckWritable() error { return p.m.Logs().CheckWritable() }

func (p kafkaPartitions) LogDir() kafka.LogDir { return kafkaLogDir{p.m.Logs()} }

// kafkaLogDir is the engine.Manager as kafka.LogDir.
type kafkaLogDir struct{ *engine.Manager }

func (d kafkaLogDir) Logs() []kafka.PartitionLog {
	logs := d.Manager.Logs()
	out := make([]kafka.PartitionLog, len(logs))
	for i, l := range logs {
		out[i] = l
	}
	return out
}

// kafkaReplica is a replication.Partition as kafka.Replica: the log's
// verbs are its engine.Log's.
type kafkaReplica struct {
	*replication.Partition
	refuse func(topic string) error
}

// CheckWritable is the log's check, then the uplinks' (refuse): the
// produce path asks it of a partition this node leads before appending.
func (r kafkaReplica) CheckWritable() error {
	if err := r.Log().CheckWritable(); err != nil {
		return err
	}
	if r.refuse != nil {
		return r.refuse(r.TopicPartition().Topic)
	}
	return nil
}
func (r kafkaReplica) LogStartOffset() int64 { return r.Log().LogStartOffset() }
func (r kafkaReplica) LogEndOffset() int64   { return r.Log().LogEndOffset() }

func (r kafkaReplica) OffsetForTimestamp(ts int64) (int64, int64, int32, bool, error) {
	return r.Log().OffsetForTimestamp(ts)
}

func (r kafkaReplica) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return r.Log().EndOffsetForEpoch(epoch)
}

func (r kafkaReplica) LeaderEpochs() []engine.EpochEntry { return r.Log().LeaderEpochs() }

func (r kafkaReplica) ProducerStates() []producer.Entry { return r.Log().ProducerStates() }

// kafkaGroups is the coordinator.Driver as kafka.GroupCoordinator.
type kafkaGroups struct{ d *coordinator.Driver }

func (g kafkaGroups) Submit(ctx context.Context, group string, input kafka.GroupInput) kafka.GroupCall {
	// The driver runs input on the group's *groups.Coordinator, which is
	// the seam's GroupCore as it is.
	return groupCall{g.d.Submit(ctx, group, func(c *groups.Coordinator, requestID uint64, nowMs int64) {
		input(c, requestID, nowMs)
	})}
}

func (g kafkaGroups) ListGroups(ctx context.Context) ([]groups.ListedGroup, int16, error) {
	return g.d.ListGroups(ctx)
}

// groupCall maps the driver's errors to the Kafka codes the seam speaks.
type groupCall struct{ c *coordinator.Call }

func (c groupCall) Wait(ctx context.Context) (groups.Response, error) {
	r, err := c.c.Wait(ctx)
	switch {
	case errors.Is(err, coordinator.ErrNotCoordinator):
		return r, fmt.Errorf("%w: %w", kerr.NotCoordinator, err)
	case errors.Is(err, coordinator.ErrClosed):
		return r, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	}
	return r, err
}

// kafkaGroupCoordinator is d as the seam's GroupCoordinator, nil (no
// coordinator) when d is.
func kafkaGroupCoordinator(d *coordinator.Driver) kafka.GroupCoordinator {
	if d == nil {
		return nil
	}
	return kafkaGroups{d}
}

// The concrete types the broker passes fit the seam; a change on either
// side fails the build here rather than in a handler.
var (
	_ kafka.Metadata         = (*cluster.Controller)(nil)
	_ kafka.ControllerAPI    = (*cluster.Controller)(nil)
	_ kafka.ProducerIDs      = (*cluster.ProducerIDManager)(nil)
	_ kafka.Partitions       = kafkaPartitions{}
	_ kafka.Replica          = kafkaReplica{}
	_ kafka.LogDir           = kafkaLogDir{}
	_ kafka.PartitionLog     = (*engine.Log)(nil)
	_ kafka.GroupCoordinator = kafkaGroups{}
	_ kafka.GroupCore        = (*groups.Coordinator)(nil)
)
