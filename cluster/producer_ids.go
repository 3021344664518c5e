package cluster

import "context"

// AllocateProducerIDs reserves the next block of producer ids for broker
// and returns its first id (DecideAllocateProducerIDs). The block is
// durable in the metadata log before it is returned, so an id is never
// handed out twice, across restarts and (with the quorum) across
// controllers.
func (c *Controller) AllocateProducerIDs(ctx context.Context, broker int32) (first int64, err error) {
	if broker == c.cfg.NodeID && !c.Acting() {
		// This broker's own block comes from the acting controller.
		return c.forwardAllocateProducerIDs(ctx, broker)
	}
	var res error
	runErr := c.change(ctx, func() {
		r := DecideAllocateProducerIDs(c.Image(), c.rules(), broker)
		if res = commitResult(c.commit, r); res == nil {
			first = r.Response
		}
	})
	if runErr != nil {
		return 0, runErr
	}
	return first, res
}
