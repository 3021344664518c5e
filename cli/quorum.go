package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/kafka"
)

func clusterQuorumCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "quorum",
		Usage: "print the metadata quorum: the controller, its epoch and high watermark, each voter's epoch, log end, lag, and how long ago the controller last had a fetch from it and saw it caught up (kafka-metadata-quorum describe)",
		Flags: clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				md, err := adm.BrokerMetadata(ctx)
				if err != nil {
					return fmt.Errorf("cli: metadata: %w", err)
				}
				if md.Controller < 0 {
					return fmt.Errorf("cli: no acting controller (an election is under way, or no majority is up)")
				}
				q, err := describeQuorum(ctx, cl, md)
				if err != nil {
					return err
				}
				return printQuorum(env.Stdout, format, q)
			})
		},
	}
}

type quorumInfo struct {
	Controller    int32        `json:"controller"`
	Epoch         int32        `json:"epoch"`
	HighWatermark int64        `json:"high_watermark"`
	Voters        []voterState `json:"voters"`
}

type voterState struct {
	NodeID int32 `json:"node_id"`
	// Epoch is the voter's own epoch (-1 when it did not answer).
	Epoch     int32 `json:"epoch"`
	LogEnd    int64 `json:"log_end"`
	Lag       int64 `json:"lag"`
	Reachable bool  `json:"reachable"`
	// LastFetchAgeMs and LastCaughtUpAgeMs are how long before its answer
	// the controller last had a fetch from this voter and last saw it
	// caught up with its log end; -1 for the controller itself and for
	// what it has not seen in its epoch.
	LastFetchAgeMs    int64 `json:"last_fetch_age_ms"`
	LastCaughtUpAgeMs int64 `json:"last_caught_up_age_ms"`
}

// quorumRequest asks the node it is sent to for its own view (a node
// that is not the controller would otherwise forward it there).
func quorumRequest() *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.UnknownTags.Set(kafka.QuorumLocalViewTag, []byte{})
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func quorumPartition(ctx context.Context, b *kgo.Broker) (*kmsg.DescribeQuorumResponseTopicPartition, error) {
	resp, err := b.Request(ctx, quorumRequest())
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, err
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum answer without the metadata partition")
	}
	return &r.Topics[0].Partitions[0], nil
}

// describeQuorum asks the controller for the quorum, then every other
// live broker for its own epoch and log end.
func describeQuorum(ctx context.Context, cl *kgo.Client, md kadm.Metadata) (quorumInfo, error) {
	lp, err := quorumPartition(ctx, cl.Broker(int(md.Controller)))
	if err == nil {
		err = kerr.ErrorForCode(lp.ErrorCode)
	}
	if err != nil {
		return quorumInfo{}, fmt.Errorf("cli: describe quorum at controller %d: %w", md.Controller, err)
	}
	q := quorumInfo{Controller: lp.LeaderID, Epoch: lp.LeaderEpoch, HighWatermark: lp.HighWatermark}
	// The controller stamps itself with its "now": ages are taken against
	// it, so this machine's clock does not enter them.
	var leaderEnd, leaderNow int64 = 0, -1
	for _, v := range lp.CurrentVoters {
		if v.ReplicaID == lp.LeaderID {
			leaderEnd, leaderNow = v.LogEndOffset, v.LastFetchTimestamp
		}
	}
	age := func(ts int64) int64 {
		if ts < 0 || leaderNow < 0 {
			return -1
		}
		return max(0, leaderNow-ts)
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	for _, v := range lp.CurrentVoters {
		vs := voterState{NodeID: v.ReplicaID, Epoch: -1, LogEnd: v.LogEndOffset, LastFetchAgeMs: -1, LastCaughtUpAgeMs: -1}
		if v.ReplicaID != lp.LeaderID {
			vs.LastFetchAgeMs, vs.LastCaughtUpAgeMs = age(v.LastFetchTimestamp), age(v.LastCaughtUpTimestamp)
		}
		switch {
		case v.ReplicaID == lp.LeaderID:
			vs.Epoch, vs.Reachable = lp.LeaderEpoch, true
		case live[v.ReplicaID]:
			if p, err := quorumPartition(ctx, cl.Broker(int(v.ReplicaID))); err == nil {
				vs.Epoch, vs.Reachable = p.LeaderEpoch, true
				for _, own := range p.CurrentVoters {
					if own.ReplicaID == v.ReplicaID {
						vs.LogEnd = own.LogEndOffset
					}
				}
			}
		}
		vs.Lag = -1
		if vs.LogEnd >= 0 {
			vs.Lag = max(0, leaderEnd-vs.LogEnd)
		}
		q.Voters = append(q.Voters, vs)
	}
	return q, nil
}

func printQuorum(w io.Writer, format outputFormat, q quorumInfo) error {
	if format == formatJSON {
		return writeJSON(w, q)
	}
	fmt.Fprintf(w, "CONTROLLER  %d\nEPOCH       %d\nHIGH WATERMARK  %d\n\n", q.Controller, q.Epoch, q.HighWatermark)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VOTER\tEPOCH\tLOG END\tLAG\tLAST FETCH\tLAST CAUGHT UP\tSTATUS")
	for _, v := range q.Voters {
		id := strconv.Itoa(int(v.NodeID))
		if v.NodeID == q.Controller {
			id += "*"
		}
		epoch, end, lag, status := strconv.Itoa(int(v.Epoch)), strconv.FormatInt(v.LogEnd, 10), strconv.FormatInt(v.Lag, 10), "up"
		if !v.Reachable {
			epoch, status = "-", "unreachable"
		}
		if v.LogEnd < 0 {
			end, lag = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, epoch, end, lag, ageText(v.LastFetchAgeMs), ageText(v.LastCaughtUpAgeMs), status)
	}
	return tw.Flush()
}

// ageText is an age in milliseconds as "120ms ago", "-" when unknown.
func ageText(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).String() + " ago"
}
