package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wren-broker/wren/cluster"
)

// controlledShutdownTimeout bounds how long `wren serve` waits, on SIGTERM,
// for its leaderships to move before it closes anyway.
const controlledShutdownTimeout = 30 * time.Second

// errNoQuorum: the controlled shutdown cannot happen, since no controller
// can be reached to move the leaderships.
var errNoQuorum = errors.New("broker: no quorum")

// ControlledShutdown asks the acting controller to move this node's
// partition leaderships to other in-sync replicas (Kafka's controlled
// shutdown) and waits, within ctx, until this node's image shows it leads
// only partitions nobody else can take. Clients then move to the new
// leaders while this node still answers, so a SIGTERM costs them a
// metadata refresh instead of a session timeout. The request is repeated
// while it fails (no controller yet, a controller change): it is
// idempotent. A one-voter cluster returns at once.
//
// A node that reaches no majority of the voters (the others stopped
// first, or a partition) has no controller to ask: waiting would only
// hold the stop for the whole of ctx. It gives up with errNoQuorum, saying
// how many voters it reaches (cluster.Controller.QuorumReach: the peers
// its connections are up to, which drop the moment a peer's process
// ends). The request runs beside the wait, since a controller that has
// just lost its majority blocks in it until its commit times out.
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	c := b.controller
	if _, quorum, _ := c.QuorumStatus(ctx); !quorum {
		return nil
	}
	self := b.cfg.NodeID
	silentFor := time.Duration(b.cfg.QuorumFetchTimeoutMs) * time.Millisecond
	answers := make(chan error, 1)
	ask := func() {
		go func() { answers <- c.RequestControlledShutdown(ctx) }()
	}
	ask()
	asking, answered := true, false
	retry := time.NewTicker(500 * time.Millisecond)
	defer retry.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	var lastErr error
	for {
		// Done once the image shows no leadership left to move, and the
		// controller knows of the shutdown: it answered the request, or
		// fenced this node on the heartbeats that now carry the shutdown
		// (an answer from a controller that stopped never comes).
		im := c.Image()
		led := stillLeads(im, self)
		if len(led) == 0 && (answered || !im.BrokerUnfenced(self)) {
			return nil
		}
		if reached, voters := c.QuorumReach(silentFor); reached <= voters/2 {
			what := "it leads no partition another replica could take"
			if len(led) > 0 {
				what = fmt.Sprintf("%d partition(s) (%s) stay led by it until a controller can move them", len(led), strings.Join(firstN(led, 5), ", "))
			}
			return fmt.Errorf("%w: node %d reaches %d of %d voters (itself included; a majority is %d), so no controller can move its leaderships; %s",
				errNoQuorum, self, reached, voters, voters/2+1, what)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("broker: controlled shutdown of node %d: still leads %v: %w (last error: %v)", self, led, ctx.Err(), lastErr)
		}
		select {
		case <-ctx.Done():
		case <-poll.C:
		case err := <-answers:
			asking, answered = false, true
			if err != nil {
				lastErr = err
			}
		case <-retry.C:
			// Ask again every half second, in case the request was lost
			// with a controller.
			if !asking {
				ask()
				asking = true
			}
		}
	}
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), "...")
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
