package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeGroupsPiece(groups ...string) *kmsg.DescribeGroupsRequest {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Groups = groups
	return r
}

// TestExplainShardErrors: kadm's "N separate shard errors" become one
// sentence per failed piece, naming the broker, the groups and the Kafka
// error with its code; a group that does not exist is said so, and is
// ErrUnknownGroup when it is all that failed.
func TestExplainShardErrors(t *testing.T) {
	broker2 := kgo.BrokerMetadata{NodeID: 2, Host: "node2", Port: 9092}
	noBroker := kgo.BrokerMetadata{NodeID: -1}
	for _, tc := range []struct {
		name    string
		errs    []kadm.ShardError
		want    string
		unknown bool
	}{
		{"not coordinator",
			[]kadm.ShardError{{Req: describeGroupsPiece("g1"), Err: kerr.NotCoordinator, Broker: broker2}},
			"cli: describe group g1: DescribeGroups to broker 2 (node2:9092) for group g1: NOT_COORDINATOR (error code 16): This is not the correct coordinator.",
			false},
		{"coordinator lookup failed",
			[]kadm.ShardError{{Req: describeGroupsPiece("g1"), Err: fmt.Errorf("unable to find coordinator: %w", kerr.CoordinatorNotAvailable), Broker: noBroker}},
			"cli: describe group g1: DescribeGroups for group g1 reached no broker: unable to find coordinator: COORDINATOR_NOT_AVAILABLE (error code 15): The coordinator is not available.",
			false},
		{"group does not exist",
			[]kadm.ShardError{{Req: describeGroupsPiece("g1"), Err: kerr.GroupIDNotFound, Broker: broker2}},
			"cli: group g1 does not exist",
			true},
		{"two pieces",
			[]kadm.ShardError{
				{Req: describeGroupsPiece("g1", "g2"), Err: kerr.CoordinatorLoadInProgress, Broker: broker2},
				{Req: describeGroupsPiece("g3"), Err: kerr.GroupIDNotFound, Broker: broker2},
			},
			"cli: describe group g1: DescribeGroups to broker 2 (node2:9092) for groups g1, g2: COORDINATOR_LOAD_IN_PROGRESS (error code 14): The coordinator is loading and hence can't process requests.; group g3 does not exist",
			false},
		{"not a Kafka error",
			[]kadm.ShardError{{Req: kmsg.NewPtrListGroupsRequest(), Err: errors.New("connection refused"), Broker: broker2}},
			"cli: describe group g1: DescribeGroups to broker 2 (node2:9092): connection refused",
			false},
	} {
		se := &kadm.ShardErrors{Name: "DescribeGroups", Errs: tc.errs}
		err := explainShardErrors(fmt.Errorf("cli: describe group g1: %w", se))
		if got := err.Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if strings.Contains(err.Error(), "shard") {
			t.Errorf("%s: %q still says shard", tc.name, err)
		}
		if errors.Is(err, ErrUnknownGroup) != tc.unknown {
			t.Errorf("%s: errors.Is(ErrUnknownGroup) = %v", tc.name, !tc.unknown)
		}
		if !tc.unknown && !errors.Is(err, tc.errs[0].Err) {
			t.Errorf("%s: the explained error does not wrap %v", tc.name, tc.errs[0].Err)
		}
	}
	if err := errors.New("plain"); explainShardErrors(err) != err {
		t.Error("an error without shard errors was rewritten")
	}
	if explainShardErrors(nil) != nil {
		t.Error("nil was rewritten")
	}
}

// TestGroupCommandsExplainCoordinatorErrors: when the coordinator cannot
// be found, or answers an error past the client's retries, the group
// commands say which broker answered what, with the Kafka error's code,
// never kadm's "N separate shard errors".
func TestGroupCommandsExplainCoordinatorErrors(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	b := strings.Join(c.ListenAddrs(), ",")
	c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.FindCoordinatorRequest)
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, k := range r.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.NodeID, rc.ErrorCode = k, -1, kerr.GroupAuthorizationFailed.Code
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil, true
	})
	for _, args := range [][]string{
		{"group", "describe", "g1"},
		{"group", "delete", "g1"},
		{"group", "seek", "g1", "--all-topics", "--to", "start", "--execute"},
	} {
		r := mustFail(t, "", append(args, "--timeout", "5s", "-b", b)...)
		if strings.Contains(r.stderr, "shard") || !strings.Contains(r.stderr, "GROUP_AUTHORIZATION_FAILED (error code 30)") {
			t.Errorf("%s: stderr %q, want the Kafka error with its code and no shard errors", strings.Join(args, " "), r.stderr)
		}
	}
}
