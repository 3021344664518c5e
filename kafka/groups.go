package kafka

import (
	"context"
	"errors"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
)

// groupInput feeds one request to a group's coordinator (see
// coordinator.Driver.Submit).
type groupInput = func(c *groups.Coordinator, requestID uint64, nowMs int64)

// groupCall is one group request in flight: Submit at once (so a
// connection's requests reach the coordinator in order), Wait in the
// Pending.
type groupCall struct {
	call *coordinator.Call
	code int16 // set when there is no coordinator to ask
}

// submitGroup hands input to the coordinator of group.
func (s *Server) submitGroup(req *Request, group string, input groupInput) groupCall {
	d := s.node().Groups
	if d == nil {
		return groupCall{code: kerr.CoordinatorNotAvailable.Code}
	}
	return groupCall{call: d.Submit(req.Session.Context(), group, input)}
}

// wait returns the coordinator's response, or a Kafka error code when no
// coordinator answered. A Go error means ctx ended: the connection is
// closing and the response is dropped.
func (g groupCall) wait(ctx context.Context) (groups.Response, int16, error) {
	if g.call == nil {
		return groups.Response{}, g.code, nil
	}
	r, err := g.call.Wait(ctx)
	switch {
	case err == nil:
		return r, 0, nil
	case errors.Is(err, coordinator.ErrNotCoordinator):
		return r, kerr.NotCoordinator.Code, nil
	case errors.Is(err, coordinator.ErrClosed):
		return r, kerr.CoordinatorNotAvailable.Code, nil
	}
	return r, 0, err
}

// clientHost is the member's address as Kafka reports it ("/" + IP).
func clientHost(sess *Session) string {
	if tcp, ok := sess.RemoteAddr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	if sess.RemoteAddr == nil {
		return ""
	}
	return "/" + sess.RemoteAddr.String()
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullableString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
