package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
)

// clusterCertsCommand is `wren cluster certs`: the private CA and the
// voters' certificates of mutual TLS between the peers (peer/certs.go
// writes them; peer/tls.go says what a certificate must name).
func clusterCertsCommand(env Env) *ucli.Command {
	dirFlag := &ucli.StringFlag{Name: "dir", Usage: "directory of the certificates (default: certs beside the config file)"}
	daysFlag := &ucli.IntFlag{Name: "days", Value: int(peer.DefaultLeafValidity / (24 * time.Hour)), Usage: "validity of the node certificates, in days"}
	caDaysFlag := &ucli.IntFlag{Name: "ca-days", Value: int(peer.DefaultCAValidity / (24 * time.Hour)), Usage: "validity of a new CA, in days"}
	return &ucli.Command{
		Name:  "certs",
		Usage: "make and rotate the certificates of mutual TLS between the nodes (the CONTROLLER listener)",
		Subcommands: []*ucli.Command{
			{
				Name:  "init",
				Usage: "write a private CA and one certificate per voter of the config file, and print the config lines that turn mutual TLS on",
				Description: "Reads controller.quorum.voters from the config file and writes into --dir:\n" +
					"  ca.pem       the CA certificate: every node's trust store\n" +
					"  ca-key.pem   the CA's private key (0600): keep it with the operator, on no node\n" +
					"  node-N.pem   node N's certificate and key (0600), naming wren://node/N and the voter's host\n" +
					"Keys are ECDSA P-256. Copy ca.pem and node-N.pem to node N at the paths printed, add the printed lines\n" +
					"to the config file, and restart the nodes. Existing files are never replaced without --force.",
				Flags: []ucli.Flag{configFileFlag(), dirFlag, daysFlag, caDaysFlag,
					&ucli.BoolFlag{Name: "force", Usage: "replace the files of an earlier init (a new CA: every node needs the new files)"}},
				Action: func(c *ucli.Context) error {
					o, cfg, err := certsOptions(c, env)
					if err != nil {
						return err
					}
					o.Force = c.Bool("force")
					if err := peer.InitCerts(o); err != nil {
						return err
					}
					return printCertsConfig(env.Stdout, cfg, o.Dir)
				},
			},
			{
				Name:  "rotate",
				Usage: "issue new node certificates (and with --new-ca a new CA), to replace on the nodes one at a time with no downtime",
				Description: "Nodes reload their certificate and trust store within 5 s of the files changing, with no restart and no\n" +
					"connection dropped; new connections use the new files. Replace a file by writing it beside the old one\n" +
					"and renaming it over (cp node-2.pem /etc/wren/.node-2.pem.new && mv ...), so no node reads half of it.\n\n" +
					"New node certificates, same CA (before they expire):\n" +
					"  1. wren cluster certs rotate -c FILE\n" +
					"  2. copy node-N.pem to node N, one node at a time; wait for 'TLS certificate reloaded' in its log.\n\n" +
					"A new CA:\n" +
					"  1. wren cluster certs rotate -c FILE --new-ca: ca.pem then holds the new CA and the old one.\n" +
					"  2. copy ca.pem to every node and wait for each to reload it: every node trusts both CAs.\n" +
					"  3. copy node-N.pem to node N, one node at a time, waiting for each reload.\n" +
					"  4. wren cluster certs rotate -c FILE --drop-old-ca, and copy ca.pem to every node again.\n" +
					"--node limits the new certificates to some nodes.",
				Flags: []ucli.Flag{configFileFlag(), dirFlag, daysFlag, caDaysFlag,
					&ucli.BoolFlag{Name: "new-ca", Usage: "make a new CA first; ca.pem trusts it and the old one until --drop-old-ca"},
					&ucli.BoolFlag{Name: "drop-old-ca", Usage: "end a CA rotation: ca.pem keeps only the current CA (no certificate is issued)"},
					&ucli.IntSliceFlag{Name: "node", Usage: "issue certificates for this node id only (repeatable)"}},
				Action: func(c *ucli.Context) error {
					o, _, err := certsOptions(c, env)
					if err != nil {
						return err
					}
					if c.Bool("drop-old-ca") {
						if c.Bool("new-ca") || len(c.IntSlice("node")) > 0 {
							return fmt.Errorf("%w: --drop-old-ca issues nothing: it goes without --new-ca and --node", ErrUsage)
						}
						if err := peer.DropOldCAs(o); err != nil {
							return err
						}
						fmt.Fprintf(env.Stdout, "Copy %s to every node; they reload it within 5 s and trust the old CA no more.\n", filepath.Join(o.Dir, peer.CAFile))
						return nil
					}
					for _, id := range c.IntSlice("node") {
						o.Nodes = append(o.Nodes, election.NodeID(id))
					}
					if err := peer.RotateCerts(o, c.Bool("new-ca")); err != nil {
						return err
					}
					ids := o.Nodes
					if len(ids) == 0 {
						ids = slices.Sorted(func(yield func(election.NodeID) bool) {
							for id := range o.Voters {
								if !yield(id) {
									return
								}
							}
						})
					}
					step := 1
					if c.Bool("new-ca") {
						fmt.Fprintf(env.Stdout, "%d. Copy %s to every node and wait for each to log 'TLS certificate reloaded'.\n", step, filepath.Join(o.Dir, peer.CAFile))
						step++
					}
					fmt.Fprintf(env.Stdout, "%d. One node at a time, copy its certificate and wait for the reload:\n", step)
					for _, id := range ids {
						fmt.Fprintf(env.Stdout, "   node %d: %s\n", id, filepath.Join(o.Dir, peer.NodeCertFile(id)))
					}
					if c.Bool("new-ca") {
						fmt.Fprintf(env.Stdout, "%d. Then: wren cluster certs rotate --drop-old-ca, and copy %s to every node.\n", step+1, filepath.Join(o.Dir, peer.CAFile))
					}
					return nil
				},
			},
		},
	}
}

