package cluster

import (
	"context"
	"fmt"

	"github.com/wren-broker/wren/election"
)

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// CaughtUp is closed once this node's image is current: on a quorum, once
// it applied everything the acting controller had committed when this
// node first heard its commit index (Kafka's initial catch-up of a
// broker's metadata); with one voter, once it elected itself, before
// OpenController returns. Until then the image is the
// one replayed from this node's own disk, which misses whatever changed
// while it was down: it must not answer clients or lead from it.
func (c *Controller) CaughtUp() <-chan struct{} {
	return c.q.driver.CaughtUp()
}

func (c *Controller) caughtUp() bool {
	select {
	case <-c.CaughtUp():
		return true
	default:
		return false
	}
}

// CatchUpStatus says why this node has not caught up yet ("" once it
// has, and the controller registered this process): no controller is known (a minority side), or how far its applied
// image is behind the controller's commit index.
func (c *Controller) CatchUpStatus(ctx context.Context) string {
	if c.caughtUp() {
		select {
		case <-c.Registered():
			return ""
		default:
			return fmt.Sprintf("caught up with the metadata log; waiting for the controller to register this restart of the broker (incarnation %s)", c.q.incarnation)
		}
	}
	st, err := c.q.driver.Status(ctx)
	if err != nil {
		return fmt.Sprintf("catching up with the metadata log: quorum status unknown: %v", err)
	}
	if ss := st.Election.Soft; ss.Controller == election.None {
		return fmt.Sprintf("catching up with the metadata log: no controller reachable (epoch %d, applied %d); a majority of controller.quorum.voters must be up and reachable",
			ss.Epoch, st.Applied)
	}
	return fmt.Sprintf("catching up with the metadata log: applied %d of the controller's commit index %d (controller %d)",
		st.Applied, st.ControllerCommit, int32(st.Election.Soft.Controller))
}
