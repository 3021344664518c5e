package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/election"
)

// HandleApp takes an APIKeyApp body from peer from. It runs on the
// transport's goroutine and does not block.
func (c *Controller) HandleApp(from election.NodeID, body []byte) {
	q := c.q
	m, err := decodeApp(body)
	if err != nil {
		q.log.Warn("metadata quorum: bad message from peer", "peer", int32(from), "err", err)
		return
	}
	switch m.Kind {
	case appHeartbeat:
		if m.Registration.BrokerID != int32(from) {
			q.log.Warn("metadata quorum: heartbeat names another broker", "peer", int32(from), "broker", m.Registration.BrokerID)
			return
		}
		if StaleHeartbeat(c.Image(), int32(from), m.Registration.IncarnationID, m.BrokerEpoch) {
			q.log.Warn("metadata quorum: heartbeat refused: a newer incarnation of the broker registered since",
				"broker", int32(from), "incarnation", m.Registration.IncarnationID.String(), "broker_epoch", m.BrokerEpoch)
			return
		}
		var dir BrokerLogDir
		if m.LogDir != nil && m.LogDir.Offline {
			dir = *m.LogDir
		}
		q.mu.Lock()
		q.heard[int32(from)] = heardBroker{at: time.Now(), reg: *m.Registration, shuttingDown: m.ShuttingDown, catchingUp: m.CatchingUp,
			cleanShutdown: m.CleanShutdown, brokerEpoch: m.BrokerEpoch, logDir: dir}
		q.mu.Unlock()
	case appControlledShutdown:
		c.answerAsActing(from, m.ID, func(ctx context.Context, _ *appMessage) error {
			return c.controlledShutdownOf(ctx, int32(from))
		})
	case appAllocateProducerID:
		c.answerAsActing(from, m.ID, func(ctx context.Context, ans *appMessage) error {
			first, err := c.AllocateProducerIDs(ctx, int32(from))
			ans.First = first
			return err
		})
	case appAlterISR:
		r := m.AlterISR
		if r == nil || r.Leader != int32(from) {
			ans := appMessage{Kind: appAnswer, ID: m.ID, ErrorCode: kerr.InvalidRequest.Code,
				ErrMessage: fmt.Sprintf("node %d sent an ISR change without the partition or as another leader", from)}
			b, _ := json.Marshal(ans)
			q.cfg.SendApp(from, b)
			return
		}
		c.answerAsActing(from, m.ID, func(ctx context.Context, ans *appMessage) error {
			after, err := c.AlterISR(ctx, r.TopicID, r.Partition, r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ISR)
			ans.AlterISR = &alterISRMessage{TopicID: r.TopicID, Partition: r.Partition, Leader: after.Leader,
				LeaderEpoch: after.LeaderEpoch, PartitionEpoch: after.PartitionEpoch, ISR: after.ISR}
			return err
		})
	case appKafkaRequest:
		go c.serveForwarded(from, m)
	case appNodeFacts:
		c.heardNodeFacts(int32(from), m.Body)
	case appAnswer:
		q.mu.Lock()
		ch := q.pending[m.ID]
		delete(q.pending, m.ID)
		q.mu.Unlock()
		if ch != nil {
			var err error
			if m.ErrorCode != 0 {
				err = fmt.Errorf("%w: %s", kerr.ErrorForCode(m.ErrorCode), m.ErrMessage)
			}
			ch <- forwardAnswer{first: m.First, alterISR: m.AlterISR, body: m.Body, offset: m.Offset, err: err}
		}
	}
}

// answerAsActing serves a peer's request on a goroutine of its own, as
// the acting controller (NOT_CONTROLLER otherwise), and sends the answer
// fn filled in, with the error fn returned.
func (c *Controller) answerAsActing(from election.NodeID, id uint64, fn func(ctx context.Context, ans *appMessage) error) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		defer cancel()
		ans := appMessage{Kind: appAnswer, ID: id}
		if !c.Acting() {
			ans.ErrorCode, ans.ErrMessage = kerr.NotController.Code, fmt.Sprintf("node %d is not the acting controller", c.cfg.NodeID)
		} else if err := fn(ctx, &ans); err != nil {
			ans.ErrorCode, ans.ErrMessage = errorCode(err), err.Error()
		}
		b, _ := json.Marshal(ans)
		c.q.cfg.SendApp(from, b)
	}()
}

// SubmitAlterISR is a partition leader's ISR change (Kafka's
// AlterPartition): applied here when this node is the acting controller
// (or the only voter), else sent to the acting controller over the
// CONTROLLER listener. It returns once the change is committed, with the
// partition's state after it.
func (c *Controller) SubmitAlterISR(ctx context.Context, topicID UUID, partition, leader, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionImage, error) {
	if c.Acting() {
		return c.AlterISR(ctx, topicID, partition, leader, leaderEpoch, partitionEpoch, isr)
	}
	a, err := c.forward(ctx, appMessage{Kind: appAlterISR, AlterISR: &alterISRMessage{TopicID: topicID, Partition: partition,
		Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: isr}})
	if err != nil {
		return PartitionImage{}, err
	}
	if a.err != nil {
		return PartitionImage{}, a.err
	}
	if a.alterISR == nil {
		return PartitionImage{}, errors.New("cluster: alter_isr answer without the partition")
	}
	r := a.alterISR
	return PartitionImage{Partition: r.Partition, Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch, ISR: r.ISR}, nil
}

// forwardAllocateProducerIDs asks the acting controller for a block of
// producer ids, as a Kafka broker sends AllocateProducerIds.
func (c *Controller) forwardAllocateProducerIDs(ctx context.Context, broker int32) (int64, error) {
	a, err := c.forward(ctx, appMessage{Kind: appAllocateProducerID})
	if err != nil {
		return 0, err
	}
	return a.first, a.err
}

// forward sends a request to the acting controller and waits for its
// answer.
func (c *Controller) forward(ctx context.Context, msg appMessage) (forwardAnswer, error) {
	q := c.q
	ctrl := q.driver.SoftState().Controller
	if ctrl == election.None {
		return forwardAnswer{}, fmt.Errorf("%w: no controller is known", kerr.NotController)
	}
	ch := make(chan forwardAnswer, 1)
	q.mu.Lock()
	q.nextID++
	id := q.nextID
	q.pending[id] = ch
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.pending, id)
		q.mu.Unlock()
	}()
	msg.ID = id
	b, _ := json.Marshal(msg)
	q.cfg.SendApp(ctrl, b)
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return forwardAnswer{}, fmt.Errorf("%w: controller %d did not answer: %w", kerr.RequestTimedOut, ctrl, ctx.Err())
	}
}
