package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/election"
)

// ForwardHandler answers a Kafka request that another node forwarded to
// this one (the acting controller): the request body at its version, and
// the response body at the same version. The kafka package serves it
// with the same handlers as its client listeners, so the forwarding node
// relays exactly the controller's answer.
type ForwardHandler func(ctx context.Context, key, version int16, body []byte, origin RequestOrigin) ([]byte, error)

// RequestOrigin is who sent a forwarded request to the forwarding node:
// the client's principal and IP address, which the controller authorizes
// the request with again (Kafka's Envelope carries the same). Both are
// empty from a node older than the field: the controller judges such a
// request as User:ANONYMOUS.
type RequestOrigin struct {
	Principal string
	Host      string
}

// SetForwardHandler sets what serves the requests other nodes forward to
// this one. Before it is set, a forwarded request is answered with an
// error, and the forwarding node answers NOT_CONTROLLER.
func (c *Controller) SetForwardHandler(h ForwardHandler) {
	c.q.forwardHandler.Store(&h)
}

// ShouldForward reports whether a request that changes metadata should
// go to another node: this node is one voter of a quorum, not the acting
// controller, and knows who is.
func (c *Controller) ShouldForward() bool {
	ss := c.q.driver.SoftState()
	return !ss.Acting && ss.Controller != election.None && ss.Controller != election.NodeID(c.cfg.NodeID)
}

// ForwardRequest sends a Kafka request to the acting controller over the
// CONTROLLER listener and returns its response body. It returns once the
// controller answered and this node's image caught up with the
// controller's at the time of the answer (so a client that created a
// topic through this node finds it here), or when ctx or the forwarding
// deadline ends: then an error, and the caller answers as a node that is
// not the controller does.
func (c *Controller) ForwardRequest(ctx context.Context, key, version int16, body []byte, origin RequestOrigin) ([]byte, error) {
	a, err := c.forward(ctx, appMessage{Kind: appKafkaRequest, APIKey: key, APIVersion: version, Body: body,
		Principal: origin.Principal, ClientHost: origin.Host})
	if err != nil {
		return nil, err
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.body == nil {
		return nil, errors.New("cluster: forwarded request answered without a body")
	}
	// The answer is the controller's; what it changed may not have reached
	// this node's image yet. A bounded wait: past it, the answer still
	// stands (the change is committed), and the image follows soon.
	wctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	c.waitApplied(wctx, a.offset)
	return a.body, nil
}

// serveForwarded answers a forwarded request, on its own goroutine.
func (c *Controller) serveForwarded(from election.NodeID, m appMessage) {
	q := c.q
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	ans := appMessage{Kind: appAnswer, ID: m.ID}
	if h := q.forwardHandler.Load(); h == nil {
		ans.ErrorCode, ans.ErrMessage = kerr.NotController.Code, fmt.Sprintf("node %d does not serve forwarded requests yet", c.cfg.NodeID)
	} else if out, err := (*h)(ctx, m.APIKey, m.APIVersion, m.Body, RequestOrigin{Principal: m.Principal, Host: m.ClientHost}); err != nil {
		ans.ErrorCode, ans.ErrMessage = errorCode(err), err.Error()
	} else {
		ans.Body, ans.Offset = out, c.Image().Offset
	}
	b, err := json.Marshal(ans)
	if err != nil || len(b) > maxAppBytes {
		ans = appMessage{Kind: appAnswer, ID: m.ID, ErrorCode: kerr.MessageTooLarge.Code,
			ErrMessage: fmt.Sprintf("the controller's answer to a forwarded request is over %d bytes", maxAppBytes)}
		b, _ = json.Marshal(ans)
	}
	q.cfg.SendApp(from, b)
}

// waitApplied waits until the image has applied the metadata log up to
// offset, or ctx ends.
func (c *Controller) waitApplied(ctx context.Context, offset uint64) {
	q := c.q
	for {
		q.mu.Lock()
		ch := q.applied
		q.mu.Unlock()
		if c.Image().Offset >= offset {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// notifyApplied wakes waitApplied after a new image is published.
func (q *quorumState) notifyApplied() {
	q.mu.Lock()
	close(q.applied)
	q.applied = make(chan struct{})
	q.mu.Unlock()
}