// certsOptions reads the config file's voters and the flags shared by
// init and rotate.
func certsOptions(c *ucli.Context, env Env) (peer.CertsOptions, *config.Config, error) {
	path, err := configPath(c, true)
	if err != nil {
		return peer.CertsOptions{}, nil, err
	}
	cfg, err := config.LoadWith(path, config.Options{NodeID: config.NoNode})
	if err != nil {
		return peer.CertsOptions{}, nil, err
	}
	if c.Int("days") <= 0 || c.Int("ca-days") <= 0 {
		return peer.CertsOptions{}, nil, fmt.Errorf("%w: --days and --ca-days must be positive", ErrUsage)
	}
	dir := c.String("dir")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(path), "certs")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return peer.CertsOptions{}, nil, err
	}
	o := peer.CertsOptions{Dir: dir, Voters: map[election.NodeID]string{},
		LeafValidity: time.Duration(c.Int("days")) * 24 * time.Hour,
		CAValidity:   time.Duration(c.Int("ca-days")) * 24 * time.Hour,
		Wrote: func(path, what string) {
			fmt.Fprintf(env.Stderr, "wrote %s: %s\n", path, what)
		}}
	for _, v := range cfg.Voters {
		o.Voters[election.NodeID(v.ID)] = v.Addr()
	}
	return o, cfg, nil
}

// printCertsConfig prints the lines that put the CONTROLLER listener on
// mutual TLS with the certificates in dir.
func printCertsConfig(w io.Writer, cfg *config.Config, dir string) error {
	name := "CONTROLLER"
	if len(cfg.ControllerListenerNames) > 0 {
		name = strings.ToUpper(cfg.ControllerListenerNames[0])
	}
	m, err := config.ParseProtocolMap(cfg.ListenerSecurityProtocolMap)
	if err != nil {
		return err
	}
	m[name] = config.ProtocolSSL
	// Every client listener keeps the protocol it has now.
	for _, l := range cfg.Listeners {
		if _, ok := m[strings.ToUpper(l.Name)]; !ok {
			m[strings.ToUpper(l.Name)] = cfg.ListenerProtocol(l.Name)
		}
	}
	var pairs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		pairs = append(pairs, k+":"+m[k])
	}
	fmt.Fprintf(w, "# Mutual TLS between the nodes: merge these lines into the config file (every node's copy).\n")
	fmt.Fprintf(w, "# Copy %s and node-N.pem to node N at these paths; %s stays off the nodes.\n", peer.CAFile, peer.CAKeyFile)
	fmt.Fprintf(w, "[broker]\nlistener.security.protocol.map = %q\n\n", strings.Join(pairs, ","))
	fmt.Fprintf(w, "[security]\nlistener.name.%s.ssl.truststore.location = %q\n", strings.ToLower(name), filepath.Join(dir, peer.CAFile))
	if _, perNode := cfg.Position("node.id"); perNode {
		// A file of one node (node.id set): [node.N.*] tables apply only
		// in a file shared by the cluster.
		fmt.Fprintf(w, "# This file sets node.id: in each node's own file, under [security], its certificate:\n")
		for _, v := range cfg.Voters {
			fmt.Fprintf(w, "#   node %d: listener.name.%s.ssl.keystore.location = %q\n", v.ID, strings.ToLower(name), filepath.Join(dir, peer.NodeCertFile(election.NodeID(v.ID))))
		}
		return nil
	}
	fmt.Fprintf(w, "# Each node's certificate; an SSL client listener keeps its own with listener.name.NAME.ssl.keystore.location.\n")
	for _, v := range cfg.Voters {
		fmt.Fprintf(w, "\n[node.%d.security]\nssl.keystore.location = %q\n", v.ID, filepath.Join(dir, peer.NodeCertFile(election.NodeID(v.ID))))
	}
	return nil
}
