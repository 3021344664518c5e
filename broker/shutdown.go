package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wren-broker/wren/cluster"
)

// controlledShutdownTimeout bounds how long `wren serve` waits, on SIGTERM,
// for its leaderships to move before it closes anyway.
const controlledShutdownTimeout = 30 * time.Second

// ControlledShutdown asks the acting controller to move this node's
// partition leaderships to other in-sync replicas (Kafka's controlled
// shutdown) and waits, within ctx, until this node's image shows it leads
// only partitions nobody else can take. Clients then move to the new
// leaders while this node still answers, so a SIGTERM costs them a
// metadata refresh instead of a session timeout. The request is repeated
// while it fails (no controller yet, a controller change): it is
// idempotent. A one-voter cluster returns at once.
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	c := b.controller
	if _, quorum, _ := c.QuorumStatus(ctx); !quorum {
		return nil
	}
	self := b.cfg.NodeID
	retry := time.NewTicker(500 * time.Millisecond)
	defer retry.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	var lastErr error
	requested := false
	for {
		if !requested {
			if err := c.RequestControlledShutdown(ctx); err != nil {
				lastErr = err
			} else {
				requested = true
			}
		}
		// Poll the image until it shows the change, re-asking every half
		// second in case the request was lost with a controller.
		for wait := true; wait; {
			if led := stillLeads(c.Image(), self); len(led) == 0 {
				return nil
			} else if ctx.Err() != nil {
				return fmt.Errorf("broker: controlled shutdown of node %d: still leads %v: %w (last error: %v)", self, led, ctx.Err(), lastErr)
			}
			select {
			case <-ctx.Done():
			case <-poll.C:
			case <-retry.C:
				requested, wait = false, false
			}
		}
	}
}

// stillLeads lists the partitions self leads in im that another live
// replica in the ISR or ELR could lead instead.
func stillLeads(im *cluster.Image, self int32) []string {
	var led []string
	for _, name := range im.TopicNames() {
		for _, p := range im.Topic(name).Partitions {
			if p.Leader != self {
				continue
			}
			for _, r := range append(slices.Clone(p.ISR), p.ELR...) {
				if r != self && im.BrokerUnfenced(r) {
					led = append(led, fmt.Sprintf("%s-%d", name, p.Partition))
					break
				}
			}
		}
	}
	return led
}
