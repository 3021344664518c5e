package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kadm reports a request it split across brokers (one piece per group
// coordinator, or per broker for ListGroups) whose pieces failed as one
// *kadm.ShardErrors, whose text is "request DescribeGroups has 1 separate
// shard errors, first: ...": it names neither the broker nor the group,
// and hides every piece but the first. explainShardErrors says instead,
// for each piece, which broker was asked about which groups and the
// Kafka error with its code and meaning; a group its coordinator does not
// know is "group G does not exist", as kafka-consumer-groups says.

// explainedError keeps the error it explains for errors.Is and errors.As.
type explainedError struct {
	msg string
	err error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }

// explainShardErrors rewrites err when it holds a *kadm.ShardErrors: the
// shard errors' text is replaced, wherever it sits in err's message. A
// request about one group that failed only because the group does not
// exist is unknownGroup(group) (ErrUnknownGroup).
func explainShardErrors(err error) error {
	se, ok := errors.AsType[*kadm.ShardErrors](err)
	if !ok || len(se.Errs) == 0 {
		return err
	}
	var pieces []string
	var missing []string
	for _, e := range se.Errs {
		groups := shardGroups(e.Req)
		if errors.Is(e.Err, kerr.GroupIDNotFound) {
			for _, g := range groups {
				if !slices.Contains(missing, g) {
					missing = append(missing, g)
				}
			}
			if len(groups) > 0 {
				continue
			}
		}
		pieces = append(pieces, shardPiece(se.Name, e, groups))
	}
	if len(pieces) == 0 && len(missing) == 1 {
		return unknownGroup(missing[0])
	}
	for _, g := range missing {
		pieces = append(pieces, fmt.Sprintf("group %s does not exist", g))
	}
	explained := strings.Join(pieces, "; ")
	msg := err.Error()
	if text := se.Error(); strings.Contains(msg, text) {
		msg = strings.Replace(msg, text, explained, 1)
	} else {
		msg += ": " + explained
	}
	return &explainedError{msg: msg, err: err}
}

// shardPiece words one failed piece: "DescribeGroups to broker 2
// (host:port) for group g: NOT_COORDINATOR (error code 16): ...", or
// "DescribeGroups for group g reached no broker: ..." when kgo could not
// pick one.
func shardPiece(request string, e kadm.ShardError, groups []string) string {
	var b strings.Builder
	b.WriteString(request)
	if e.Broker.NodeID >= 0 {
		fmt.Fprintf(&b, " to broker %d (%s:%d)", e.Broker.NodeID, e.Broker.Host, e.Broker.Port)
	}
	switch len(groups) {
	case 0:
	case 1:
		fmt.Fprintf(&b, " for group %s", groups[0])
	default:
		fmt.Fprintf(&b, " for groups %s", strings.Join(groups, ", "))
	}
	if e.Broker.NodeID < 0 {
		// kgo failed before it could pick a broker: usually the
		// FindCoordinator lookup itself.
		b.WriteString(" reached no broker")
	}
	b.WriteString(": ")
	b.WriteString(kafkaErrorText(e.Err))
	return b.String()
}

// kafkaErrorText is a Kafka error as "NAME (error code N): description",
// anything else as its own text.
func kafkaErrorText(err error) string {
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		text := fmt.Sprintf("%s (error code %d): %s", ke.Message, ke.Code, ke.Description)
		// kgo wraps some with what it was doing; keep that.
		if outer := err.Error(); outer != ke.Error() {
			text = strings.Replace(outer, ke.Error(), text, 1)
		}
		return text
	}
	return err.Error()
}

// shardGroups are the groups a piece of a request was about.
func shardGroups(req kmsg.Request) []string {
	switch r := req.(type) {
	case *kmsg.DescribeGroupsRequest:
		return r.Groups
	case *kmsg.ConsumerGroupDescribeRequest:
		return r.Groups
	case *kmsg.DeleteGroupsRequest:
		return r.Groups
	case *kmsg.OffsetFetchRequest:
		if len(r.Groups) == 0 {
			return []string{r.Group}
		}
		var gs []string
		for _, g := range r.Groups {
			gs = append(gs, g.Group)
		}
		return gs
	case *kmsg.OffsetCommitRequest:
		return []string{r.Group}
	case *kmsg.OffsetDeleteRequest:
		return []string{r.Group}
	case *kmsg.FindCoordinatorRequest:
		if r.CoordinatorType != 0 {
			return nil
		}
		if len(r.CoordinatorKeys) == 0 {
			return []string{r.CoordinatorKey}
		}
		return r.CoordinatorKeys
	}
	return nil
}
