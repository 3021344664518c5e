package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

func clusterCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster",
		Subcommands: []*ucli.Command{
			clusterQuorumCommand(env),
			{
				Name:  "info",
				Usage: "print the cluster id, the controller and the brokers (rpk cluster info)",
				Flags: clientFlags(timeoutFlag()),
				Action: func(c *ucli.Context) error {
					format, err := argsFormat(c, 0, 0, "no arguments")
					if err != nil {
						return err
					}
					return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
						md, err := adm.BrokerMetadata(ctx)
						if err != nil {
							return fmt.Errorf("cli: metadata: %w", err)
						}
						return printClusterInfo(env.Stdout, format, md)
					})
				},
			},
			clusterHealthCommand(env),
			clusterCertsCommand(env),
		},
	}
}

type clusterInfo struct {
	ClusterID  string       `json:"cluster_id"`
	Controller int32        `json:"controller"`
	Brokers    []brokerInfo `json:"brokers"`
}

type brokerInfo struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack"`
}

// printClusterInfo prints rpk cluster info's layout: CLUSTER, then
// BROKERS with the controller's id marked '*'.
func printClusterInfo(w io.Writer, format outputFormat, md kadm.Metadata) error {
	info := clusterInfo{ClusterID: md.Cluster, Controller: md.Controller, Brokers: []brokerInfo{}}
	for _, b := range md.Brokers {
		info.Brokers = append(info.Brokers, brokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	if format == formatJSON {
		return writeJSON(w, info)
	}
	fmt.Fprintf(w, "CLUSTER\n=======\n%s\n\nBROKERS\n=======\n", info.ClusterID)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST\tPORT\tRACK")
	for _, b := range info.Brokers {
		id := strconv.Itoa(int(b.NodeID))
		if b.NodeID == info.Controller {
			id += "*"
		}
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", id, b.Host, b.Port, rack)
	}
	return tw.Flush()
}
