package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
)

// Read your writes across nodes. A metadata change is committed at a
// majority and applied on the acting controller before it is answered, but
// the other nodes learn of the commit in their next fetch of the metadata
// log and apply it a moment later: a client that created a topic through
// one node and describes it through another could see it missing (Kafka's
// KRaft brokers lag the same way). So before the answer to a change goes
// out, the acting controller waits until every other node that counts has
// applied it: each follower's fetch reports its applied index
// (metalog.Message.Commit of a MsgFetch), and the controller holds its
// answer until every unfenced broker that fetched within the fetch timeout
// reports at least the change's offset, for at most PropagationWaitMax
// (less when the request's own timeout is shorter). Past that it answers
// anyway: the change is committed, and a node that did not apply it in
// that time is stalled or gone, and is fenced once its session ends.
//
// Not waited for: a node fenced in the image (restarting and catching up,
// in a controlled shutdown, or silent past broker.session.timeout.ms), and
// one that has not fetched within the fetch timeout (gone, or cut off from
// the controller). A node cut off keeps answering Metadata from the image
// it has, as a Kafka broker cut off from its controller does.

// PropagationWaitMax bounds how long the acting controller holds the
// answer to a metadata change for the other nodes to apply it
// (docs/ARCHITECTURE.md, "Read your writes").
const PropagationWaitMax = time.Second

// laggingNodes are the nodes the answer to a change at offset still waits
// for: each follower that fetched within live before now, is a registered
// unfenced broker in im, and reported an applied index below offset;
// sorted.
func laggingNodes(im *Image, followers map[election.NodeID]quorum.FollowerState, offset uint64, now time.Time, live time.Duration) []int32 {
	var out []int32
	for id, f := range followers {
		if now.Sub(f.LastFetch) > live || !im.BrokerUnfenced(int32(id)) {
			continue
		}
		if f.Applied < 0 || uint64(f.Applied) < offset {
			out = append(out, int32(id))
		}
	}
	slices.Sort(out)
	return out
}

// propagationSource is what waitPropagated reads: the followers as the
// quorum driver last published them with the channel closed at the next
// publication, the committed image, and the clock.
type propagationSource struct {
	followers func() (map[election.NodeID]quorum.FollowerState, <-chan struct{})
	image     func() *Image
	now       func() time.Time
	live      time.Duration
}

// waitPropagated waits until no node lags behind offset (laggingNodes),
// or until timeout passes or ctx ends; it returns the nodes that still
// lagged then, nil when none did.
func waitPropagated(ctx context.Context, src propagationSource, offset uint64, timeout time.Duration) []int32 {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		followers, changed := src.followers()
		lag := laggingNodes(src.image(), followers, offset, src.now(), src.live)
		if len(lag) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			return lag
		case <-ctx.Done():
			return lag
		}
	}
}

// WaitPropagated waits, on the acting controller of a quorum, until every
// other node that counts (see above) has applied the metadata image up to
// offset, for at most timeout (PropagationWaitMax when timeout is 0 or
// above it), or until ctx ends. It returns the nodes that had not applied
// it by then, nil when none. Elsewhere (one voter, or not the acting
// controller) it returns nil at once: a follower knows nothing of the
// others, and a one-voter cluster has no others.
func (c *Controller) WaitPropagated(ctx context.Context, offset uint64, timeout time.Duration) []int32 {
	if c.alone() || !c.Acting() {
		return nil
	}
	if timeout <= 0 || timeout > PropagationWaitMax {
		timeout = PropagationWaitMax
	}
	d := c.q.driver
	// A follower's fetch can go unanswered (held) for up to the fetch
	// wait and be lost; it sends another after the fetch timeout, so a
	// node that is up and reaches the controller fetched within it, plus
	// a tick of rounding.
	live := d.FetchTimeout() + c.q.cfg.Tick
	return waitPropagated(ctx, propagationSource{followers: d.Followers, image: c.Image, now: time.Now, live: live}, offset, timeout)
}
